"""A model output that concatenates probabilities (LOGISTIC: int8 params fixed to [0, 1)) with
values of another range (YOLO's boxes in pixels beside its class probabilities): on the CPU
it becomes CONCATENATION_F32 of DEQUANTIZEd inputs, each at its own scale, a float32 output;
mdla-engine's cpu partition computes it bit for bit as run_int8. On the NPU (not placed) the
quantizer refuses the shared scale, as before."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mdla_runtime
from mdla_ir import Graph, Op, OpKind, Tensor, run_float
from mdla_ir.provenance import Provenance
from mdla_quant import QuantConfig, QuantError, quantize, run_int8

N = 6


def boxes_and_scores(cpu: tuple[str, ...]) -> Graph:
    """x (1, 2, 2, 4) -> boxes = x * 200 (pixels) and scores = sigmoid(x); cat on channels."""
    tensors = [
        Tensor("x", (1, 2, N, 4)),
        Tensor("k", (), "float32", np.float32(200.0)),
        Tensor("boxes", (1, 2, N, 4)),
        Tensor("scores", (1, 2, N, 4)),
        Tensor("y", (1, 2, N, 8)),
    ]
    ops = [
        Op(OpKind.MUL, "box", ("x", "k"), ("boxes",), {"fuse": "NONE"}),
        Op(OpKind.LOGISTIC, "sigmoid", ("x",), ("scores",)),
        Op(OpKind.CONCATENATION, "cat", ("boxes", "scores"), ("y",), {"axis": 3}),
    ]
    prov = Provenance(device="mtk-mdla", cpu_ops=cpu)
    return Graph("g", {t.name: t for t in tensors}, tuple(ops), ("x",), ("y",), "NHWC",
                 provenance=prov)  # fmt: skip


def _calib() -> list[list[np.ndarray]]:
    rng = np.random.default_rng(3)
    return [[rng.uniform(-4, 4, (1, 2, N, 4)).astype(np.float32)] for _ in range(4)]


def test_an_output_concat_of_probabilities_and_pixels_is_float32_on_the_cpu() -> None:
    q = quantize(boxes_and_scores(("box", "sigmoid", "cat")), _calib(), QuantConfig())
    cat = next(op for op in q.ops if op.name == "cat")
    assert cat.kind is OpKind.CONCATENATION_F32
    assert [q.tensors[n].dtype for n in cat.inputs] == ["float32", "float32"]
    assert q.tensors["y"].dtype == "float32"
    assert q.tensors["y"].quant is None
    box_q, score_q = q.tensors["boxes"].quant, q.tensors["scores"].quant
    assert box_q is not None
    assert score_q is not None
    assert score_q.scale == (1 / 256,)  # the probabilities keep their own scale
    assert box_q.scale[0] > 3.0  # ~800 / 255: shared, a step of 3 would flatten them to 0
    x = _calib()[0][0]
    (got,) = run_int8(q, [x])
    (want,) = run_float(boxes_and_scores(()), [x])
    np.testing.assert_allclose(got[..., 4:], want[..., 4:], atol=1 / 256)
    np.testing.assert_allclose(got[..., :4], want[..., :4], atol=box_q.scale[0])


def test_on_the_npu_the_shared_scale_is_refused() -> None:
    with pytest.raises(QuantError, match="shares a scale with `scores`"):
        quantize(boxes_and_scores(()), _calib(), QuantConfig())


def test_the_engine_runs_the_float_concat_bit_exactly(tmp_path: Path) -> None:
    q = quantize(boxes_and_scores(("cat",)), _calib(), QuantConfig())
    path = mdla_runtime.save(q, tmp_path / "cat.mdla")
    target = mdla_runtime.open_target("emu")
    for (x,) in _calib():
        want = run_int8(q, [x])[0]
        got = target.run(path, [x])
        assert [(p.device, p.ops) for p in got.partitions] == [("mtk-mdla", 2), ("cpu", 3)]
        y = got.outputs[0]
        assert y.dtype == np.float32
        assert y.shape == want.shape
        assert np.array_equal(y.view(np.uint32), want.view(np.uint32))


def test_a_concat_of_that_concat_is_float32_too() -> None:
    """YOLO's segmenter: cat(cat(boxes, scores), coefficients) is the output; the inner one
    is float32 (mixed ranges), so the outer one reads float32 and is float32 too."""
    g = boxes_and_scores(("box", "sigmoid", "cat", "outer"))
    tensors = {**g.tensors, "z": Tensor("z", (1, 2, N, 12))}
    outer = Op(OpKind.CONCATENATION, "outer", ("y", "x"), ("z",), {"axis": 3})
    g = g.with_(tensors=tensors, ops=(*g.ops, outer), outputs=("z",))
    q = quantize(g, _calib(), QuantConfig())
    kinds = {op.name: op.kind for op in q.ops}
    assert kinds["cat"] is kinds["outer"] is OpKind.CONCATENATION_F32
    x = _calib()[1][0]
    (got,) = run_int8(q, [x])
    x_q = q.tensors["x"].quant
    assert x_q is not None
    np.testing.assert_allclose(got[..., 8:], x, atol=x_q.scale[0])
