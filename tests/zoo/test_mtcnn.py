"""MTCNN's P-, R- and O-Net with their real weights (facenet-pytorch's wheel) through the whole
path on a real face (the astronaut photo): float parity with torch, every op on mtk-mdla (R- and
O-Net flatten a permuted map into a Linear: the permute goes into the conv's weights), the
emulator and LiteRT's reference kernels bit-exact with run_int8, INT8 vs FP32 cosine >= 0.99."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import skimage.data
import torch
from PIL import Image

import mdla_ir
import mdla_legalize
from mdla_quant import QuantConfig, quantize, run_int8
from mdla_quant.reference import quantize_inputs
from mdla_runtime import load, open_target, save
from mdla_runtime.export.tflite import run_tflite_reference, tflite_bytes
from mdla_zoo import load_model
from mdla_zoo.models import MTCNN_SIZES

Array = np.ndarray[Any, Any]
FACE = (30, 175, 160, 305)  # the astronaut's face: top, bottom, left, right


def crops(h: int, w: int, n: int, seed: int) -> list[Array]:
    """Jittered crops around the face (or the whole head and shoulders for P-Net's frame)."""
    rng = np.random.default_rng(seed)
    img = skimage.data.astronaut()
    t, b, left, r = FACE
    out = []
    for _ in range(n):
        dy, dx = rng.integers(-12, 13, 2)
        pad = int(rng.integers(0, 40)) if h == w else 60
        box = (left + dx - pad, t + dy - pad, r + dx + pad, b + dy + pad)
        pic = Image.fromarray(img).crop(box).resize((w, h), Image.Resampling.BILINEAR)
        x = (np.asarray(pic, np.float32) - 127.5) / 128.0
        out.append(x.transpose(2, 0, 1)[None].astype(np.float32))
    return out


@cache
def compiled(spec: str) -> tuple[Any, mdla_ir.Graph, mdla_ir.Graph, list[Array]]:
    model = load_model(spec)
    graph = mdla_ir.from_torch(model.module, model.example_inputs, name=spec)
    legal = mdla_legalize.legalize(graph, mdla_legalize.load_target("mdla3.5"))
    h, w = MTCNN_SIZES[spec]
    qgraph = quantize(legal, [[x] for x in crops(h, w, 8, seed=1)], QuantConfig())
    return model.module, legal, qgraph, crops(h, w, 4, seed=2)


@pytest.mark.parametrize("spec", sorted(MTCNN_SIZES))
def test_real_weights_float_parity_and_every_op_maps(spec: str) -> None:
    module, legal, _, xs = compiled(spec)
    report = mdla_legalize.explain(legal, mdla_legalize.load_target("mdla3.5"))
    assert report.all_supported, str(report)
    for x in xs:
        with torch.no_grad():
            want = module(torch.from_numpy(x))
        for got, ref in zip(mdla_ir.run_float(legal, [x]), want, strict=True):
            ref = ref.numpy()
            assert np.abs(got - ref).max() <= 1e-4 * max(np.abs(ref).max(), 1e-12)


@pytest.mark.parametrize("spec", sorted(MTCNN_SIZES))
def test_int8_is_bit_exact_everywhere_and_close_to_fp32(spec: str, tmp_path: Path) -> None:
    _, legal, qgraph, xs = compiled(spec)
    emu = open_target("emu")
    manifest = load(save(qgraph, tmp_path / f"{spec}.mdla"))
    blob = tflite_bytes(qgraph)
    cosines = []
    for x in xs:
        want = run_int8(qgraph, [x], raw=True)
        got = emu.run(manifest, [x]).raw_outputs
        codes = quantize_inputs(qgraph, [x])
        lite = run_tflite_reference(blob, [codes[n] for n in qgraph.inputs])
        for a, b, c in zip(got, lite, want, strict=True):
            np.testing.assert_array_equal(a.reshape(c.shape), c)
            np.testing.assert_array_equal(b.reshape(c.shape), c)
        for f, q in zip(mdla_ir.run_float(legal, [x]), run_int8(qgraph, [x]), strict=True):
            f64, q64 = f.ravel().astype(np.float64), q.ravel().astype(np.float64)
            cosines.append(f64 @ q64 / (np.linalg.norm(f64) * np.linalg.norm(q64)))
    assert min(cosines) >= 0.99, cosines


def test_the_face_is_a_face() -> None:
    """O-Net's face probability on the tight face crop and on a sky patch (the weights really
    are MTCNN's)."""
    module = compiled("mtcnn_onet")[0]
    img = skimage.data.astronaut()
    t, b, left, r = FACE
    probs = []
    for box in ((left, t, r, b), (0, 0, 130, 145)):  # the face; the top-left corner
        pic = Image.fromarray(img).crop(box).resize((48, 48), Image.Resampling.BILINEAR)
        x = ((np.asarray(pic, np.float32) - 127.5) / 128.0).transpose(2, 0, 1)[None]
        with torch.no_grad():
            probs.append(float(module(torch.from_numpy(x.astype(np.float32)))[2][0, 1]))
    assert probs[0] > 0.9, probs
    assert probs[1] < 0.5, probs
