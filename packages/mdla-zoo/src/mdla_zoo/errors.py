"""The one base error of mdla_zoo."""

from __future__ import annotations


class ZooError(Exception):
    """A model spec, weights file or image the zoo cannot turn into a model or its input."""


class SpecError(ZooError):
    """A model spec's or an `--arg`'s text is malformed (a usage error: the command line
    itself is wrong, exit 2 in the apps)."""
