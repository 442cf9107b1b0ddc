"""`Provenance`: the typed compile record a graph carries from import to the manifest.

Each floor fills its own fields with `dataclasses.replace` and leaves the others alone:

    importer (mdla_ir.from_torch)    module, source_hash
    legalize (mdla_legalize)         target, device, rules (from the pass manager's trace)
    quantize (mdla_quant)            quant (the whole QuantConfig), calibration_samples
    the app (workbench, lipread)     spec, labels, preprocess

`mdla_runtime.save` writes it as the manifest's `model` section (a fixed key list, checked by
both readers), and the engine runs with the recorded `quant.rounding`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

ROUNDINGS = ("double", "single")


@dataclass(frozen=True, slots=True)
class QuantRecord:
    """The `mdla_quant.QuantConfig` a graph was quantized with, field for field.

    mdla_ir cannot import mdla_quant, so the fields and their defaults are defined here once:
    `QuantConfig` extends this record with validation, and `QuantConfig.record()` gives the
    plain record the graph's provenance holds.
    """

    method: str = "percentile"
    percentile: float = 99.99
    rounding: str = "double"
    bias_correction: bool = False
    bins: int = 2048
    target: str = "mdla3.5"
    device: str = "mtk-mdla"
    # Added after format 2's first files: optional in a manifest (absent = these defaults).
    equalize: bool = False
    adaround: int = 0  # AdaRound iterations per layer; 0 = round to nearest

    def __post_init__(self) -> None:
        if self.rounding not in ROUNDINGS:
            raise ValueError(f"rounding `{self.rounding}`: expected double or single")


@dataclass(frozen=True, slots=True)
class Preprocess:
    """How a model wants its input images: `mode` ("imagenet", "tf", ...), (h, w), and the
    per-channel mean/std the mode normalizes with (empty when the mode has none)."""

    mode: str
    size: tuple[int, ...] = ()
    mean: tuple[float, ...] = ()
    std: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a compiled graph came from and how it was made (all fields optional until set)."""

    spec: str = ""  # the model spec the user named (torchvision name, file.py:factory, ...)
    module: str = ""  # the torch module's class
    source_hash: str = ""  # sha256 of the fx graph's code and the state dict's tensors
    target: str = ""  # target description legalize used (mdla3.5)
    device: str = ""  # the device legalize mapped to (mtk-mdla)
    rules: tuple[tuple[str, int], ...] = ()  # legalize rules that fired, times each, sorted
    quant: QuantRecord | None = None
    calibration_samples: int = 0
    labels: tuple[str, ...] = ()
    preprocess: Preprocess | None = None
    random_weights: bool = False  # no weights were loaded: outputs and labels mean nothing

    @property
    def rounding(self) -> str:
        """The requantization rounding the int8 graph was built for ("double" by default)."""
        return self.quant.rounding if self.quant is not None else "double"

    @property
    def rule_counts(self) -> dict[str, int]:
        return dict(self.rules)


def merge_rules(
    old: Iterable[tuple[str, int]], new: Mapping[str, int]
) -> tuple[tuple[str, int], ...]:
    """`old` plus `new` counts, as a sorted tuple (the form `Provenance.rules` holds)."""
    counts = dict(old)
    for name, n in new.items():
        counts[name] = counts.get(name, 0) + n
    return tuple(sorted(counts.items()))


def source_hash(code: str, tensors: Iterable[tuple[str, Any]]) -> str:
    """sha256 over a model's structure (the fx graph's code) and its named tensors
    (name, dtype, shape and bytes of each, in name order): equal iff both are equal."""
    h = hashlib.sha256()
    h.update(code.encode())
    for name, value in sorted(tensors, key=lambda kv: kv[0]):
        arr = np.ascontiguousarray(value)
        h.update(f"\0{name}\0{arr.dtype.str}\0{arr.shape}\0".encode())
        h.update(arr.tobytes())
    return h.hexdigest()
