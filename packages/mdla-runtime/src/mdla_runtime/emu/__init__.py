"""The old import path of the host emulator, which is now its own distribution (`mdla_emu`)."""
