"""lipread's errors: one base, one subclass per kind, each mapped to a CLI exit code."""

from __future__ import annotations


class LipreadError(Exception):
    """Base error; `exit_code` follows STYLE.md (1 bad input, 2 usage, 3 unsupported,
    4 device)."""

    exit_code = 1


class VideoError(LipreadError):
    """The file is not a readable video, or it has no frames."""


class NoFaceError(LipreadError):
    """The mouth finder found no face in some frames."""


class CheckpointError(LipreadError):
    """A checkpoint is unreadable or does not match LipNet's keys and shapes."""


class UnsupportedError(LipreadError):
    """The target or this reader cannot do it (a net that does not compile for mtk-mdla,
    frames too small for MTCNN, options that exclude each other)."""

    exit_code = 3


class MissingDependencyError(UnsupportedError):
    """A feature needs an optional package this install lacks (torch, facenet-pytorch): the
    message names the pip command. Usage, as the workbench has it: the install is what to
    change, not the video or the target. (An UnsupportedError, so that whatever adds context
    to one keeps it.)"""

    exit_code = 2


class DeviceError(LipreadError):
    """The target (emulator, library, phone) failed."""

    exit_code = 4
