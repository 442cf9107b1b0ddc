"""A compiled configuration scored on the held-out inputs: the first output's agreement with
FP32 (top-1 for logits, `validation.image_score` for other kinds) over all inputs and over the
inputs FP32 decides, with Wilson intervals for a classifier; the first output's SQNR; the
emulator's median latency."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import mdla_compile
import mdla_runtime
from mdla_compile import inputs as ins
from mdla_compile.images import read_image
from mdla_ir.provenance import BOXES, LOGITS
from workbench import validation
from workbench.held_out import wilson
from workbench.sweep.bundle import Holdout
from workbench.sweep.reference import fp32_outputs
from workbench.sweep.stats import DECIDED, margin
from workbench.sweep.task import HOLDOUT_SEED, median

Array = np.ndarray[Any, Any]
Inputs = list[tuple[str, list[Array]]]


def held_out(compiled: mdla_compile.Compiled, holdout: Holdout, tmp: Path) -> Inputs:
    """The held-out inputs prepared as the model takes them (`validate`'s way)."""
    source = compiled.source
    prep = (lambda im: mdla_compile.prepare_image(source, im)) if source.takes_images else None
    keys, spec = list(source.graph.inputs), source.spec
    folder = tmp / "holdout"
    folder.mkdir(exist_ok=True)
    got: Inputs = []
    for name, data in holdout.files:
        (folder / name).write_bytes(data)
        got.append((name, ins.load_sample(folder / name, source.input_shapes, prep, spec, keys)))
    for name in holdout.samples:
        got.append((name, [mdla_compile.prepare_image(source, read_image(name))]))
    rng = np.random.default_rng(HOLDOUT_SEED)
    for i in range(holdout.random):
        xs = [rng.uniform(-1, 1, s).astype(np.float32) for s in source.input_shapes]
        got.append((f"random {i}", xs))
    return got


def score(
    compiled: mdla_compile.Compiled, manifest: mdla_runtime.Manifest, inputs: Inputs
) -> dict[str, Any]:
    """The measures of a row (`table.Row`'s fields) of `compiled` on `inputs`."""
    target = mdla_runtime.open_target("emu")
    kind = validation.graph_kinds(compiled)[0]
    decoder = validation.decoder_of(compiled) if kind == BOXES else None
    sqnr = validation.Agreement()
    shares: list[float] = []
    decided: list[float] = []
    latencies: list[float] = []
    references = fp32_outputs(compiled.source.graph, [xs for _name, xs in inputs])
    for (_name, xs), fp32 in zip(inputs, references, strict=True):
        run = target.run(manifest, xs)
        outs = [np.asarray(o) for o in run.outputs]
        latencies.append(run.latency_ms[0])
        sqnr.add(fp32[0], outs[0])
        share = validation.image_score(kind, fp32, outs, decoder)[0]
        if share is None:
            continue
        shares.append(share)
        if kind != LOGITS or margin(fp32[0]) >= DECIDED:
            decided.append(share)
    return {
        "kind": kind,
        **_rate("all", shares, kind),
        **_rate("decided", decided, kind),
        "sqnr_db": sqnr.sqnr_db,
        "latency_ms": median(latencies),
    }


def _rate(prefix: str, shares: list[float], kind: str) -> dict[str, Any]:
    """agree_<prefix>, <prefix>_k/_n and, for a classifier's 0/1 outcomes, the interval."""
    n = len(shares)
    k = round(sum(shares))
    mean = sum(shares) / n if n else None
    lo, hi = wilson(k, n) if kind == LOGITS and n else (None, None)
    return {
        f"agree_{prefix}": mean,
        f"{prefix}_k": k,
        f"{prefix}_n": n,
        f"{prefix}_lo": lo,
        f"{prefix}_hi": hi,
    }
