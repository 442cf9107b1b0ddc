"""The int16 choice that sees combinations: backward elimination from all-int16.

Per-tensor gains (`sensitivity`) measure each tensor made int16 alone, on top of an all-int8
graph. When the output error is spread over many tensors, each one's share is small and every
gain is near 0 dB, though the tensors together carry it all. Elimination measures the other
way round, where the shares show: start with every allowed tensor int16, and in `ROUNDS`
rounds drop to `budget`; each round measures, for every tensor still int16, the output SQNR
with that one tensor back to int8 (its loss), and drops the tensors of least loss per element
first until that round's share of the excess is gone. The losses are re-measured each round,
so a tensor whose loss only shows once its neighbours are int8 again is kept.

    loss(t | S)  = SQNR(S) - SQNR(S without t)           (simulated, `simulate_a16`)
    round k      drops excess_k / (ROUNDS - k) elements  (excess: int16 elements over budget)

Whole tensors overshoot: the round that crosses the budget can land well under it (on
efficientnet_lite0, a 50 % budget ended at 33.5 %). The room left is then filled back (`_fill`):
the dropped tensors that still fit, largest last-measured loss first, each put back when the
measured SQNR rises with it.

A chosen tensor's `Choice.gain_db` is its loss in the last round measured: what its 16 bits
add on top of the others kept (a superset of the final choice). Cost: one simulated run per
tensor still int16 per round, up to ROUNDS times a `sensitivity` pass (the large tensors, which
go first, are few), and when the last round overshoots its budget, one more run per dropped
tensor that still fits (`_fill`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np

from mdla_ir import Graph, run_float
from mdla_quant.errors import QuantError
from mdla_quant.precision import Choice, Cost
from mdla_quant.sensitivity import Progress, int16_grids, output_sqnr, simulate_a16
from mdla_quant.simulate import with_int8_weights

Array = np.ndarray[Any, Any]
ROUNDS = 4
Measure = Callable[[Collection[str]], float]


def simulated_sqnr(
    graph: Graph, qgraph: Graph, held_out: Sequence[Sequence[Any]], weights: Graph | None = None
) -> Measure:
    """The outputs' SQNR against FP32 on `held_out` with a set of tensors int16 (simulated);
    `graph` is the float graph `qgraph` was quantized from. The activation grids are
    `qgraph`'s, the weights those of `weights` (default `qgraph`): another quantization of
    `graph`, e.g. one whose AdaRound was fit with int16 activations; the int16 tensors of
    `weights` lend their 16x8 grids (the observed range, which a clipping method narrows in
    `qgraph`: `simulate_a16`)."""
    if not held_out:
        raise QuantError(
            f"int16 choice for `{graph.name}`: no held-out inputs (pass input lists the "
            "calibration did not see)"
        )
    ref = [run_float(graph, list(x)) for x in held_out]
    rounded = with_int8_weights(graph, qgraph if weights is None else weights)
    wide = int16_grids(graph, weights) if weights is not None else None

    def measure(int16: Collection[str]) -> float:
        return output_sqnr(ref, simulate_a16(rounded, qgraph, held_out, int16, wide))

    return measure


def _drop_order(kept: list[str], losses: dict[str, float], costs: dict[str, Cost]) -> list[str]:
    """Least loss per element first (a negative loss: dropping it helps); ties by name."""
    return sorted(kept, key=lambda t: (losses[t] / max(costs[t].elements, 1), t))


def _losses(measure: Measure, kept: list[str], progress: Progress | None) -> dict[str, float]:
    """Each kept tensor's loss: the SQNR with all `kept` int16 minus that without it."""
    whole = measure(kept)
    out = {}
    for k, t in enumerate(kept):
        out[t] = whole - measure([u for u in kept if u != t])
        if progress is not None:
            progress(k + 1, len(kept), t)
    return out


def eliminate(
    measure: Measure,
    allowed: Collection[str],
    costs: dict[str, Cost],
    budget: float,
    progress: Progress | None = None,
    refresh: Callable[[list[str]], Measure] | None = None,
) -> tuple[Choice, ...]:
    """Backward elimination (see the module docstring) from `allowed` all int16 to at most
    `budget` (a share of all activation elements in `costs`); the kept tensors in graph
    order (`costs`' order), each with its last measured loss as `gain_db`. `refresh(kept)`,
    when given, makes each round after the first measure with a new `Measure` for the
    tensors still int16 (e.g. on weights re-fit to them)."""
    total = sum(c.elements for c in costs.values())
    kept = [t for t in costs if t in set(allowed)]
    losses: dict[str, float] = {}
    for k in range(ROUNDS):
        excess = sum(costs[t].elements for t in kept) - budget * total
        if excess <= 0 and losses:
            break
        if refresh is not None and k > 0:
            measure = refresh(list(kept))
        losses.update(_losses(measure, kept, progress))
        if excess <= 0:
            break
        target = excess if k == ROUNDS - 1 else excess / (ROUNDS - k)
        dropped = 0
        for t in _drop_order(kept, losses, costs):
            if dropped >= target:
                break
            kept.remove(t)
            dropped += costs[t].elements
    kept = _fill(measure, kept, losses, costs, budget * total)
    return tuple(
        Choice(t, losses[t], costs[t].elements / total, costs[t]) for t in costs if t in kept
    )


def _fill(
    measure: Measure, kept: list[str], losses: dict[str, float], costs: dict[str, Cost], room: float
) -> list[str]:
    """`kept` with the dropped tensors put back that fit within `room` elements in all and
    raise the measured SQNR, tried largest last loss first; each one put back gets its
    measured gain as its loss."""
    room -= sum(costs[t].elements for t in kept)
    dropped = sorted((t for t in losses if t not in kept), key=lambda t: (-losses[t], t))
    base: float | None = None
    for t in dropped:
        if costs[t].elements > room:
            continue
        base = measure(kept) if base is None else base
        trial = measure([*kept, t])
        if trial > base:
            kept, losses[t], base = [*kept, t], trial - base, trial
            room -= costs[t].elements
    return kept
