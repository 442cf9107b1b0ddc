"""The quantization stage's errors: one base, subclasses that carry the op they are about."""

from __future__ import annotations


class QuantError(Exception):
    """Base error of mdla_quant."""


class KernelError(QuantError):
    """An int8 kernel cannot run an op as given; `op` names the op."""

    def __init__(self, message: str, op: str) -> None:
        super().__init__(message)
        self.op = op
