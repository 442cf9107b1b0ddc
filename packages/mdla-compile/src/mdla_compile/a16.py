"""`--a16`: the activation tensors a compile holds in int16, named by pattern or chosen.

auto[:BUDGET]  the calibration set is split (the last quarter held out, at least one
               input; a single input measures on itself): quantize all-int8 on the rest
               (with the compile's AdaRound when it has one, so each gain is what 16 bits
               add on top of the weights the compile keeps), measure each tensor's
               simulated gain on the held-out part (`mdla_quant.sensitivity`), and choose
               greedily under BUDGET (`mdla_quant.precision.choose`) among the tensors
               the 16x8 kernels take (`a16_candidates`)
joint[:BUDGET] the same split and probe; the choice by backward elimination from all of those
               tensors int16 (`mdla_quant.joint`), which sees what tensors gain together
refit[:BUDGET] `joint` measured on the weights the final compile will have: with AdaRound on,
               the probe is fit with every candidate int16 (one AdaRound, as `auto`'s), and
               a tensor dropped back to int8 reads the int8 grid of a plain probe (no
               AdaRound: grids do not depend on it). AdaRound fit to int8 activations absorbs
               part of their error into the weights, so on its weights 16 bits gain little
               (efficientnet_lite0: all candidates int16 26.5 dB on them, 32.3 dB re-fit);
               without AdaRound it is `joint`. With `rounds="folds"` (API and bench only), the
               probe is fit on the whole calibration set, as the compile's AdaRound is, and
               each elimination round scores on the next quarter of it: the choice reads
               all of the set instead of its last quarter, at the same cost
PATTERN,...    the tensors whose name, or whose producing op's name, matches a glob
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

import mdla_quant
from mdla_compile import events as ev
from mdla_compile.errors import OptionError
from mdla_compile.torch_conv import torch_kernels
from mdla_ir import Graph
from mdla_quant.joint import ROUNDS, Measure, eliminate, simulated_sqnr
from mdla_quant.precision import (
    Choice,
    Request,
    a16_candidates,
    choose,
    parse_a16,
    select,
    tensor_costs,
)
from mdla_quant.sensitivity import sensitivity

Array = np.ndarray[Any, Any]
Rounds = Literal["held", "every_round", "folds"]


def a16_request(text: str | None) -> Request | None:
    """`--a16` parsed (None: not given); a malformed one is a usage error."""
    if text is None:
        return None
    try:
        return parse_a16(text)
    except mdla_quant.QuantError as exc:
        raise OptionError(str(exc)) from exc


def split(calibration: Sequence[list[Array]]) -> tuple[list[list[Array]], list[list[Array]]]:
    """(fit, held out): the last quarter (at least one) held out; one input is both."""
    items = list(calibration)
    if len(items) < 2:
        return items, items
    held = max(1, len(items) // 4)
    return items[:-held], items[-held:]


def choose_a16(
    graph: Graph,
    calibration: Sequence[list[Array]],
    config: mdla_quant.QuantConfig,
    budget: float,
    joint: bool = False,
    refit: bool = False,
    rounds: Rounds = "held",
) -> tuple[Choice, ...]:
    """The `auto`, `joint` or `refit` choice for the legalized `graph` (see the module
    docstring). `rounds`, for `refit` with AdaRound: what each elimination round after the
    first scores on: "held" (the held-out part, on the probe's weights), "every_round"
    (AdaRound fit again to the tensors still int16: one AdaRound per round) or "folds" (the
    probe fit on all of `calibration`, each round scoring on the next quarter of it)."""
    folds = rounds == "folds" and refit and bool(config.adaround)
    fit, held = (list(calibration), quarters(calibration)[0]) if folds else split(calibration)
    probe = dataclasses.replace(config, a16=(), a16_gain_db=(), a16_mode="")
    rounded = mdla_quant.float_rewrites(graph, fit, probe)  # equalized once, not again in quantize
    probe = dataclasses.replace(probe, equalize=False)
    if refit and config.adaround:
        return _refit(graph, rounded, (fit, held), probe, budget, rounds)
    q8 = mdla_quant.quantize(rounded, fit, probe, kernels=torch_kernels())
    allowed = [n for n in a16_candidates(graph) if n in q8.tensors]
    if joint or refit:
        measure = simulated_sqnr(rounded, q8, held)
        return eliminate(measure, allowed, tensor_costs(graph), budget)
    found = sensitivity(rounded, q8, held, tensors=allowed, allowed=allowed)
    return choose(found, tensor_costs(graph), budget, allowed=allowed)


def _refit(
    graph: Graph,
    rounded: Graph,
    parts: tuple[list[list[Array]], list[list[Array]]],
    probe: mdla_quant.QuantConfig,
    budget: float,
    rounds: Rounds,
) -> tuple[Choice, ...]:
    """`refit`'s elimination: int8 grids from a plain probe, weights fit with `kept` int16;
    with "folds", round k scores on quarter k of `fit` (`held` is its first)."""
    fit, held = parts
    plain = dataclasses.replace(probe, adaround=0)
    grids = mdla_quant.quantize(rounded, fit, plain, kernels=torch_kernels())
    allowed = [n for n in a16_candidates(graph) if n in grids.tensors]

    def refit_to(kept: list[str]) -> Graph:
        kept_int16 = dataclasses.replace(probe, a16=tuple(kept))
        return mdla_quant.quantize(rounded, fit, kept_int16, kernels=torch_kernels())

    weights = refit_to(allowed)
    later = iter(quarters(fit)[1:])

    def refit_again(kept: list[str]) -> Measure:
        return simulated_sqnr(rounded, grids, held, weights=refit_to(kept))

    def next_quarter(kept: list[str]) -> Measure:
        return simulated_sqnr(rounded, grids, next(later), weights=weights)

    refresh = {"every_round": refit_again, "folds": next_quarter}.get(rounds)
    first = simulated_sqnr(rounded, grids, held, weights=weights)
    return eliminate(first, allowed, tensor_costs(graph), budget, refresh=refresh)


def quarters(items: Sequence[list[Array]]) -> list[list[list[Array]]]:
    """`items` in `ROUNDS` contiguous parts, each at least one input (contiguous: the
    calibration crops cycle through their pictures, so each part sees them all)."""
    n = len(items)
    starts = [k * n // ROUNDS for k in range(ROUNDS)]
    return [list(items[a : max((k + 1) * n // ROUNDS, a + 1)]) for k, a in enumerate(starts)]


def resolve(
    request: Request | None,
    graph: Graph,
    calibration: Sequence[list[Array]],
    config: mdla_quant.QuantConfig,
    emit: ev.OnEvent,
) -> tuple[mdla_quant.QuantConfig, tuple[Choice, ...]]:
    """`config` with the requested int16 tensors (a note per chosen tensor says why)."""
    if request is None:
        return config, ()
    if not request.auto:
        names = select(graph, request.patterns)
        return dataclasses.replace(config, a16=names, a16_gain_db=(), a16_mode=request.mode), ()
    picked = choose_a16(graph, calibration, config, request.budget, request.joint, request.refit)
    for c in picked:
        emit(
            ev.Note(
                f"int16 `{c.tensor}`: {c.gain_db:+.2f} dB output SQNR (simulated), "
                f"{c.share:.1%} of activation bytes, {c.cost.macs:,} MACs at 16x8"
            )
        )
    share = sum(c.share for c in picked)
    mode = request.mode
    emit(ev.Note(f"--a16 {mode}: {len(picked)} tensor(s) int16, {share:.1%} of activation bytes"))
    chosen = dataclasses.replace(
        config,
        a16=tuple(c.tensor for c in picked),
        a16_gain_db=tuple(round(c.gain_db, 4) for c in picked),
        a16_mode=mode,
    )
    return chosen, picked
