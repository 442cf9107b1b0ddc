"""Which activations gain most from 16 bits: per tensor, the output SQNR (and, for a
classifier, the agreement on the inputs FP32 decides) with that tensor read at 16 bits.

`mdla_quant.a16` runs an op 16x8 where its output is int16 and requantizes at each int8/int16
boundary, so an int16 tensor is read at 16 bits only by ops whose outputs are int16 too: the
candidate is the tensor with its readers' outputs (`unit`). Measured by simulated quantization
(`simulate_a16`): the float interpreter runs the float graph `qgraph` was quantized from with
`qgraph`'s int8 weights and a16's boundary QUANTIZEs, every activation rounded to its int8
grid, the unit's tensors to the 16x8 grid of the same range instead (symmetric, zero point 0,
scale max(|lo|, |hi|) / 32767), the way AIMET's per-layer mixed-precision sensitivity is
measured. This is not `run_int8`: the integer kernels also round
their requantization multipliers and some intermediates, so the dB are an estimate of what the
16x8 kernels give (`tests/quant/test_sensitivity.py` checks that the ranking agrees with them
on a small graph). Use held-out data (not the calibration set): a tensor whose calibrated range
clips what the model sees gains there, and only there.

    gain(t) = SQNR(outputs | unit(t) int16) - SQNR(outputs | all int8)
    SQNR    = 10 log10(sum over inputs and outputs of y^2 / sum (y_sim - y)^2), y = FP32's
    agreement = share of decided inputs (FP32's top-1 probability leads the runner-up's by
                at least DECIDED) whose simulated top-1 is FP32's; first output, when it is a
                (1, classes) vector
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mdla_ir import Graph, evaluate, run_float
from mdla_ir.interp import to_model_layout
from mdla_quant.a16 import requantize_boundaries
from mdla_quant.errors import QuantError
from mdla_quant.simulate import Grid, activation_grids, int16_grid, on_grid, with_int8_weights

Array = np.ndarray[Any, Any]
INT8_MAX = 127
DECIDED = 0.05  # bench/accuracy.py's: FP32's top-1 probability minus the runner-up's
Progress = Callable[[int, int, str], None]  # (done, total, tensor)


@dataclass(frozen=True, slots=True)
class Gain:
    """One tensor read at 16 bits: the outputs' SQNR, its gain over all-int8 (dB), and the
    decided-input agreement (None for a graph that is not a classifier)."""

    tensor: str
    sqnr_db: float
    gain_db: float
    agreement: float | None
    tensors: tuple[str, ...] = ()  # what was int16: `tensor` and the readers' outputs (`unit`)


@dataclass(frozen=True, slots=True)
class Sensitivity:
    """All-int8's SQNR and agreement, and each candidate's `Gain`, largest gain first."""

    sqnr_db: float
    agreement: float | None
    gains: tuple[Gain, ...]


def output_sqnr(ref: list[list[Array]], test: list[list[Array]]) -> float:
    signal = sum(float((r.astype(np.float64) ** 2).sum()) for rs in ref for r in rs)
    noise = sum(
        float(((t.astype(np.float64) - r) ** 2).sum())
        for rs, ts in zip(ref, test, strict=True)
        for r, t in zip(rs, ts, strict=True)
    )
    return float("inf") if noise == 0 else float(10 * np.log10(max(signal, 1e-30) / noise))


def _probabilities(logits: Array) -> Array:
    z = logits.astype(np.float64).ravel()
    p = np.exp(z - z.max())
    out: Array = p / p.sum()
    return out


def _decided(ref: list[list[Array]]) -> Array | None:
    """Which inputs FP32 decides, or None when the first output is not a class vector."""
    first = ref[0][0]
    if first.ndim != 2 or first.shape[0] != 1 or first.shape[1] < 2:
        return None
    leads = []
    for outs in ref:
        top = np.sort(_probabilities(outs[0]))[::-1]
        leads.append(top[0] - top[1])
    return np.asarray(leads) >= DECIDED


def _agreement(ref: list[list[Array]], test: list[list[Array]], decided: Array | None) -> float:
    assert decided is not None  # only called for classifiers
    same = [int(np.argmax(r[0]) == np.argmax(t[0])) for r, t in zip(ref, test, strict=True)]
    picked = np.asarray(same)[decided]
    return float(picked.mean()) if picked.size else 1.0


def candidates(graph: Graph, qgraph: Graph) -> list[str]:
    """The op outputs `qgraph` holds in int8, graph outputs among them (a manifest's output
    may be int16), in graph order; graph inputs stay int8 (the host quantizes them)."""
    grids = activation_grids(graph, qgraph)
    return [n for n in grids if qgraph.tensors[n].dtype == "int8" and n not in graph.inputs]


def unit(graph: Graph, name: str, allowed: Collection[str]) -> tuple[str, ...]:
    """`name` with the outputs of the ops reading it that may be int16 (`allowed`): an op runs
    16x8 where its output is int16, and only such an op reads `name` at 16 bits (`a16`)."""
    outs = [op.outputs[0] for op in graph.ops if name in op.inputs and op.outputs[0] in allowed]
    return (name, *dict.fromkeys(o for o in outs if o != name))


def simulate_a16(
    rounded: Graph,
    qgraph: Graph,
    batch: Sequence[Sequence[Any]],
    names: Collection[str],
    wide_grids: Mapping[str, Grid] | None = None,
) -> list[list[Array]]:
    """`simulate` (weights already rounded: `with_int8_weights`) of each input list of `batch`
    with `names` int16 as `mdla_quant.a16` builds them: a QUANTIZE at each int8/int16 boundary
    (`requantize_boundaries`), the int16 tensors and their int16 copies on their 16x8 grid
    (`wide_grids`' when it has the tensor, else that of the tensor's int8 range), the int8
    copies on its int8 grid. The boundaries and grids are built once for the whole batch.

    `quantize` gives an int16 tensor its observed range, unclipped, whatever the method: with
    a clipping method (mse, percentile) the int8 range is narrower, and `wide_grids` from a
    graph quantized with the tensors int16 (`int16_grids`) is what the 16x8 kernels read."""
    run, wide = requantize_boundaries(rounded, tuple(names))
    grids = activation_grids(rounded, qgraph)
    wider = wide_grids or {}

    def to_grid(name: str, value: Array) -> Array:
        base = name.rsplit("/", 1)[0] if name.endswith(("/a8", "/a16")) else name
        if base not in grids:
            return value
        grid = grids[base]
        if name in wide and grid[3] == INT8_MAX:
            grid = wider.get(base) or int16_grid(grid[0], grid[1])
        return on_grid(value, grid)

    outs = []
    for inputs in batch:
        values = evaluate(run, list(inputs), replace=to_grid)
        outs.append([to_model_layout(run, n, values[n]) for n in run.outputs])
    return outs


def int16_grids(graph: Graph, qgraph: Graph) -> dict[str, Grid]:
    """The 16x8 grids of the activations `qgraph` (quantized from `graph` with some tensors
    int16) holds in int16."""
    return {n: g for n, g in activation_grids(graph, qgraph).items() if g[3] > INT8_MAX}


def sensitivity(
    graph: Graph,
    qgraph: Graph,
    held_out: Sequence[Sequence[Any]],
    tensors: Collection[str] | None = None,
    progress: Progress | None = None,
    allowed: Collection[str] | None = None,
) -> Sensitivity:
    """Each of `tensors` (default: `candidates`) read at 16 bits, i.e. int16 with the outputs
    of its readers that `allowed` (default: `candidates`) lets be int16 (`unit`), measured on
    `held_out` (input lists) by simulation; see the module docstring. `graph` is the float
    graph `qgraph` was quantized from (`float_rewrites(graph, calibration, config)`)."""
    if not held_out:
        raise QuantError(
            f"sensitivity of `{graph.name}`: no held-out inputs (pass input lists the "
            "calibration did not see)"
        )
    known = candidates(graph, qgraph)
    names = known if tensors is None else list(tensors)
    for name in names:
        if name not in known:
            raise QuantError(
                f"sensitivity of `{graph.name}`: `{name}` is not an int8 activation of "
                f"`{qgraph.name}` that can be int16: name op outputs held in int8, not the "
                "graph's inputs"
            )
    ok = set(known if allowed is None else allowed)
    ref = [run_float(graph, list(x)) for x in held_out]
    decided = _decided(ref)
    rounded = with_int8_weights(graph, qgraph)  # once, not per run

    def measure(int16: Collection[str]) -> tuple[float, float | None]:
        test = simulate_a16(rounded, qgraph, held_out, int16)
        agree = _agreement(ref, test, decided) if decided is not None else None
        return output_sqnr(ref, test), agree

    base, base_agree = measure(())
    gains = []
    for k, name in enumerate(names):
        group = unit(graph, name, ok)
        db, agree = measure(group)
        gains.append(Gain(name, db, db - base, agree, group))
        if progress is not None:
            progress(k + 1, len(names), name)
    gains.sort(key=lambda g: -g.gain_db)
    return Sensitivity(base, base_agree, tuple(gains))
