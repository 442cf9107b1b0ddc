"""The table group (mdla_quant.kernels.functions): each function's 256-entry int8 table is its
float64 value on every dequantized code, quantized once; torch's own function agrees to within
a code; run_int8 checks a carried table; the importers name each function as its own kind."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

import mdla_ir
from mdla_ir.affine import dequantize_output, quantize_input
from mdla_ir.attrs import FunctionAttrs, WhereAttrs
from mdla_ir.builders import act, qp, single_op_qgraph
from mdla_ir.functions import FUNCTIONS, evaluate
from mdla_ir.ops import OpKind
from mdla_ir.schema import HOST_BY_CODE, HOST_CODES, TABLE_FORM, group
from mdla_quant import run_int8
from mdla_quant.errors import KernelError
from mdla_quant.kernels.functions import function_table, with_tables

ATTRS = {
    OpKind.ELU: FunctionAttrs(alpha=0.5),
    OpKind.CELU: FunctionAttrs(alpha=0.7),
    OpKind.SOFTPLUS: FunctionAttrs(beta=2.0, threshold=5.0),
    OpKind.WHERE: WhereAttrs("ge", 0.25, 1.0, 0.0, 0.1, -0.5),
}
TORCH: dict[OpKind, Any] = {
    OpKind.ELU: lambda x: F.elu(x, 0.5),
    OpKind.CELU: lambda x: F.celu(x, 0.7),
    OpKind.SELU: F.selu,
    OpKind.SOFTPLUS: lambda x: F.softplus(x, 2.0, 5.0),
    OpKind.MISH: F.mish,
    OpKind.LOG_SIGMOID: F.logsigmoid,
    OpKind.TANHSHRINK: F.tanhshrink,
    OpKind.SOFTSIGN: F.softsign,
    OpKind.EXP: torch.exp,
    OpKind.LOG: torch.log,
    OpKind.SQRT: torch.sqrt,
    OpKind.RSQRT: torch.rsqrt,
    OpKind.RECIPROCAL: torch.reciprocal,
    OpKind.WHERE: lambda x: torch.where(x >= 0.25, x, 0.1 * x - 0.5),
    OpKind.COS: torch.cos,
    OpKind.SIN: torch.sin,
    OpKind.TAN: torch.tan,
    OpKind.ATAN: torch.atan,
    OpKind.EXPM1: torch.expm1,
    OpKind.LOG1P: torch.log1p,
}
CODES = np.arange(-128, 128)


def test_every_function_has_a_torch_twin_and_a_table_host_op() -> None:
    assert set(TORCH) == set(FUNCTIONS)
    assert group("table") == {*FUNCTIONS, OpKind.GELU}
    tables = {k for k, c in HOST_CODES.items() if HOST_BY_CODE[c].forms[0].slots == ("x", "table")}
    assert tables == group("table")
    assert TABLE_FORM == "x:a table:a"


@pytest.mark.parametrize("kind", list(FUNCTIONS), ids=lambda k: k.name)
def test_the_table_is_the_function_of_every_code(kind: OpKind) -> None:
    rng = np.random.default_rng(abs(kind.value))
    for _ in range(5):
        s_in, z_in = np.float32(rng.uniform(0.005, 0.1)), int(rng.integers(-128, 128))
        s_out, z_out = np.float32(rng.uniform(0.005, 0.1)), int(rng.integers(-128, 128))
        attrs: Any = ATTRS.get(kind, FunctionAttrs())
        table = function_table(kind, attrs, s_in, z_in, s_out, z_out)
        xs = dequantize_output(CODES, float(s_in), z_in)
        assert np.array_equal(table, quantize_input(evaluate(kind, xs, attrs), s_out, z_out))
        with np.errstate(all="ignore"):
            ref = TORCH[kind](torch.from_numpy(xs.astype(np.float64))).numpy()
        ref = np.where(np.isnan(ref), 0.0, ref).astype(np.float32)
        diff = np.abs(table.astype(int) - quantize_input(ref, s_out, z_out).astype(int))
        assert diff.max() <= 1, kind


def test_not_a_number_is_zero_and_infinity_saturates() -> None:
    s_in, s_out = np.float32(0.05), np.float32(0.1)
    table = function_table(OpKind.LOG, FunctionAttrs(), s_in, 0, s_out, 7)
    assert (table[:128] == 7).all()  # log of a negative value: NaN -> 0.0 -> the zero point
    assert table[128] == -128  # log(0) = -inf saturates
    rsqrt = function_table(OpKind.RSQRT, FunctionAttrs(), s_in, 0, s_out, 0)
    assert rsqrt[128] == 127  # 1 / sqrt(0) = inf saturates


def elu_graph() -> Any:
    g = single_op_qgraph(
        OpKind.ELU, [act("x", (1, 4, 4, 2), qp(0.05, -3))], (1, 4, 4, 2), qp(0.02, -90),
        {"alpha": 0.5},
    )  # fmt: skip
    return with_tables(g)


def test_with_tables_attaches_the_table_run_int8_checks() -> None:
    g = elu_graph()
    op = g.ops[0]
    assert op.inputs == ("x", "elu0.table")
    table = g.tensors["elu0.table"].data
    assert table is not None
    assert np.array_equal(
        table, function_table(OpKind.ELU, FunctionAttrs(alpha=0.5), np.float32(0.05), -3,
                              np.float32(0.02), -90)
    )  # fmt: skip
    x = np.linspace(-3, 3, 32, dtype=np.float32).reshape(1, 4, 4, 2)
    (got,) = run_int8(g, [x], raw=True)
    codes = quantize_input(x, np.float32(0.05), -3)
    assert np.array_equal(got, table[codes.astype(int) + 128])
    wrong = {**g.tensors, "elu0.table": g.tensors["elu0.table"].__class__(
        "elu0.table", (256,), "int8", data=np.roll(table, 1), quant=g.tensors["elu0.table"].quant
    )}  # fmt: skip
    with pytest.raises(KernelError, match="its table is not the ELU of its input and output"):
        run_int8(g.with_(tensors=wrong), [x], raw=True)


class Acts(nn.Module):
    """F.softsign is Python over abs (export sees only abs, add, div): fx alone names it."""

    def __init__(self, softsign: bool) -> None:
        super().__init__()
        self.softsign = softsign
        self.elu = nn.ELU(0.5)
        self.sp = nn.Softplus(2.0, 5.0)
        self.celu = nn.CELU(0.7)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.celu(self.sp(self.elu(x)))
        y = F.mish(F.selu(y)) + F.softplus(y, beta=3.0) + F.elu(y, 0.25)
        y = F.logsigmoid(y) + F.tanhshrink(y) + y.exp().log() + y.exp().rsqrt()
        return F.softsign(y) if self.softsign else y


@pytest.mark.parametrize("path", ["fx", "export"])
def test_both_importers_name_each_function(path: str) -> None:
    x = torch.randn(1, 3, 5, 5)
    module = Acts(softsign=path == "fx").eval()
    graph = mdla_ir.from_torch(module, (x,), name="acts", optimize=False, path=path)
    kinds = [op.kind.name for op in graph.ops if op.kind in group("table")]
    want = ["ELU", "SOFTPLUS", "CELU", "SELU", "MISH", "SOFTPLUS", "ELU", "LOG_SIGMOID"]
    assert kinds[: len(want)] == want
    assert ("SOFTSIGN" in kinds) == (path == "fx")
    attrs = [op.attrs for op in graph.ops if op.kind in (OpKind.ELU, OpKind.SOFTPLUS)]
    assert FunctionAttrs(alpha=0.5) in attrs
    assert FunctionAttrs(beta=3.0) in attrs
    assert FunctionAttrs(beta=2.0, threshold=5.0) in attrs
    (got,) = mdla_ir.run_float(graph, [x.numpy()])
    np.testing.assert_allclose(got, module(x).detach().numpy(), rtol=1e-5, atol=1e-5)


class Angles(nn.Module):
    """A rotated-box head's angle and a positional code: torch's elementwise functions by
    function, by method and through torch.export's ATen ops."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = torch.atan(x) * 2.0
        y = torch.cat([a.cos(), torch.sin(a), torch.tan(x * 0.5)], 1)
        return y + torch.cat([torch.expm1(x * 0.1), x.abs().log1p(), x], 1)


@pytest.mark.parametrize("path", ["fx", "export"])
def test_both_importers_take_torchs_elementwise_functions(path: str) -> None:
    x = torch.randn(1, 3, 5, 5)
    module = Angles().eval()
    graph = mdla_ir.from_torch(module, (x,), name="angles", optimize=False, path=path)
    kinds = {op.kind for op in graph.ops if op.kind in group("table")}
    assert kinds == {OpKind.COS, OpKind.SIN, OpKind.TAN, OpKind.ATAN, OpKind.EXPM1, OpKind.LOG1P}
    (got,) = mdla_ir.run_float(graph, [x.numpy()])
    np.testing.assert_allclose(got, module(x).detach().numpy(), rtol=1e-5, atol=1e-5)
