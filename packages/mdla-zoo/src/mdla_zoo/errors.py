"""The one base error of mdla_zoo."""

from __future__ import annotations


class ZooError(Exception):
    """A model spec, weights file or image the zoo cannot turn into a model or its input."""
