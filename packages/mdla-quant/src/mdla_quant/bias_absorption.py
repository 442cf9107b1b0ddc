"""High-bias absorption (Nagel et al. 2019, "Data-Free Quantization", sec. 4.2), the step that
goes with cross-layer equalization: move a constant part of op1's output channels into op2's
bias, so the activation between them spans less.

For a pair op1 -> op2 that `equalize` accepts (op1's output feeds only op2, op1 fused NONE or
RELU), op2 a CONV_2D / DEPTHWISE_CONV_2D without padding or a FULLY_CONNECTED, and a per-channel
c >= 0 (c: op1's output channel):

    op1: b1[c] - c[c]           op2: b2 + W2 . c    (the sum over op2's input channels)

With y = op1's pre-activation, op2 now sees f(y - c) + c where it saw f(y) (op2 is linear in
its input, and without padding every output position sums whole windows of its input, so the
constant c passes through as W2 . c). For f = NONE that is y: exact for every input. For
f = RELU, max(y - c, 0) + c = max(y, c), which equals max(y, 0) wherever y >= c: c is each
channel's minimum over the calibration data (clamped at 0, the paper uses the BatchNorm
statistics' mean - 3 sigma, which a folded graph no longer has), so the rewrite is exact on
every calibration input and on any input whose pre-activations stay above it. Padding of op2
would see 0 where it saw c, which is why padded op2s are left alone.

EfficientNet-Lite's convs are fused RELU6 (`equalize` leaves those alone), so this finds little
to do there; the pairs it can absorb are linear 1x1 projections and RELU convs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import numpy as np

from mdla_ir import Graph, Op, OpKind, Tensor, evaluate
from mdla_ir.attrs import window_of
from mdla_quant.equalize import FIRST, _why_not
from mdla_quant.errors import QuantError

Array = np.ndarray[Any, Any]


@dataclass
class AbsorbReport:
    pairs: list[tuple[str, str, int]] = field(default_factory=list)  # (op1, op2, channels moved)
    skipped: dict[str, str] = field(default_factory=dict)  # op1 name -> why not

    def summary(self) -> str:
        moved = sum(n for *_, n in self.pairs)
        return f"high-bias absorption: {moved} channels over {len(self.pairs)} pairs"


def _absorbable(graph: Graph, op1: Op, users: list[Op]) -> str | None:
    why = _why_not(graph, op1, users)
    if why is not None:
        return why
    op2 = users[0]
    if op2.kind is not OpKind.FULLY_CONNECTED and any(window_of(op2).padding):
        return f"followed by a padded {op2.kind.name} (its border would see 0, not c)"
    if len(op2.inputs) < 3 or not graph.tensors[op2.inputs[2]].is_const:
        return "followed by an op without a constant bias"
    return None


def _through(op2: Op, w2: Array, c: Array) -> Array:
    """W2 . c: what a constant c on op2's input channels adds to each of its outputs."""
    if op2.kind is OpKind.FULLY_CONNECTED:  # (O, K)
        out: Array = w2 @ c
    elif op2.kind is OpKind.DEPTHWISE_CONV_2D:  # (1, KH, KW, C), multiplier 1
        out = w2.reshape(-1, w2.shape[-1]).sum(axis=0) * c
    else:  # CONV_2D (O, KH, KW, C)
        out = w2.reshape(w2.shape[0], -1, w2.shape[-1]).sum(axis=1) @ c
    return out


class Minima:
    """An observer (name, value) keeping the per-channel (last axis) minimum of each tensor in
    `names` over the first `samples` values it is given of it: `calibrate` calls it for every
    tensor of every sample, so the minima need no float pass of their own."""

    def __init__(self, names: set[str], samples: int) -> None:
        self.names, self.samples = names, samples
        self.lows: dict[str, Array] = {}
        self.seen: dict[str, int] = {}

    def __call__(self, name: str, value: Array) -> None:
        if name not in self.names or self.seen.get(name, 0) >= self.samples:
            return
        self.seen[name] = self.seen.get(name, 0) + 1
        low = value.reshape(-1, value.shape[-1]).min(axis=0).astype(np.float64)
        self.lows[name] = np.minimum(self.lows[name], low) if name in self.lows else low

    @property
    def full(self) -> bool:
        """Whether every tensor has had its `samples` values (nothing more changes)."""
        return len(self.seen) == len(self.names) and min(self.seen.values()) >= self.samples


