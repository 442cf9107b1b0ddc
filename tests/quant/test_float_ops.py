"""The ops a CPU partition computes in float32 (LAYER_NORM, GELU) and the int8 TRANSPOSE: the
float order of operations the C engine must follow, checked against a scalar loop written as C
would; quantization keeps their constants float32 and ties TRANSPOSE's params; a placed
ConvNeXt block runs in int8 close to its float graph."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mdla_ir
import mdla_legalize
import mdla_quant
from mdla_ir import OpKind
from mdla_ir.builders import act, const, qp, single_op_qgraph
from mdla_quant.errors import KernelError
from mdla_quant.kernels.float_ops import ERF, gelu_table, layer_norm_f32
from tests.workbench.unmappable_models import convnext_block

F = np.float32


def layer_norm_loop(row: list[float], eps: float, w: list[float], b: list[float]) -> list[F]:
    """LayerNorm of one row, one float32 operation at a time, as the C engine computes it."""
    n = F(len(row))
    total = F(0.0)
    for v in row:
        total = F(total + F(v))
    mean = F(total / n)
    acc = F(0.0)
    for v in row:
        d = F(F(v) - mean)
        acc = F(acc + F(d * d))
    inv = F(F(1.0) / F(np.sqrt(F(F(acc / n) + F(eps)))))
    return [F(F(F(F(v) - mean) * inv) * F(wi)) + F(bi) for v, wi, bi in zip(row, w, b, strict=True)]


@pytest.mark.parametrize("n", [1, 3, 96, 768])
def test_layer_norm_is_the_sequential_float32_loop_bit_for_bit(n: int) -> None:
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((5, n)) * rng.uniform(0.1, 30)).astype(F)
    w = rng.standard_normal(n).astype(F)
    b = rng.standard_normal(n).astype(F)
    got = layer_norm_f32(x, n, 1e-6, w, b)
    want = np.array([layer_norm_loop(list(r), 1e-6, list(w), list(b)) for r in x], F)
    assert got.dtype == F
    assert np.array_equal(got.view(np.int32), want.view(np.int32))
    x64 = x.astype(np.float64)
    ref = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-6) * w + b
    assert np.abs(got - ref).max() <= 1e-4 * max(1.0, float(np.abs(ref).max()))


def test_sequential_order_differs_from_pairwise_summation() -> None:
    """The order matters: numpy's pairwise float32 sum of the same row differs, so a kernel
    that used it (or a C loop vectorized with reassociation) would not be bit-exact."""
    rng = np.random.default_rng(7)
    rows = rng.standard_normal((200, 768)).astype(F) * F(100)
    seq = np.add.accumulate(rows, axis=1, dtype=F)[:, -1]
    assert not np.array_equal(seq, rows.sum(axis=1, dtype=F))


def test_gelu_table_is_erf_in_double_rounded_once() -> None:
    s_in, z_in, s_out, z_out = F(0.05), 3, F(0.03), -60
    table = gelu_table(s_in, z_in, s_out, z_out)
    for q in range(-128, 128):
        x = float(F(s_in * F(q - z_in)))
        y = F(0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0))))
        code = int(
            np.clip(np.sign(y / s_out) * np.floor(abs(y / s_out) + F(0.5)) + z_out, -128, 127)
        )
        assert table[q + 128] == code, q
    assert ERF(0.5) == pytest.approx(math.erf(0.5), abs=1e-16)


def ln_graph(w_dtype: type, shape: tuple[int, ...] = (1, 2, 2, 8), norm: int = 8) -> mdla_ir.Graph:
    w = np.linspace(0.5, 1.5, norm).astype(w_dtype)
    x_q, out_q = qp(0.1, 5), qp(0.02, -3)
    return single_op_qgraph(
        OpKind.LAYER_NORM,
        [act("x", shape, x_q), const("w", w, None), const("b", np.zeros(norm, w_dtype), None)],
        shape,
        out_q,
        {"eps": 1e-5, "normalized_shape": (norm,)},
    )


def test_layer_norm_kernel_is_dequantize_float_quantize() -> None:
    g = ln_graph(F)
    rng = np.random.default_rng(0)
    q = rng.integers(-128, 128, (1, 2, 2, 8)).astype(np.int8)
    (out,) = mdla_quant.run_int8(g, [(F(0.1) * (q.astype(F) - F(5)))], raw=True)
    x = F(0.1) * (q.astype(F) - F(5))
    rows = [layer_norm_loop(list(r), 1e-5, list(np.linspace(0.5, 1.5, 8).astype(F)), [0.0] * 8)
            for r in x.reshape(-1, 8)]  # fmt: skip
    y = np.array(rows, F).reshape(q.shape)
    codes = np.clip(np.sign(y / F(0.02)) * np.floor(np.abs(y / F(0.02)) + F(0.5)) - 3, -128, 127)
    assert np.array_equal(out, codes.astype(np.int8))


def test_layer_norm_kernel_refuses_int8_weights_and_a_wrong_shape() -> None:
    x = np.zeros((1, 2, 2, 8), F)
    with pytest.raises(KernelError, match="must be float32"):
        mdla_quant.run_int8(ln_graph(np.int8), [x])
    with pytest.raises(KernelError, match=r"normalized shape \(6,\)"):
        mdla_quant.run_int8(ln_graph(F, norm=6), [x])


def transpose_graph(out_zp: int) -> mdla_ir.Graph:
    return single_op_qgraph(
        OpKind.TRANSPOSE, [act("x", (1, 2, 3, 4), qp(0.1, 2))], (1, 4, 2, 3), qp(0.1, out_zp),
        {"perm": (0, 3, 1, 2)},
    )  # fmt: skip


def test_int8_transpose_moves_values_and_needs_one_scale() -> None:
    rng = np.random.default_rng(1)
    x = F(0.1) * (rng.integers(-128, 128, (1, 2, 3, 4)).astype(F) - F(2))
    (out,) = mdla_quant.run_int8(transpose_graph(2), [x], raw=True)
    codes = np.clip(np.sign(x / F(0.1)) * np.floor(np.abs(x / F(0.1)) + F(0.5)) + 2, -128, 127)
    assert np.array_equal(out, codes.astype(np.int8).transpose(0, 3, 1, 2))
    with pytest.raises(KernelError, match="one scale and zero point"):
        mdla_quant.run_int8(transpose_graph(3), [x])


@pytest.fixture(scope="module")
def placed_block() -> tuple[mdla_ir.Graph, mdla_ir.Graph, list[list[np.ndarray]]]:
    module, x = convnext_block()
    graph = mdla_ir.from_torch(module, (x,), name="block")
    target = mdla_legalize.load_target("mdla3.5")
    cpu = ["LAYER_NORM,GELU,FULLY_CONNECTED,TRANSPOSE"]
    keep = (
        "linear_last_axis_to_conv1x1",
        "drop_identity_transpose",
        "unit_axes_transpose_to_reshape",
    )
    placed = mdla_legalize.place(
        graph, target, "mtk-mdla", cpu, skip_rules=keep
    ).graph  # TRANSPOSEs kept
    rng = np.random.default_rng(0)
    calib = [[rng.standard_normal((1, 8, 8, 8)).astype(F)] for _ in range(4)]
    return placed, mdla_quant.quantize(placed, calib), calib


def test_quantize_keeps_float_constants_and_ties_transposes(
    placed_block: tuple[mdla_ir.Graph, mdla_ir.Graph, list[list[np.ndarray]]],
) -> None:
    placed, qgraph, _ = placed_block
    norm = qgraph.op("norm")
    for name in norm.inputs[1:]:
        t = qgraph.tensors[name]
        assert (t.dtype, t.quant, t.data.dtype) == ("float32", None, F)  # type: ignore[union-attr]
        assert np.array_equal(t.data, placed.tensors[name].data)
    for op in qgraph.ops:
        if op.kind is OpKind.TRANSPOSE:
            assert qgraph.tensors[op.inputs[0]].quant == qgraph.tensors[op.outputs[0]].quant
    assert qgraph.provenance.cpu_ops == placed.provenance.cpu_ops
    assert qgraph.tensors["act"].dtype == "int8"  # every boundary tensor is calibrated int8


def test_placed_block_int8_agrees_with_float(
    placed_block: tuple[mdla_ir.Graph, mdla_ir.Graph, list[list[np.ndarray]]],
) -> None:
    placed, qgraph, _ = placed_block
    x = np.random.default_rng(5).standard_normal((1, 8, 8, 8)).astype(F)
    (f,) = mdla_ir.run_float(placed, [x])
    (q,) = mdla_quant.run_int8(qgraph, [x])
    cosine = float(np.dot(f.ravel(), q.ravel()) / np.linalg.norm(f) / np.linalg.norm(q))
    assert cosine > 0.999


def test_quantize_attaches_each_gelu_table_and_run_int8_checks_it(
    placed_block: tuple[mdla_ir.Graph, mdla_ir.Graph, list[list[np.ndarray]]],
) -> None:
    _, qgraph, calib = placed_block
    act_op = qgraph.op("act")
    assert act_op.inputs[1] == "act.table"
    x, y = (qgraph.tensors[n].quant for n in (act_op.inputs[0], act_op.outputs[0]))
    assert x is not None
    assert y is not None
    want = gelu_table(F(x.scale[0]), x.zero_point[0], F(y.scale[0]), y.zero_point[0])
    table = qgraph.tensors["act.table"]
    assert table.dtype == "int8"
    assert np.array_equal(table.data, want)  # type: ignore[arg-type]
    bad = table.data.copy()  # type: ignore[union-attr]
    bad[0] ^= 1
    tensors = dict(qgraph.tensors) | {"act.table": table.__class__(
        table.name, table.shape, "int8", data=bad, quant=table.quant)}  # fmt: skip
    with pytest.raises(KernelError, match="its table is not the GELU"):
        mdla_quant.run_int8(qgraph.with_(tensors=tensors), calib[0])
