"""Float32 kernels of the table group's functions that elementwise.py does not define (ELU,
Mish, Softplus, ...): `mdla_ir.functions`, evaluated in float64 and rounded to float32."""

from __future__ import annotations

from collections.abc import Sequence

from mdla_ir.functions import FUNCTIONS, evaluate
from mdla_ir.graph import Op
from mdla_ir.interp.registry import Array, kernel

OWN = tuple(k for k in FUNCTIONS if not k.is_neuron)  # EXP, LOG, ...: elementwise.py's


@kernel(*OWN)
def function(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    return [evaluate(op.kind, args[0], op.attrs)]
