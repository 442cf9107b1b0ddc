"""bench/accuracy.py's int8 scoring on the C emulator: one row's held-out inputs through the
engine the manifests run on (mdla-engine on libneuron_emu.so), checked against `run_int8`.

The emulator computes what `mdla_quant.run_int8` computes, bit for bit, at a fraction of the
numpy reference's CPU (a row's 200 crops were most of its cost). Each row saves its int8 graph
as one manifest; the engine compiles it on the first input and stores the compiled network
(`--cache`), and every later input restores it. The first `check` inputs also run through
`run_int8`, and their dequantized outputs must match the emulator's byte for byte: a mismatch
stops the bench (`ScoreMismatchError`) rather than scoring a row on an engine that disagrees.
"""

from __future__ import annotations

import resource
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mdla_ir import Graph
from mdla_quant import run_int8
from mdla_runtime import load, open_target, save

Array = np.ndarray[Any, Any]
CHECKED = 4  # held-out inputs per row run through run_int8 as well, compared byte for byte


class ScoreMismatchError(RuntimeError):
    """The emulator's output for a held-out input differs from `run_int8`'s."""


@dataclass(frozen=True, slots=True)
class Scores:
    """Per input, the graph's outputs (dequantized float32, model layout), as `run_int8`
    returns them; `checked`: how many inputs were compared with `run_int8`; `cpu_s`: the CPU
    seconds of the scoring (this process and the engine processes, the check included)."""

    outputs: list[list[Array]]
    checked: int
    cpu_s: float


def cpu_s() -> float:
    """This process's CPU seconds plus its finished children's (the engine runs)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def emulator_scores(
    qgraph: Graph,
    inputs: Sequence[Array],
    check: int = CHECKED,
    target: Any = None,
    reference: Callable[[Graph, list[Array]], list[Array]] = run_int8,
) -> Scores:
    """`qgraph`'s outputs on each of `inputs` (one model input each) from the emulator
    (`target`, default `open_target("emu")`), the first `check` of them compared with
    `reference` (`run_int8`) byte for byte; a difference raises `ScoreMismatchError`."""
    emu = target if target is not None else open_target("emu")
    start = cpu_s()
    outputs: list[list[Array]] = []
    with tempfile.TemporaryDirectory(prefix="mdla-scores-") as tmp:
        manifest = load(save(qgraph, Path(tmp) / "row.mdla"))
        cache = Path(tmp) / "row.cache"
        for k, x in enumerate(inputs):
            got = list(emu.run(manifest, x, cache=cache).outputs)
            if k < check:
                _same(k, got, reference(qgraph, [x]))
            outputs.append(got)
    return Scores(outputs, min(check, len(inputs)), cpu_s() - start)


def _same(k: int, got: list[Array], want: list[Array]) -> None:
    """Raise `ScoreMismatchError` unless the outputs hold the same dtypes, shapes and bytes."""
    if len(got) != len(want):
        raise ScoreMismatchError(
            f"held-out input {k}: the emulator gave {len(got)} outputs, run_int8 {len(want)}"
        )
    for j, (a, b) in enumerate(zip(got, want, strict=True)):
        a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
        if a.dtype != b.dtype or a.shape != b.shape:
            raise ScoreMismatchError(
                f"held-out input {k}, output {j}: the emulator gave {a.dtype}{list(a.shape)}, "
                f"run_int8 {b.dtype}{list(b.shape)}"
            )
        if a.tobytes() != b.tobytes():
            differ = int(np.count_nonzero(a.view(np.uint8) != b.view(np.uint8)))
            raise ScoreMismatchError(
                f"held-out input {k}, output {j}: the emulator and run_int8 differ in {differ} "
                f"of {a.nbytes} bytes (largest difference {float(np.max(np.abs(a - b))):.4g}); "
                "the row would be scored on an engine that is not bit-exact"
            )
