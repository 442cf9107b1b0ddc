"""The issue-15 decoder models end to end: import (float parity with torch), legalize (every op
on mtk-mdla), quantize, the manifest on the host emulator (bit-exact with run_int8) and the
.tflite export on LiteRT's reference kernels (bit-exact with run_int8)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import mdla_ir
import mdla_legalize
from mdla_ir.importer.outputs import flatten_outputs
from mdla_ir.testing import relative_error
from mdla_quant import QuantConfig, quantize, run_int8
from tests.decoders.bitexact import assert_emulator_bit_exact, assert_tflite_bit_exact
from tests.models_decoders import MODELS

Array = np.ndarray[Any, Any]


@cache
def compiled(spec: str) -> tuple[Any, mdla_ir.Graph, mdla_ir.Graph, mdla_ir.Graph, list[Array]]:
    module, example = MODELS[spec]()
    graph = mdla_ir.from_torch(module, example, name=spec)
    legal = mdla_legalize.legalize(graph, mdla_legalize.load_target("mdla3.5"))
    rng = np.random.default_rng(1)
    shape = tuple(example[0].shape)
    calib = [[rng.uniform(0, 1, shape).astype(np.float32)] for _ in range(4)]
    qgraph = quantize(legal, calib, QuantConfig())
    return module, graph, legal, qgraph, [rng.uniform(0, 1, shape).astype(np.float32)]


@pytest.mark.parametrize("spec", sorted(MODELS))
def test_float_ir_matches_torch(spec: str) -> None:
    module, graph, legal, _, xs = compiled(spec)
    with torch.no_grad():
        want = [w.numpy() for w in flatten_outputs(module(*(torch.from_numpy(x) for x in xs)))]
    for g in (graph, legal):
        for got, ref in zip(mdla_ir.run_float(g, xs), want, strict=True):
            err = relative_error(got, ref)
            assert err <= 1e-4, (spec, g.layout, err)


@pytest.mark.parametrize("spec", sorted(MODELS))
def test_every_op_maps_on_the_mdla(spec: str) -> None:
    _, _, legal, _, _ = compiled(spec)
    report = mdla_legalize.explain(legal, mdla_legalize.load_target("mdla3.5"))
    assert report.all_supported, str(report)
    assert report.assumptions(), "these models use ops the seed never measured"
    assert "assumed:" in str(report)


@pytest.mark.parametrize("spec", sorted(MODELS))
def test_emulator_is_bit_exact(spec: str, tmp_path: Path) -> None:
    _, _, _, qgraph, xs = compiled(spec)
    assert_emulator_bit_exact(qgraph, xs, tmp_path / f"{spec}.mdla")


@pytest.mark.parametrize("spec", sorted(MODELS))
def test_tflite_export_is_bit_exact_on_litert_reference(spec: str) -> None:
    _, _, _, qgraph, xs = compiled(spec)
    assert_tflite_bit_exact(qgraph, xs)


@pytest.mark.parametrize("spec", sorted(MODELS))
def test_int8_tracks_float(spec: str) -> None:
    _, _, legal, qgraph, xs = compiled(spec)
    for q, f in zip(run_int8(qgraph, xs), mdla_ir.run_float(legal, xs), strict=True):
        cos = float(np.dot(q.ravel(), f.ravel()) / (np.linalg.norm(q) * np.linalg.norm(f)))
        assert cos >= 0.99, (spec, cos)


def test_pixel_shuffle_permutation_is_exact() -> None:
    """ESPCN's second branch needs the 1x1 permutation conv: its output takes its input's scale
    and zero point, so its requantization returns every code unchanged (checked on run_int8's
    activations: the conv's output codes are its input's, channels reordered)."""
    _, _, _, qgraph, xs = compiled("espcn")
    (perm,) = [op for op in qgraph.ops if op.name.endswith("torch_order")]
    x_q, y_q = (qgraph.tensors[n].quant for n in (perm.inputs[0], perm.outputs[0]))
    assert x_q == y_q
    seen: dict[str, Array] = {}
    run_int8(qgraph, xs, observe=lambda n, v: seen.__setitem__(n, v))
    x, y = seen[perm.inputs[0]], seen[perm.outputs[0]]
    assert sorted(x.ravel().tolist()) == sorted(y.ravel().tolist())
    w = qgraph.tensors[perm.inputs[1]].data
    assert w is not None
    order = np.argmax(w.reshape(w.shape[0], -1), axis=1)
    np.testing.assert_array_equal(y, x[..., order])
