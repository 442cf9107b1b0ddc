"""The compile's one base error and its usage subclass.

A `CompileError` is bad input (a file that does not read, a model without the preprocessing
the calibration needs): the CLIs exit 1. An `OptionError` is an option that cannot be right
whatever the files hold (`--count 0`, `--preset nope`, a malformed `--arg`): exit 2. Errors of
the stages below (IRError, LegalizeError, QuantError, ZooError, ManifestError) pass through.
"""

from __future__ import annotations


class CompileError(Exception):
    """Bad input to the compile: what failed, where, and the fix."""


class OptionError(CompileError):
    """An option that is malformed or contradicts another (a usage error)."""
