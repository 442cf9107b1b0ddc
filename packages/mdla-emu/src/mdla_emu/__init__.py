"""mdla_emu: the host Neuron Adapter emulator, `libneuron_emu.so`, built from its C sources.

path = mdla_emu.build_emulator()        # the shared library (built once, cached by content)
lib = mdla_emu.load_emulator()          # ctypes.CDLL, every Neuron ABI function typed
# or point any Neuron client at `path` (dlopen): LiteRT's MediaTek plugin, mdla-engine --lib

Any client of the Neuron Adapter C ABI can load the library in place of a phone's
libneuron_adapter.so; it runs int8 models bit-exactly as TFLite's reference kernels do.
"""

from __future__ import annotations

from mdla_emu.abi import load_emulator
from mdla_emu.build import BuildError, compile_c
from mdla_emu.emulator import (
    ABI,
    CSRC,
    KERNELS,
    TARGET,
    abi_sources,
    build_emulator,
    emulator_sources,
    kernel_sources,
)
from mdla_emu.targets import EmulatorError, generate_targets, target_for_soc

__all__ = [
    "ABI",
    "CSRC",
    "KERNELS",
    "TARGET",
    "BuildError",
    "EmulatorError",
    "abi_sources",
    "build_emulator",
    "compile_c",
    "emulator_sources",
    "generate_targets",
    "kernel_sources",
    "load_emulator",
    "target_for_soc",
]
