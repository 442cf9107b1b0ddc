"""`quantize(graph, calibration, config)`: float NHWC graph in, int8 graph out.

1. Calibrate: stream every calibration sample through the float interpreter; a `Histogram` per
   activation (graph inputs and op outputs) sees each value once and keeps nothing else.
2. Ranges: the config's method turns each histogram into [lo, hi] (widened to contain 0);
   a graph output keeps its observed range [min, max] whatever the method: clipping the values
   the user reads (a logit's lead, a box offset) trades their error for inner tensors' resolution.
3. Constraints (from the target's op table): outputs of ops with `fixed_output` take those
   params; `keeps_input_scale` ties an op's output to its input, `shared_scale` ties all inputs
   and the output together; tied tensors form groups (union-find) whose range is the union.
   A selection conv (`mdla_ir.selection`: a 1×1 0/1 filter copying channels) keeps its
   input's params and gets weight scale 1: its requantization multiplier is exactly 1.
4. Activation params: scale = (hi - lo) / 255, zero point = round(-128 - lo / scale). A range
   narrower than 1e-6 is widened as TFLite's converter does, and a scale below what LiteRT
   loads (an ADD output multiplier >= 1, a SOFTMAX input multiplier <= 1) rises to that floor
   with its tie group (`floors.py`).
5. Weights: symmetric int8 in [-127, 127], per output channel where the target allows it
   (channel dim 0 for CONV_2D and TRANSPOSE_CONV_2D, 3 for DEPTHWISE_CONV_2D), else per tensor;
   bias int32 with scale in_scale * w_scale[c]; other constants per-tensor asymmetric int8,
   except those of the ops a CPU partition computes in float (LAYER_NORM, GELU): float32;
   each op of the table group (GELU, ELU, EXP, ...) gets its int8 table as a constant second
   input (`kernels/functions.py`).
6. Float regions of CPU partitions (a GRU, a FULLY_CONNECTED after it) stay float32, entered
   by a DEQUANTIZE (`float_region.py`).

Optional, by the config: cross-layer equalization of the float graph before step 1
(`equalize.py`, then high-bias absorption, `bias_absorption.py`), AdaRound of the int8
weights after step 5 (`adaround.py`; per block with `reconstruction="block"`,
`block_reconstruction.py`), then bias correction (`bias_correction.py`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from mdla_ir import Graph, Op, OpKind, QuantParams, Tensor, evaluate
from mdla_ir.attrs import PadAttrs
from mdla_ir.devices import DEFAULT_TARGET
from mdla_ir.interp.registry import Kernel
from mdla_ir.partitions import CPU_FLOAT, CPU_FLOAT32
from mdla_ir.provenance import Accumulator, Numerics, Rounding
from mdla_ir.selection import is_selection
from mdla_quant.a16 import (
    INT8_OPERANDS,
    check_a16,
    const16,
    fixed_output,
    int16_quant,
    is_wide,
    place_requantizations,
    requantize_boundaries,
)
from mdla_quant.adaround import LayerProgress, adaround
from mdla_quant.arith import round_half_away
from mdla_quant.bias_absorption import ChannelsMovedError
from mdla_quant.bias_correction import correct_biases
from mdla_quant.config import QuantConfig
from mdla_quant.errors import QuantError
from mdla_quant.fast_kernels import calibration_kernels
from mdla_quant.float_region import float_concats, with_float_regions
from mdla_quant.floors import expand_tiny_range, scale_floors
from mdla_quant.kernels.functions import with_tables
from mdla_quant.observers import ChannelMoments, Histogram, clip_range
from mdla_quant.rewrites import WEIGHTED, equalized
from mdla_quant.ties import Groups, check_fits
from mdla_quant.unshare import own_operands
from mdla_quant.weight_fit import fit_weights
from mdla_quant.weight_stats import shifts_biases, stats_of, watched, with_mean_biases
from mdla_target import load_target
from mdla_target.errors import TargetDataError
from mdla_target.target import Target

Array = np.ndarray[Any, Any]
Progress = Callable[[int, float], None]  # (samples seen, seconds elapsed)
# Ops only a CPU partition runs that move int8 values unchanged, or average them (the target's
# tables describe the NPU): their output takes the input's params, as the int8 kernel requires.
CPU_MOVES = frozenset(
    {
        OpKind.TRANSPOSE,
        OpKind.ADAPTIVE_AVG_POOL_2D,
        OpKind.ADAPTIVE_MAX_POOL_2D,
        OpKind.STRIDED_SLICE,
        OpKind.MAX_POOL_3D,
    }
)
# ARGMAX (CPU only) writes class indices: int8 at scale 1, zero point 0, so the dequantized
# value is the index itself (at most 128 classes: kernels/argmax.py).
INDEX_Q = QuantParams((1.0,), (0,))


def calibrate(
    graph: Graph,
    calibration: Iterable[Any],
    bins: int = 2048,
    progress: Progress | None = None,
    moments: dict[str, ChannelMoments] | None = None,
    also: Callable[[str, Array], None] | None = None,
    kernels: Mapping[OpKind, Kernel] | None = None,
) -> tuple[dict[str, Histogram], int]:
    """One histogram per activation, streamed over every sample of `calibration`; the
    `moments` given (by tensor name) see their tensor's values in the same pass, and `also`
    every value (high-bias absorption's minima: `bias_absorption.Minima`). The float graph
    runs with `kernels` (by op kind) over `fast_kernels.calibration_kernels()`."""
    hists: dict[str, Histogram] = {}
    moments = moments or {}
    padded = zero_pads(graph)  # a zero PAD's output: its input's bins plus the zeros'
    sources = set(padded.values())

    def observe(name: str, value: Array) -> None:
        hist = hists.get(name)
        if hist is None:
            hist = hists[name] = Histogram(bins, keep_last=name in sources)
        source = hists.get(padded[name]) if name in padded else None
        if source is None or not hist.update_padded(source, np.size(value)):
            hist.update(value)
        if name in moments:
            moments[name].update(value)
        if also is not None:
            also(name, value)

    start, n = time.perf_counter(), 0
    kernels = {**calibration_kernels(), **(kernels or {})}
    for sample in calibration:
        inputs = sample if isinstance(sample, list | tuple) else [sample]
        evaluate(graph, inputs, keep=(), observe=observe, kernels=kernels)
        n += 1
        if progress is not None:
            progress(n, time.perf_counter() - start)
    if n == 0:
        raise QuantError(
            f"calibration of `{graph.name}` got no samples: pass an iterable of "
            "input lists (e.g. preprocessed images)"
        )
    return hists, n


def zero_pads(graph: Graph) -> dict[str, str]:
    """Each PAD of zeros: its output's name -> its input's (an activation). The output holds
    the input's values and zeros, so calibration takes its histogram from the input's
    (`Histogram.update_padded`) rather than binning the input's values twice."""
    return {
        op.outputs[0]: op.inputs[0]
        for op in graph.ops
        if op.kind is OpKind.PAD
        and PadAttrs.of(op).value == 0.0
        and not graph.tensors[op.inputs[0]].is_const
    }


def activation_params(lo: float, hi: float, min_scale: float = 0.0) -> QuantParams:
    """Asymmetric int8: the range [min(lo,0), max(hi,0)] onto [-128, 127], widened to 1e-6 when
    narrower (`floors.expand_tiny_range`), with a scale of at least `min_scale`."""
    lo, hi = expand_tiny_range(min(float(lo), 0.0), max(float(hi), 0.0))
    scale = float(np.float32((hi - lo) / 255.0)) if hi > lo else 1.0 / 255.0
    scale = max(scale, float(np.float32(min_scale)))
    zero_point = int(np.clip(round_half_away(-128.0 - lo / scale), -128, 127))
    return QuantParams((scale,), (zero_point,))


def _activation_quant(
    graph: Graph,
    hists: dict[str, Histogram],
    config: QuantConfig,
    target: Target,
    floats: Collection[str],
    wide: frozenset[str] = frozenset(),
) -> dict[str, QuantParams]:
    """Every activation's params; `floats`: the concatenations `float_concats` leaves in
    float32, whose inputs keep their own."""
    groups, fixed, held = _ties(graph, config, target, floats, wide)
    names = [*graph.inputs, *(o for op in graph.ops for o in op.outputs)]
    outputs = set(graph.outputs)
    observed = (  # never clip what the user reads
        (n, clip_range(hists[n], "minmax" if n in outputs else config.method, config.percentile))
        for n in names
    )
    ranges: dict[str, tuple[float, float]] = {}
    for name, (lo, hi) in [*observed, *held.items()]:
        root = groups.find(name)
        old = ranges.get(root, (lo, hi))
        ranges[root] = (min(old[0], lo), max(old[1], hi))
    params = {n: activation_params(*ranges[groups.find(n)]) for n in names}
    params = _raise_to_floors(graph, params, names, groups, ranges)
    params.update(int16_quant(names, wide, hists, groups.find))  # min/max: they hold `held`
    for name, q in fixed.items():
        for other in (n for n in names if groups.find(n) == groups.find(name)):
            check_fits(graph, other, name, hists[other], q)
            params[other] = q
    return params


def _ties(
    graph: Graph, config: QuantConfig, target: Target, floats: Collection[str], wide: frozenset[str]
) -> tuple[Groups, dict[str, QuantParams], dict[str, tuple[float, float]]]:
    """The activations' tie groups (step 3 of the module docstring), the params fixed by the
    op, and the values of the constants a shared-scale op quantizes at its output's params
    (`_const`): their [min, max] by that output, which their group's range must hold."""
    groups, fixed = Groups(), {}
    held: dict[str, tuple[float, float]] = {}
    for op in graph.ops:
        spec = target.op(config.device, op.kind)
        if op.name in floats:  # each input keeps its own params: no sharing
            continue
        acts = [n for n in op.inputs if not graph.tensors[n].is_const]
        moves = spec.keeps_input_scale or op.kind in CPU_MOVES or is_selection(graph, op)
        if moves and acts:
            groups.union([acts[0], op.outputs[0]])  # a selection conv copies: multiplier 1
        if spec.shared_scale:
            groups.union([*acts, op.outputs[0]])
            for data in (graph.const(n) for n in op.inputs if graph.tensors[n].is_const):
                lo, hi = held.get(op.outputs[0], (0.0, 0.0))
                held[op.outputs[0]] = (min(lo, float(data.min())), max(hi, float(data.max())))
        if spec.fixed_output is not None:
            scale, zp = fixed_output(op, spec.fixed_output, wide)
            fixed[op.outputs[0]] = QuantParams((scale,), (zp,))
        if op.kind is OpKind.ARGMAX:
            fixed[op.outputs[0]] = INDEX_Q
    return groups, fixed, held


def _raise_to_floors(
    graph: Graph,
    params: dict[str, QuantParams],
    names: Sequence[str],
    groups: Groups,
    ranges: dict[str, tuple[float, float]],
) -> dict[str, QuantParams]:
    """Scales below their LiteRT floor (`floors.scale_floors`) rise to it, with their tie group;
    repeated until none is below, since a raised ADD output can be the next ADD's input. Scales
    only grow, and each round settles at least one more op of the chain."""

    def scale(name: str) -> float:
        if name in params:
            return params[name].scale[0]
        data = graph.const(name)  # a constant operand: quantized as _const will
        return activation_params(float(data.min(initial=0.0)), float(data.max(initial=0.0))).scale[
            0
        ]

    for _ in range(len(graph.ops) + 1):
        low: dict[str, float] = {}
        for name, floor in scale_floors(graph, scale).items():
            if name in params and params[name].scale[0] < floor:
                root = groups.find(name)
                low[root] = max(low.get(root, 0.0), floor)
        if not low:
            return params
        for name in names:
            root = groups.find(name)
            if root in low:
                params[name] = activation_params(*ranges[root], min_scale=low[root])
    raise QuantError(f"graph `{graph.name}`: the scale floors of ADD/SOFTMAX did not settle")


BIAS_LIMIT = 2.0**30  # |int32 bias| bound: leaves headroom for the accumulation beside it


def quantize_bias(b: Array, in_scale: float, w_q: QuantParams) -> tuple[Array, QuantParams]:
    scale = np.float64(np.float32(in_scale)) * np.asarray(w_q.scale, np.float32).astype(np.float64)
    q = np.clip(round_half_away(b.astype(np.float64) / scale), -(2**31), 2**31 - 1)
    return q.astype(np.int32), QuantParams(tuple(float(s) for s in scale), (0,) * scale.size, 0)


def _calibrated(
    graph: Graph,
    calibration: Iterable[Any],
    config: QuantConfig,
    target: Target,
    progress: Progress | None,
    kernels: Mapping[OpKind, Kernel] | None = None,
) -> tuple[Graph, frozenset[str], dict[str, Histogram], int, dict[str, ChannelMoments]]:
    """`float_rewrites`' graph with its requantizations placed, its wide tensors, calibration
    and watched moments. High-bias absorption's minima are observed in the calibration pass:
    when no channel moves, that pass calibrated the very graph that is rounded; when some do,
    it stops once the minima are complete and the absorbed graph is calibrated instead."""
    graph, pending = equalized(graph, config)
    while True:
        placed, wide = requantize_boundaries(graph, config.a16)
        placed = place_requantizations(placed, target, config.device)
        moments = watched(placed, config)
        observe = None if pending is None else pending.until_moved()
        try:
            hists, samples = calibrate(
                placed, calibration, config.bins, progress, moments, observe, kernels
            )
        except ChannelsMovedError:  # the absorption replaces the graph this pass calibrated
            assert pending is not None  # only its observer raises
            graph, pending = pending.apply(calibration)[0], None
            continue
        if pending is None or (absorbed := pending.apply(calibration)[0]) is graph:
            return placed, wide, hists, samples, moments
        graph, pending = absorbed, None


def _target_name(spec: str) -> str | None:
    """The name a target spec (a shipped name or a .toml path) records, None if it does not load."""
    try:
        return load_target(spec).name
    except TargetDataError:
        return None


def for_graph(graph: Graph, config: QuantConfig) -> QuantConfig:
    """`config` for the target `graph` was legalized for (its provenance's `target`): the
    default target gives way to it; a config naming another target is refused."""
    legal = graph.provenance.target
    if not legal or legal == config.target:
        return config
    if config.target != DEFAULT_TARGET:
        if _target_name(config.target) == legal:  # a target file, recorded by its name
            return config
        raise QuantError(
            f"graph `{graph.name}` was legalized for target `{legal}`, QuantConfig names "
            f"`{config.target}`: quantize for the graph's target (QuantConfig(target={legal!r}))"
        )
    return dataclasses.replace(config, target=legal)


def quantize(
    graph: Graph,
    calibration: Iterable[Any],
    config: QuantConfig | None = None,
    progress: Progress | None = None,
    layer_progress: LayerProgress | None = None,
    kernels: Mapping[OpKind, Kernel] | None = None,
) -> Graph:
    """The int8 graph of the (legalized, NHWC) float `graph`; see the module docstring.

    `progress(samples, seconds)` follows calibration, `layer_progress(i, n, op)` AdaRound;
    `kernels` (by op kind) are float kernels calibration runs instead of the interpreter's (a
    faster convolution: the observed ranges move by what its sums' rounding does)."""
    config = config or QuantConfig()
    if graph.layout != "NHWC":
        raise QuantError(
            f"graph `{graph.name}` is {graph.layout}: quantize the legalized (NHWC) "
            "graph, so that what is validated is what is emitted"
        )
    rereads = config.bias_correction or config.adaround or config.equalize
    if rereads and iter(calibration) is calibration:
        raise QuantError(
            "bias correction, AdaRound and equalization read the calibration set a second "
            "time: pass a list or another re-iterable, not a generator"
        )
    config = for_graph(graph, config)
    target = load_target(config.target)
    check_a16(graph, config.a16, target, config.device)
    graph, wide, hists, samples, moments = _calibrated(
        graph, calibration, config, target, progress, kernels
    )
    floats = float_concats(graph)  # on the CPU in float32: each input keeps its own params

    def shares(op: Op) -> bool:  # all its operands at its output's params, constants too
        return op.name not in floats and target.op(config.device, op.kind).shared_scale

    graph = own_operands(graph, shares)
    acts = _activation_quant(graph, hists, config, target, floats, wide)
    tensors: dict[str, Tensor] = {
        n: Tensor(n, t.shape, "int16" if n in wide else "int8", quant=acts[n])
        for n, t in graph.tensors.items()
        if n in acts
    }
    for op in graph.ops:
        for i, name in enumerate(op.inputs):
            t = graph.tensors[name]
            if t.data is None or name in tensors:
                continue
            if shares(op):  # whose range holds the constant's values (`_ties`)
                tensors[name] = _at(t, acts[op.outputs[0]], op.outputs[0] in wide)
            else:
                tensors[name] = _const(graph, op, i, t, acts, config, target, tensors, moments)
    numerics = Numerics(Rounding(config.rounding), Accumulator(target.accumulator), config.target)
    prov = dataclasses.replace(
        graph.provenance, quant=config.record(), numerics=numerics, calibration_samples=samples
    )
    qgraph = with_tables(graph.with_(tensors=tensors, provenance=prov))
    qgraph = with_float_regions(graph, qgraph)
    if config.adaround:
        qgraph, _ = adaround(
            graph,
            qgraph,
            calibration,
            iters=config.adaround,
            progress=layer_progress,
            blocks=config.reconstruction == "block",
        )
    if shifts_biases(config):  # the rounded weights' mean error moves into the bias
        qgraph = with_mean_biases(graph, qgraph, moments)
    return correct_biases(graph, qgraph, calibration) if config.bias_correction else qgraph


def _at(t: Tensor, q: QuantParams, wide: bool = False) -> Tensor:
    """Constant `t` quantized at an activation's params `q` (int16 when `wide`), clamped: its
    own range's params, or a shared-scale op's output's, whose range holds its values (within
    `check_fits`' slack of a fixed one: the concatenation's observed values hold them)."""
    bound = 2**15 if wide else 2**7
    codes = round_half_away(np.asarray(t.data) / np.float32(q.scale[0])) + q.zero_point[0]
    dtype = "int16" if wide else "int8"
    return Tensor(
        t.name, t.shape, dtype, data=np.clip(codes, -bound, bound - 1).astype(dtype), quant=q
    )


def _const(
    graph: Graph,
    op: Any,
    i: int,
    t: Tensor,
    acts: dict[str, QuantParams],
    config: QuantConfig,
    target: Target,
    done: dict[str, Tensor],
    moments: dict[str, ChannelMoments],
) -> Tensor:
    data = np.asarray(t.data)
    if op.kind in CPU_FLOAT | CPU_FLOAT32:  # float32 on the CPU (kernels/float_ops.py, gru.py)
        return Tensor(t.name, t.shape, "float32", data=data.astype(np.float32))
    if op.kind in WEIGHTED and i == 1:
        dim = WEIGHTED[op.kind] if target.op(config.device, op.kind).per_channel else None
        if is_selection(graph, op):  # 0/1 weights at scale 1: exact (mdla_ir.selection)
            n = data.shape[dim] if dim is not None else 1
            return Tensor(
                t.name,
                t.shape,
                "int8",
                data=data.astype(np.int8),
                quant=QuantParams((1.0,) * n, (0,) * n, dim),
            )
        bias = np.abs(graph.const(op.inputs[2]).astype(np.float64))
        need = bias / (float(np.float32(acts[op.inputs[0]].scale[0])) * BIAS_LIMIT)
        floor = need if dim is not None else need.max()
        q, params = fit_weights(
            op.kind,
            data,
            dim,
            floor,
            config.weight_scale,
            config.weight_rounding,
            stats_of(moments, op),
        )
        return Tensor(t.name, t.shape, "int8", data=q, quant=params)
    if op.kind in WEIGHTED and i == 2:
        w = done.get(op.inputs[1]) or _const(
            graph, op, 1, graph.tensors[op.inputs[1]], acts, config, target, done, moments
        )
        assert w.quant is not None  # set just above
        q, params = quantize_bias(data, acts[op.inputs[0]].scale[0], w.quant)
        if is_wide(op, done):  # 16x8: an int64 bias (holding int32 values, as for int8)
            return Tensor(t.name, t.shape, "int64", data=q.astype(np.int64), quant=params)
        return Tensor(t.name, t.shape, "int32", data=q, quant=params)
    if is_wide(op, done) and (op.kind, i) not in INT8_OPERANDS:  # of a 16x8 op (ADD's, MUL's)
        return const16(t.name, data)
    return _at(t, activation_params(float(data.min(initial=0.0)), float(data.max(initial=0.0))))