def channel_minima(graph: Graph, names: set[str], calibration: Iterable[Any]) -> dict[str, Array]:
    """Per-channel (last axis) minimum of each tensor in `names` over the calibration inputs."""
    minima = Minima(names, samples=2**62)
    seen = 0
    for sample in calibration:
        evaluate(graph, sample if isinstance(sample, list | tuple) else [sample], (), minima)
        seen += 1
    if seen == 0:
        raise QuantError(f"high-bias absorption on `{graph.name}` got no calibration samples")
    return minima.lows


class ChannelsMovedError(Exception):
    """A calibration pass learned that high-bias absorption moves a channel (`until_moved`)."""


@dataclass
class Absorption:
    """The absorbable pairs of `graph` and the observer of their minima: `apply()` is
    `absorb_high_biases` once `observe` has seen the calibration (`graph` itself, the same
    object, when no channel moves)."""

    graph: Graph
    pairs: list[tuple[Op, Op]]
    report: AbsorbReport
    observe: Minima

    def moves(self) -> bool:
        """Whether a channel moves on the minima observed so far (`_absorb`'s test)."""
        lows = self.observe.lows
        return any(np.any(lows.get(a.outputs[0], 0.0) > 0) for a, _ in self.pairs)

    def until_moved(self) -> Callable[[str, Array], None]:
        """`observe` for a calibration pass, raising `ChannelsMovedError` once the minima are
        complete and a channel moves: that pass calibrates a graph `apply` replaces."""
        minima = self.observe

        def observe(name: str, value: Array) -> None:
            if name not in minima.names or minima.full:
                return
            minima(name, value)
            if minima.full and self.moves():
                raise ChannelsMovedError

        return observe

    def apply(self, calibration: Iterable[Any]) -> tuple[Graph, AbsorbReport]:
        """The absorbed graph; a tensor `observe` was not given (a graph calibrated under
        other names) has its minima from a float pass of `graph` over `calibration`."""
        if not self.pairs:
            return self.graph, self.report
        lows = dict(self.observe.lows)
        missing = self.observe.names - set(lows)
        if missing:
            lows |= channel_minima(self.graph, missing, islice(calibration, self.observe.samples))
        return _absorb(self.graph, self.pairs, lows, self.report)


def absorption(graph: Graph, samples: int = 32) -> Absorption:
    """`graph`'s absorbable pairs (op1 -> op2), the others' reasons in the report."""
    report = AbsorbReport()
    users = graph.consumers()
    pairs: list[tuple[Op, Op]] = []
    for op in graph.ops:
        if op.kind not in FIRST:
            continue
        why = _absorbable(graph, op, users.get(op.outputs[0], []))
        if why is None:
            pairs.append((op, users[op.outputs[0]][0]))
        else:
            report.skipped[op.name] = why
    return Absorption(graph, pairs, report, Minima({a.outputs[0] for a, _ in pairs}, samples))


def absorb_high_biases(
    graph: Graph, calibration: Iterable[Any], samples: int = 32
) -> tuple[Graph, AbsorbReport]:
    """`graph` with each absorbable pair's constant channel part moved into op2's bias, c the
    channel's minimum over the first `samples` calibration inputs (module docstring)."""
    return absorption(graph, samples).apply(calibration)  # its observer saw nothing: a float pass


def _absorb(
    graph: Graph, pairs: list[tuple[Op, Op]], lows: dict[str, Array], report: AbsorbReport
) -> tuple[Graph, AbsorbReport]:
    """`graph` with the pairs' channels of minimum c > 0 moved (`graph` itself when none is)."""
    biases: dict[str, Array] = {}

    def bias(name: str) -> Array:
        return biases.setdefault(name, graph.const(name).astype(np.float64))

    for op1, op2 in pairs:
        c = np.maximum(lows[op1.outputs[0]], 0.0)
        if not np.any(c > 0):
            continue
        b1, b2 = op1.inputs[2], op2.inputs[2]
        biases[b1] = bias(b1) - c
        biases[b2] = bias(b2) + _through(op2, graph.const(op2.inputs[1]).astype(np.float64), c)
        report.pairs.append((op1.name, op2.name, int(np.count_nonzero(c))))
    if not biases:
        return graph, report
    tensors = dict(graph.tensors)
    for name, values in biases.items():
        t = tensors[name]
        tensors[name] = Tensor(
            t.name, t.shape, t.dtype, data=values.astype(np.float32), quant=t.quant
        )
    return graph.with_(tensors=tensors), report
