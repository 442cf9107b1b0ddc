"""The configurations a sweep compiles: calibration methods x techniques, each a QuantConfig
made from the compile options' own (rounding, percentile, target, reconstruction kept).

    none          round to nearest after calibration
    bc            bias correction
    cle           cross-layer equalization (then high-bias absorption)
    adaround      AdaRound (the --adaround iterations, 300 when not given)
    cle+bc, cle+adaround   both
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import mdla_quant
from mdla_quant import QuantConfig

ADAROUND_ITERS = 300
TECHNIQUES: dict[str, tuple[bool, bool, bool]] = {  # equalize, bias correction, adaround
    "none": (False, False, False),
    "bc": (False, True, False),
    "cle": (True, False, False),
    "adaround": (False, False, True),
    "cle+bc": (True, True, False),
    "cle+adaround": (True, False, True),
}


class GridError(ValueError):
    """A --methods or --techniques entry that names nothing known."""


@dataclass(frozen=True)
class Point:
    """One configuration of the grid."""

    method: str
    technique: str
    config: QuantConfig


def names(text: str, known: Sequence[str], flag: str) -> list[str]:
    """A comma-separated list of choices, checked (duplicates dropped, order kept)."""
    chosen = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not chosen:
        raise GridError(f"{flag} is empty: give one or more of {', '.join(known)}")
    for name in chosen:
        if name not in known:
            raise GridError(f"{flag}: unknown `{name}`: expected one of {', '.join(known)}")
    return chosen


def grid(base: QuantConfig, methods: str, techniques: str) -> list[Point]:
    """Every method x technique, in that order, each `base` with the method and technique."""
    iters = base.adaround or ADAROUND_ITERS
    points = []
    for method in names(methods, mdla_quant.METHODS, "--methods"):
        for technique in names(techniques, list(TECHNIQUES), "--techniques"):
            equalize, bias, ada = TECHNIQUES[technique]
            config = dataclasses.replace(
                base,
                method=method,
                equalize=equalize,
                bias_correction=bias,
                adaround=iters if ada else 0,
            )
            points.append(Point(method, technique, config))
    return points
