"""Each pass through the shared checker (verified, op delta, honest flag, idempotent, exact)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from mdla_ir import OpKind, VerifyError, run_passes
from mdla_ir.attrs import MeanAttrs
from mdla_ir.graph import Graph
from mdla_ir.passes import (
    canonicalize_mean,
    canonicalize_reshapes,
    drop_identities,
    fold_batchnorm,
    fuse_activations,
    mark_depthwise,
)
from mdla_ir.passes.rewrite import PassResult
from mdla_ir.testing import GraphBuilder, check_pass

CONV = {"stride": (1, 1), "dilation": (1, 1), "padding": (1, 1, 1, 1), "fuse": "NONE"}


def conv(b: GraphBuilder, x: str, cin: int, cout: int, groups: int = 1, name: str = "") -> str:
    w = b.const(f"{name or x}.w", (cout, cin // groups, 3, 3))
    bias = b.const(f"{name or x}.b", (cout,))
    return b.op(OpKind.CONV_2D, [x, w, bias], name=name or None, groups=groups, **CONV)


def bn(b: GraphBuilder, x: str, c: int) -> str:
    rng = np.random.default_rng(1)
    stats = [b.const(f"{x}.bn{i}", rng.uniform(0.5, 2, c).astype(np.float32)) for i in range(4)]
    return b.op(OpKind.BATCH_NORM, [x, *stats], eps=1e-3)


def test_fold_batchnorm() -> None:
    b = GraphBuilder()
    y = bn(b, conv(b, b.input("x", (1, 3, 8, 8)), 3, 4), 4)
    g = check_pass(fold_batchnorm, b.build(y), {"BATCH_NORM": -1})
    assert g.ops[0].attrs.folded_bn == "batch_norm_1"


def test_fold_batchnorm_into_depthwise_in_nhwc() -> None:
    b = GraphBuilder(layout="NHWC")
    x = b.input("x", (1, 8, 8, 4))
    w, bias = b.const("w", (1, 3, 3, 4)), b.const("b", (4,))
    y = b.op(OpKind.DEPTHWISE_CONV_2D, [x, w, bias], multiplier=1, **CONV)
    check_pass(fold_batchnorm, b.build(bn(b, y, 4)), {"BATCH_NORM": -1})


def test_fold_batchnorm_keeps_a_conv_output_used_twice() -> None:
    b = GraphBuilder()
    c = conv(b, b.input("x", (1, 3, 8, 8)), 3, 4)
    out = b.op(OpKind.ADD, [bn(b, c, 4), c], fuse="NONE")
    check_pass(fold_batchnorm, b.build(out), {})


def test_fuse_activations() -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 3, 8, 8))
    r = b.op(OpKind.RELU6, [conv(b, x, 3, 3)])
    a = b.op(OpKind.RELU, [b.op(OpKind.ADD, [r, x], fuse="NONE")])
    g = check_pass(fuse_activations, b.build(a), {"RELU6": -1, "RELU": -1})
    assert [op.label for op in g.ops] == ["CONV_2D+RELU6", "ADD+RELU"]
    assert g.outputs == (a,)


def test_fuse_activations_leaves_shared_and_output_values() -> None:
    b = GraphBuilder()
    c = conv(b, b.input("x", (1, 3, 8, 8)), 3, 3)
    r = b.op(OpKind.RELU, [c])
    check_pass(fuse_activations, b.build(r, c), {})  # c is a graph output: keep it unfused
    b2 = GraphBuilder()
    m = b2.op(OpKind.MEAN, [b2.input("x", (1, 3, 8, 8))], axes=(2, 3), keepdims=True)
    check_pass(fuse_activations, b2.build(b2.op(OpKind.RELU, [m])), {})  # MEAN has no fuse code


def test_mark_depthwise() -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 4, 8, 8))
    y = conv(b, conv(b, x, 4, 8, groups=4, name="dw"), 8, 8, groups=2, name="grouped")
    g = check_pass(mark_depthwise, b.build(y), {"CONV_2D": -1, "DEPTHWISE_CONV_2D": 1})
    assert g.op("dw").attrs.multiplier == 2
    assert g.op("grouped").kind is OpKind.CONV_2D


def test_drop_identities_including_an_output() -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 3, 4, 4))
    d = b.op(OpKind.DROPOUT, [b.op(OpKind.RELU, [x])])
    out = b.op(OpKind.IDENTITY, [b.op(OpKind.TANH, [d])])
    g = check_pass(drop_identities, b.build(out), {"DROPOUT": -1, "IDENTITY": -1})
    assert g.outputs == ("tanh_2",)


def test_canonicalize_mean() -> None:
    b = GraphBuilder()
    a = b.op(OpKind.ADAPTIVE_AVG_POOL_2D, [b.input("x", (1, 3, 7, 7))], output_size=(1, 1))
    other = b.op(OpKind.ADAPTIVE_AVG_POOL_2D, [a], output_size=(1, 1))
    g = check_pass(canonicalize_mean, b.build(other), {"ADAPTIVE_AVG_POOL_2D": -2, "MEAN": 2})
    assert g.ops[0].attrs == MeanAttrs(axes=(2, 3), keepdims=True)
    b2 = GraphBuilder()
    keep = b2.op(OpKind.ADAPTIVE_AVG_POOL_2D, [b2.input("x", (1, 3, 7, 7))], output_size=(2, 2))
    check_pass(canonicalize_mean, b2.build(keep), {})


def test_canonicalize_reshapes() -> None:
    b = GraphBuilder()
    x = b.input("x", (2, 3, 4, 4))
    f = b.op(OpKind.FLATTEN, [x], start=1, end=-1)
    r = b.op(OpKind.RESHAPE, [f], shape=(2, 6, 8))
    same = b.op(OpKind.RESHAPE, [r], shape=(2, 6, 8))
    g = check_pass(
        canonicalize_reshapes, b.build(b.op(OpKind.RELU, [same])), {"FLATTEN": -1, "RESHAPE": -1}
    )
    assert [op.kind for op in g.ops] == [OpKind.RESHAPE, OpKind.RELU]
    assert g.ops[0].inputs == ("x",)
    assert g.ops[0].attrs.shape == (2, 6, 8)


def test_run_passes_names_the_pass_that_broke_the_graph() -> None:
    b = GraphBuilder()
    good = b.build(b.op(OpKind.RELU, [b.input("x", (1, 3))]))

    def breaks(graph: Graph) -> PassResult:
        return PassResult(graph.with_(outputs=("nope",)), True)

    with pytest.raises(VerifyError, match="pass `breaks` broke graph `test`"):
        run_passes(good, [breaks])


@pytest.mark.parametrize("axis", [0, 1, 3])
@pytest.mark.parametrize("chunk", [1, 7, 1 << 16])
def test_batchnorm_fold_in_chunks_is_the_whole_filter_product(
    monkeypatch: pytest.MonkeyPatch, axis: int, chunk: int
) -> None:
    """The folded filter float32(float64(w) * s) taken on chunks of rows (s along the out
    channel: torch's axis 0, a transposed conv's 1, a Neuron depthwise filter's 3) is the
    whole-filter product bit for bit, and an empty filter keeps its shape."""
    fold = importlib.import_module("mdla_ir.passes.fold_batchnorm")  # (the package's name is
    # the pass function)
    monkeypatch.setattr(fold, "CHUNK", chunk)
    rng = np.random.default_rng(axis + chunk)
    w = (rng.standard_normal((6, 5, 3, 4)) * 3).astype(np.float32)
    w.reshape(-1)[:3] = -0.0, 1e-40, np.float32(3.4e38)
    scale = rng.standard_normal(w.shape[axis]) * 7
    shape = [1] * 4
    shape[axis] = -1
    with np.errstate(over="ignore"):
        want = (w.astype(np.float64) * scale.reshape(shape)).astype(np.float32)
        got = fold._scaled(w, scale, axis)
    assert got.dtype == np.float32
    assert got.tobytes() == want.tobytes()
    assert fold._scaled(w[:0], scale if axis else scale[:0], axis).shape == w[:0].shape
