"""The old import path of `mdla_emu.emulator` (the emulator is its own distribution now): the
names other projects imported from here, re-exported unchanged."""

from __future__ import annotations

from mdla_emu.abi import load_emulator as load_emulator
from mdla_emu.emulator import CFLAGS as CFLAGS
from mdla_emu.emulator import build_emulator as build_emulator
from mdla_emu.emulator import emulator_sources as emulator_sources
from mdla_emu.emulator import generated_targets as generated_targets
from mdla_emu.targets import EmulatorError as EmulatorError
from mdla_emu.targets import target_for_soc as target_for_soc
