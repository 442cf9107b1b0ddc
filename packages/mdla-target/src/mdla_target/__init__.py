"""mdla_target: NPU target descriptions as data, each fact with its source.

target = mdla_target.load_target("mdla3.5")        # or a path to a target .toml file
spec = target.op("mtk-mdla", OpKind.LOGISTIC)      # supported? padding? fixed output (1/256, -128)
mdla_target.known_targets()                        # the target files shipped in this package
mdla_target.target_path("mdla3.5")                 # the shipped file itself (the emulator reads it)
mdla_target.write_target(target, Path("probed.toml"))   # the inverse of load_target
target.accumulator                                 # "saturate" | "wrap": int32 overflow in MBQM
"""

from __future__ import annotations

from mdla_ir.devices import DEFAULT_TARGET, DEVICES, DSP, GPU, NPU
from mdla_ir.provenance import ACCUMULATORS
from mdla_target.errors import TargetDataError, UnknownDeviceError
from mdla_target.target import (
    PADDING_MODES,
    DeviceSpec,
    OpSpec,
    Target,
    known_targets,
    load_target,
    soc_names,
    target_path,
)
from mdla_target.write import render_target, write_target

__all__ = [
    "ACCUMULATORS",
    "DEFAULT_TARGET",
    "DEVICES",
    "DSP",
    "GPU",
    "NPU",
    "PADDING_MODES",
    "DeviceSpec",
    "OpSpec",
    "Target",
    "TargetDataError",
    "UnknownDeviceError",
    "known_targets",
    "load_target",
    "render_target",
    "soc_names",
    "target_path",
    "write_target",
]
