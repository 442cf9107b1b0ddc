"""Test builders for float32 regions of cpu partitions (issue 17; `mdla_quant.kernels.gru`):
a small recurrent tail and one malformation per float32 check of both manifest readers."""

from __future__ import annotations

import numpy as np

from mdla_ir.devices import NPU
from mdla_ir.graph import Graph
from mdla_runtime import errors
from mdla_runtime.format.manifest import to_bytes
from mdla_runtime.testing import Edit, Header, Malformed, _edit, split

STEPS, FEATURES, HIDDEN, UNITS = 6, 4, 3, 5


def float_region_qgraph(bidirectional: bool = True) -> Graph:
    """relu0 on mtk-mdla, then on the cpu: DEQUANTIZE (int8 -> float32), a GRU over the 6
    steps, a FULLY_CONNECTED_F32 to 5 float32 logits per step (the model's output):

        x (6, 4) int8 -> relu0 -> r int8 | r.dequantize -> f (6, 4) float32 -> gru0
        -> h (6, 2·3) float32 -> fc0 -> y (6, 5) float32
    """
    from mdla_ir.attrs import GruAttrs
    from mdla_ir.builders import act, qp
    from mdla_ir.graph import Op, Tensor
    from mdla_ir.ops import OpKind
    from mdla_ir.provenance import Provenance

    rng = np.random.default_rng(23)
    dirs = 2 if bidirectional else 1

    def f32(name: str, *shape: int) -> Tensor:
        data = (rng.standard_normal(shape) * 0.6).astype(np.float32)
        return Tensor(name, shape, "float32", data)

    tensors = [
        act("x", (STEPS, FEATURES), qp(0.04, -3)),
        act("r", (STEPS, FEATURES), qp(0.04, -3)),
        Tensor("f", (STEPS, FEATURES), "float32"),
        f32("w_ih", dirs, 3 * HIDDEN, FEATURES),
        f32("w_hh", dirs, 3 * HIDDEN, HIDDEN),
        f32("b_ih", dirs, 3 * HIDDEN),
        f32("b_hh", dirs, 3 * HIDDEN),
        Tensor("h", (STEPS, dirs * HIDDEN), "float32"),
        f32("fw", UNITS, dirs * HIDDEN),
        f32("fb", UNITS),
        Tensor("y", (STEPS, UNITS), "float32"),
    ]
    gru = {"bidirectional": GruAttrs(bidirectional).bidirectional}
    ops = (
        Op(OpKind.RELU, "relu0", ("x",), ("r",)),
        Op(OpKind.DEQUANTIZE, "r.dequantize", ("r",), ("f",)),
        Op(OpKind.GRU, "gru0", ("f", "w_ih", "w_hh", "b_ih", "b_hh"), ("h",), gru),
        Op(OpKind.FULLY_CONNECTED_F32, "fc0", ("h", "fw", "fb"), ("y",)),
    )
    prov = Provenance(device=NPU, cpu_ops=("r.dequantize", "gru0", "fc0"))
    return Graph("gru_tail", {t.name: t for t in tensors}, ops, ("x",), ("y",), "NHWC",
                 provenance=prov)  # fmt: skip


def float_region_cases() -> list[Malformed]:
    """One malformation per float32 check of the readers (format/semantic.py check 2 and the
    host operations' arities), on `float_region_qgraph`'s file."""
    blob = to_bytes(float_region_qgraph())
    header, _ = split(blob)
    idx = {o["name"]: i for i, o in enumerate(header["operands"]) if "name" in o}
    names = [op["name"] for op in header["operations"]]
    gru, fc = names.index("gru0"), names.index("fc0")

    def output(key: str, value: object) -> Edit:
        return (f"float_output_{key}", lambda h: h["outputs"][0].__setitem__(key, value),
                errors.BadQuantizationError, f"outputs[0].{key}")  # fmt: skip

    def float_input(h: Header) -> None:
        h["inputs"][0]["operand"] = idx["f"]

    def drop_input(op: int) -> Edit:
        return (f"{names[op]}_arity", lambda h: h["operations"][op]["inputs"].pop(),
                errors.OperandCountMismatchError, f"operations[{op}].inputs")  # fmt: skip

    edits: list[Edit] = [
        output("scale", 0.5),
        output("zero_point", 3),
        ("float_model_input", float_input, errors.BadReferenceError, "inputs[0].operand"),
        drop_input(gru),
        drop_input(fc),
    ]
    return [Malformed(n, _edit(blob, fn), kind, f) for n, fn, kind, f in edits]
