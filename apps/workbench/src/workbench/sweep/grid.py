"""The configurations a sweep compiles: calibration methods x techniques x `--a16` choices x
any other quantizer field given as an axis, each a QuantConfig made from the compile options'
own (the fields no axis names are kept).

    none          round to nearest after calibration
    bc            bias correction
    cle           cross-layer equalization (then high-bias absorption)
    adaround      AdaRound (the --adaround iterations, 300 when not given)
    cle+bc, cle+adaround   both

An `a16` entry is `none` (all int8), `auto[:BUDGET]` or comma-separated name globs, as
compile's --a16 takes it. `FIELDS` are the other QuantConfig fields an axis may vary.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mdla_quant
from mdla_quant import QuantConfig
from mdla_quant.precision import parse_a16

ADAROUND_ITERS = 300
TECHNIQUES: dict[str, tuple[bool, bool, bool]] = {  # equalize, bias correction, adaround
    "none": (False, False, False),
    "bc": (False, True, False),
    "cle": (True, False, False),
    "adaround": (False, False, True),
    "cle+bc": (True, True, False),
    "cle+adaround": (True, False, True),
}
# QuantConfig fields an axis may vary, with their type (`adaround`: iterations, used by the
# techniques that run AdaRound; `reconstruction` applies to those alone too).
FIELDS: dict[str, type] = {
    "percentile": float,
    "rounding": str,
    "bins": int,
    "adaround": int,
    "reconstruction": str,
}
NO_A16 = "none"


class GridError(ValueError):
    """A --methods, --techniques or --a16 entry (or a grid file's) that names nothing known."""


@dataclass(frozen=True)
class Axes:
    """What the grid varies: each configuration takes one value of every axis."""

    methods: tuple[str, ...]
    techniques: tuple[str, ...]
    a16: tuple[str | None, ...] = (None,)  # None: compile's own (all int8)
    fields: tuple[tuple[str, tuple[Any, ...]], ...] = ()  # (FIELDS name, its values)


@dataclass(frozen=True)
class Point:
    """One configuration of the grid: `variant` names its a16 and field-axis values."""

    method: str
    technique: str
    config: QuantConfig
    a16: str | None = None
    variant: str = ""


def names(text: str | Sequence[str], known: Sequence[str], flag: str) -> tuple[str, ...]:
    """A comma-separated list (or a list of them) of choices, checked (duplicates dropped)."""
    items = [n for part in ([text] if isinstance(text, str) else text) for n in part.split(",")]
    chosen = tuple(dict.fromkeys(n.strip() for n in items if n.strip()))
    if not chosen:
        raise GridError(f"{flag} is empty: give one or more of {', '.join(known)}")
    for name in chosen:
        if name not in known:
            raise GridError(f"{flag}: unknown `{name}`: expected one of {', '.join(known)}")
    return chosen


def a16_axis(values: Sequence[str], flag: str) -> tuple[str | None, ...]:
    """`none`, `auto[:BUDGET]` or name globs, each checked as compile's --a16 checks it."""
    axis: list[str | None] = []
    for value in dict.fromkeys(v.strip() for v in values):
        if value == NO_A16:
            axis.append(None)
            continue
        try:
            parse_a16(value)
        except mdla_quant.QuantError as exc:
            raise GridError(f"{flag}: {exc}") from exc
        axis.append(value)
    if not axis:
        raise GridError(f"{flag} is empty: give none, auto[:BUDGET] or name globs")
    return tuple(axis)


def grid(
    base: QuantConfig, methods: str, techniques: str, a16: Sequence[str] | None = None
) -> list[Point]:
    """Every method x technique (x a16 entry), each `base` with the method and technique."""
    axes = Axes(
        names(methods, mdla_quant.METHODS, "--methods"),
        names(techniques, list(TECHNIQUES), "--techniques"),
        a16_axis(a16, "--a16") if a16 is not None else (None,),
    )
    return points(base, axes)


def points(base: QuantConfig, axes: Axes) -> list[Point]:
    """Every combination of the axes, in their order (those naming one configuration twice,
    e.g. a reconstruction without AdaRound, once)."""
    keys = [k for k, _ in axes.fields]
    out: dict[tuple[str, str, str | None, str], Point] = {}
    combos = itertools.product(
        axes.methods, axes.techniques, axes.a16, *(v for _, v in axes.fields)
    )
    for method, technique, a16, *values in combos:
        config = _config(base, method, technique, dict(zip(keys, values, strict=True)))
        label = [f"a16={a16 or NO_A16}"] if axes.a16 != (None,) else []
        label += [f"{k}={getattr(config, k)}" for k in keys]
        point = Point(method, technique, config, a16, " ".join(label))
        out.setdefault((method, technique, a16, point.variant), point)
    return list(out.values())


def _config(base: QuantConfig, method: str, technique: str, fields: dict[str, Any]) -> QuantConfig:
    equalize, bias, ada = TECHNIQUES[technique]
    iters = fields.pop("adaround", None) or base.adaround or ADAROUND_ITERS
    if not ada:
        fields["reconstruction"] = "layer"  # what AdaRound reconstructs: nothing to say
    try:
        return dataclasses.replace(
            base,
            method=method,
            equalize=equalize,
            bias_correction=bias,
            adaround=iters if ada else 0,
            **fields,
        )
    except mdla_quant.QuantError as exc:
        raise GridError(f"{method} {technique}: {exc}") from exc
