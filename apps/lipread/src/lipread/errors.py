"""lipread's errors: one base, one subclass per kind, each mapped to a CLI exit code."""

from __future__ import annotations


class LipreadError(Exception):
    """Base error; `exit_code` follows STYLE.md (1 bad input, 3 unsupported, 4 device)."""

    exit_code = 1


class VideoError(LipreadError):
    """The file is not a readable video, or it has no frames."""


class NoFaceError(LipreadError):
    """The mouth finder found no face in some frames."""


class CheckpointError(LipreadError):
    """A checkpoint is unreadable or does not match LipNet's keys and shapes."""


class UnsupportedError(LipreadError):
    """A feature needs something this install lacks (torch, facenet-pytorch)."""

    exit_code = 3


class DeviceError(LipreadError):
    """The target (emulator, library, phone) failed."""

    exit_code = 4
