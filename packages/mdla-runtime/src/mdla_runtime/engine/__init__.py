"""The engine wing: targets that run a manifest through `mdla-engine` (emu, lib:, ssh://)."""
