"""How well a compile agrees with FP32 on inputs it was not calibrated on, and what to try next.

    got = measure(compiled, held)          # INT8 (run_int8) against FP32 on `held`
    got.text()                             # "top-1 agreement 15/16 = 94% (95% CI 72–99%)"
    hint(got, compiled.config)             # "... below 99%: try --adaround 300 or --a16 auto"

`workbench compile` scores the inputs of a --calib folder (or the sample photos) that come
after the --count it calibrates on: they are natural held-out inputs, and scoring them costs
one FP32 and one INT8 run each, far less than calibration. A calibration setting judged on
its own calibration inputs reads well by construction (the ranges were fitted to them), so
those are never scored. Random inputs are not scored either: agreement on noise says nothing
about the photos the model will see.

The figures behind the hint (bench/README, efficientnet_lite0, 200 held-out crops): round to
nearest agrees on 94.5%; AdaRound (300 iterations) 98.0% and +6.9 dB of logits SQNR; int16
activations chosen by `--a16 auto` on top of it raise the logits SQNR further.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

import mdla_ir
import mdla_quant
from mdla_compile import Compiled
from mdla_compile.calibration import calibration_inputs
from mdla_compile.inputs import input_files
from mdla_ir.provenance import BOXES, KEYPOINTS
from workbench import images, validation
from workbench.agreement import KindScore, mean
from workbench.errors import USAGE, WorkbenchError

Array = np.ndarray
Z95 = 1.959963984540054  # the standard normal's 97.5% quantile: a two-sided 95% interval
AUTO = 16  # held-out inputs scored by default when the source has that many spare
GOOD = 0.99  # below this share of agreement, compile suggests the slower techniques


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval for k successes in n trials:
    (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), p = k/n; (0, 1) when n = 0."""
    if not 0 <= k <= n:
        raise ValueError(f"wilson: {k} successes in {n} trials")
    if n == 0:
        return (0.0, 1.0)
    p, z2 = k / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class Agreement:
    """Top-1 agreement with FP32 on held-out inputs: k of n, Wilson 95% interval."""

    same: int
    n: int

    @property
    def rate(self) -> float:
        return self.same / self.n if self.n else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.same, self.n)


def describe(
    kind: str,
    agreement: Agreement | None,
    pixel_agreement: float | None,
    kind_score: KindScore | None,
) -> str:
    """One output's agreement with FP32 in words, as its kind measures it."""
    if kind_score is not None:
        return kind_score.text()
    if agreement is not None:
        low, high = agreement.interval
        a = agreement
        return f"top-1 agreement {a.same}/{a.n} = {a.rate:.0%} (95% CI {low * 100:.0f}–{high:.0%})"
    if pixel_agreement is not None:
        return f"per-pixel argmax agreement {100 * pixel_agreement:.2f}%"
    return f"no agreement metric for a {kind} output (cosine and SQNR only)"


@dataclass(frozen=True)
class Measured:
    """A compile's first output against FP32 on held-out inputs, as its kind measures it:
    top-1 `agreement` for a classifier, `pixel_agreement` for a class map, `kind_score` for
    boxes, keypoints and raw tensors; `cosine` of the first output in every case."""

    kind: str
    count: int
    agreement: Agreement | None
    pixel_agreement: float | None
    kind_score: KindScore | None
    cosine: float

    def share(self) -> float | None:
        """The agreement as a share in [0, 1] (top-1 or per pixel); None for other kinds."""
        if self.agreement is not None:
            return self.agreement.rate
        return self.pixel_agreement

    def text(self) -> str:
        return describe(self.kind, self.agreement, self.pixel_agreement, self.kind_score)


def measure(compiled: Compiled, held: Sequence[list[Array]]) -> Measured:
    """`compiled`'s INT8 graph (`run_int8`, bit-exact with the device) against its FP32 graph
    on `held`, which must not include its calibration inputs."""
    kind = validation.graph_kinds(compiled)[0]
    decoder = validation.decoder_of(compiled) if kind == BOXES else None
    shares: list[float] = []
    details: list[float] = []
    out = validation.Agreement()
    for xs in held:
        fs = [np.asarray(o) for o in mdla_ir.run_float(compiled.source.graph, xs)]
        qs = [np.asarray(o) for o in mdla_quant.run_int8(compiled.qgraph, xs)]
        out.add(fs[0], qs[0])
        share, detail = validation.image_score(kind, fs, qs, decoder)
        shares += [share] if share is not None else []
        details += [detail] if detail is not None else []
    return Measured(
        kind,
        len(held),
        Agreement(round(sum(shares)), len(held)) if kind == validation.CLASSIFIER else None,
        float(np.mean(shares)) if kind == validation.CLASS_MAP and shares else None,
        kind_score(kind, shares, details, out),
        out.cosine,
    )


def kind_score(
    kind: str, found: list[float], details: list[float], out: validation.Agreement
) -> KindScore | None:
    """Boxes' F1 and IoU, keypoints' OKS and distance, a raw output's SQNR (else None)."""
    if kind == validation.TENSOR:
        return KindScore(kind, out.sqnr_db)
    if kind in (BOXES, KEYPOINTS):
        return KindScore(kind, mean(found), mean(details))
    return None


def spare(calib: str, count: int) -> int:
    """How many inputs `calib` holds after the first `count` (0 for random inputs)."""
    if calib == "random":
        return 0
    if calib == "samples":
        return max(0, len(images.SAMPLES) - count)
    return max(0, len(input_files(calib)) - count)


def check_wanted(calib: str, count: int, wanted: int | None) -> int:
    """How many inputs to score: `wanted`, or up to `AUTO` when None; asking for more than
    `calib` holds after `count` is a usage error naming how many there are (checked before
    any compile when `calib` is known; `auto` is known once the model is imported)."""
    available = spare(calib, count)
    if wanted is None:
        return min(AUTO, available)
    if wanted > available:
        raise WorkbenchError(
            f"--held-out {wanted}: `{calib}` has {available} inputs after the --count {count} "
            "that calibrate" + (" (random inputs are not scored)" if calib == "random" else ""),
            USAGE,
        )
    return wanted


def held_out_inputs(
    compiled: Compiled, calib: str, count: int, wanted: int | None
) -> Sequence[list[Array]]:
    """The `wanted` inputs of `calib` after the `count` the compile calibrated on (None:
    up to `AUTO` of them, none when there are none; 0: none)."""
    if calib == "auto":
        calib = "samples" if compiled.source.preprocess else "random"
    wanted = check_wanted(calib, count, wanted)
    if wanted <= 0:
        return []
    return calibration_inputs(calib, compiled.source, count + wanted)[count:]


def hint(measured: Measured, config: mdla_quant.QuantConfig) -> str | None:
    """What to try when the held-out agreement is below `GOOD`: the techniques not yet on,
    slowest last; None when it is good enough or no technique is left."""
    share = measured.share()
    if share is None or share >= GOOD:
        return None
    options = []
    if not config.adaround:
        options.append("--adaround 300 (minutes of compile)")
    if not config.a16:
        options.append("--a16 auto (int16 activations where they gain most; slower on device)")
    if not options:
        return None
    return (
        f"held-out agreement {100 * share:.1f}% is below {GOOD:.0%}: try "
        + " or ".join(options)
        + "; `workbench tune` compares settings on held-out inputs"
    )
