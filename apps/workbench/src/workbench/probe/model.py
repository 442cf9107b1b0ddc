"""The records of a probe: what it builds, what each device answered, and the whole matrix."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mdla_ir.graph import Graph
from mdla_runtime.errors import TargetError
from workbench.probe.patch import HeaderPatch

# What a probe variant tells about its op (targetfile.py turns these into target facts).
ROLES = (
    "base",  # the plainest valid form: is the op supported at all
    "per_channel",  # per-channel weights
    "pad_same",  # explicit pads equal to TF SAME's (asymmetric, the extra pad after)
    "pad_symmetric",  # explicit symmetric pads that differ from TF SAME's (PyTorch style)
    "same_form",  # the implicit SAME padding code: which pads does the device apply
    "broadcast",  # binary operands of unequal shapes
    "unequal_scales",  # CONCATENATION inputs with different scales
    "rescale",  # the output's scale differs from the input's
    "free_output",  # an output scale other than the ABI's fixed one
    "size",  # a real-model-sized instance of the base form
    "size_per_channel",  # a real-model-sized instance with per-channel weights
    "dilation",  # a dilated window (dilation > 1): the entry's dilation / dilation_source
    "accumulator",  # a requantization whose int32 overflows: wraps or saturates ([arith])
    "int16",  # the op on int16 activations (16x8): the entry's int16 / int16_source
)


class NotExpressibleError(TargetError):
    """The manifest (or the engine) cannot carry this probe; the message says what is missing."""


@dataclass(frozen=True, slots=True)
class ProbeModel:
    """One single-op int8 model: the qgraph `save()` writes (and the reference runs), an optional
    header patch, and the references the output is compared with, first the expected one."""

    graph: Graph
    patch: HeaderPatch | None = None
    references: Mapping[str, Graph] | None = None  # None: the graph itself; {}: no reference
    # The `accumulator` ("saturate" | "wrap") a reference runs with; absent: its target's fact.
    accumulators: Mapping[str, str] | None = None

    def refs(self) -> Mapping[str, Graph]:
        return {"reference": self.graph} if self.references is None else self.references

    def accumulator(self, reference: str) -> str | None:
        return None if self.accumulators is None else self.accumulators.get(reference)


@dataclass(frozen=True, slots=True)
class Probe:
    op: str  # the Neuron operation name (reference/neuron-adapter-abi.md §3c)
    variant: str
    role: str
    build: Callable[[], ProbeModel]
    note: str = ""

    @property
    def key(self) -> str:
        return f"{self.op}/{self.variant}"


@dataclass(frozen=True, slots=True)
class Cell:
    """One probe on one device. None means "not reached" (an earlier stage failed)."""

    supported: bool | None = None  # getSupportedOperationsForDevices
    compiles: bool | None = None  # createForDevices + finish
    runs: bool | None = None  # an execution completed
    exact: bool | None = None  # output == the first reference, bit for bit (None: no reference)
    mismatches: int = 0
    max_diff: int = 0
    latency_us: float | None = None
    error: str = ""  # the Neuron result name, "crashed: SIGSEGV", or a message
    matches: tuple[str, ...] = ()  # the references the output equals bit for bit

    def as_dict(self) -> dict[str, Any]:
        return {
            "supported": self.supported,
            "compiles": self.compiles,
            "runs": self.runs,
            "exact": self.exact,
            "mismatches": self.mismatches,
            "max_diff": self.max_diff,
            "latency_us": self.latency_us,
            "error": self.error,
            "matches": list(self.matches),
        }


@dataclass(frozen=True, slots=True)
class ProbeResult:
    probe: Probe
    cells: Mapping[str, Cell]  # by device
    skipped: str = ""  # why nothing ran (not expressible, or the probe itself failed)

    @property
    def ok(self) -> bool:
        """On some device the op compiled, ran and (when there is a reference) was exact."""
        return any(c.runs and c.exact is not False for c in self.cells.values())


@dataclass(frozen=True, slots=True)
class Matrix:
    target: str
    version: str
    date: str
    devices: tuple[str, ...]
    results: Sequence[ProbeResult] = field(default_factory=tuple)

    def source(self, device: str) -> str:
        return f"probed on {self.target} {device}, {self.date}, Neuron {self.version}"

    def by_op(self, op: str) -> list[ProbeResult]:
        return [r for r in self.results if r.probe.op == op]

    def as_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "version": self.version,
            "date": self.date,
            "devices": list(self.devices),
            "probes": [
                {
                    "op": r.probe.op,
                    "variant": r.probe.variant,
                    "role": r.probe.role,
                    "note": r.probe.note,
                    "skipped": r.skipped,
                    "cells": {d: c.as_dict() for d, c in r.cells.items()},
                }
                for r in self.results
            ],
        }
