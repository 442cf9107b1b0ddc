"""Probe a Neuron Adapter: measure its op-support matrix and arithmetic, and write a target.

    target = mdla_runtime.open_target("emu")             # or "lib:/path.so", "ssh://phone"
    matrix = run_probes(target, catalogue(), ["mtk-mdla", "mtk-gpu", "mtk-dsp"])
    write_target(matrix, Path("mytarget.toml"))          # mdla_target.load_target(path)

Each probe is one int8 single-op model (per op and variant: per-channel weights, padding forms,
broadcast, scale constraints, a classifier-sized FULLY_CONNECTED, the math primitives). Per
device a `Cell` records the support report, compilation, execution, latency and bit-exactness
against `mdla_quant.run_int8`. Every step runs in its own engine process, so a crashing adapter
costs one cell, not the run.
"""

from __future__ import annotations

from workbench.probe.catalogue import MATH, catalogue
from workbench.probe.model import Cell, Matrix, NotExpressibleError, Probe, ProbeResult
from workbench.probe.runner import run_probe, run_probes, target_info
from workbench.probe.targetfile import render, write_target

__all__ = [
    "MATH",
    "Cell",
    "Matrix",
    "NotExpressibleError",
    "Probe",
    "ProbeResult",
    "catalogue",
    "render",
    "run_probe",
    "run_probes",
    "target_info",
    "write_target",
]
