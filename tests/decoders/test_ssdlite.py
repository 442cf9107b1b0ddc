"""ssdlite320_mobilenet_v3_large end to end: backbone + head convs on the NPU (every op on
mtk-mdla, float IR = torch, emulator and LiteRT's reference bit-exact with run_int8), and the
CPU post-processing in numpy equal to torchvision's own (anchors, decoding, scores, NMS)."""

from __future__ import annotations

import dataclasses
import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import skimage.data
import torch
from PIL import Image
from torch import nn
from torchvision.models.detection import ssdlite320_mobilenet_v3_large
from torchvision.models.detection.anchor_utils import DefaultBoxGenerator
from torchvision.models.detection.image_list import ImageList
from torchvision.models.detection.ssd import SSD
from typer.testing import CliRunner

import mdla_ir
import mdla_legalize
from mdla_ir import Preprocess
from mdla_ir.testing import relative_error
from mdla_quant import QuantConfig, quantize, run_int8
from mdla_runtime import load, open_target, save
from mdla_zoo import ZooError, load_model
from mdla_zoo.batchnorm import recalibrate_batchnorm
from mdla_zoo.detection import DECODERS, SSDDecoder, default_boxes, detect
from mdla_zoo.ssd_heads import SSDHeads
from tests.decoders.bitexact import assert_emulator_bit_exact, assert_tflite_bit_exact
from workbench.boxes import GAP, Boxes, rows
from workbench.cli import app

Array = np.ndarray[Any, Any]
SPEC = "ssdlite320_mobilenet_v3_large"


@cache
def torchvision_ssd() -> tuple[Any, SSDHeads]:
    """torchvision's whole SSD and our cut of it, sharing the same (random, BN-set) modules."""
    torch.manual_seed(0)
    ssd = ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None)
    heads = SSDHeads(ssd)
    recalibrate_batchnorm(heads, shape=(2, 3, 320, 320), steps=2)
    return ssd.eval(), heads.eval()


@cache
def compiled() -> tuple[Any, mdla_ir.Graph, mdla_ir.Graph, mdla_ir.Graph, list[Array]]:
    model = load_model(SPEC)
    graph = mdla_ir.from_torch(model.module, model.example_inputs, name=SPEC)
    legal = mdla_legalize.legalize(graph, mdla_legalize.load_target("mdla3.5"))
    photos = [skimage.data.chelsea(), skimage.data.astronaut(), skimage.data.coffee()]
    xs = [model.prepare(p) for p in photos]
    qgraph = quantize(legal, [[x] for x in xs[:2]], QuantConfig())
    return model, graph, legal, qgraph, [xs[2]]


def _torch_outputs(heads: SSDHeads, x: torch.Tensor) -> list[Array]:
    with torch.no_grad():
        return [o.numpy() for o in heads(x)]


def test_the_zoo_table_is_torchvisions_configuration() -> None:
    _, heads = torchvision_ssd()
    assert heads.decoder == DECODERS[SPEC] == compiled()[0].decoder
    assert heads.decoder.anchors_per_location() == [6] * 6


def test_default_boxes_are_torchvisions() -> None:
    ssd, heads = torchvision_ssd()
    x = torch.zeros(1, 3, 320, 320)
    with torch.no_grad():
        features = list(heads.backbone(x).values())
    (want,) = ssd.anchor_generator(ImageList(x, [(320, 320)]), features)
    got = default_boxes(heads.decoder, [tuple(f.shape[2:]) for f in features])
    assert got.shape == (3234, 4)
    np.testing.assert_array_equal(got, want.numpy())


@pytest.mark.parametrize(
    "change",
    [{}, {"score_thresh": 0.02, "topk_candidates": 40, "detections_per_img": 50}],
    ids=["defaults", "threshold"],
)
def test_detections_equal_torchvisions_forward(change: dict[str, Any]) -> None:
    """The whole torchvision forward on a 240x400 image (its transform stretches it to 320)
    against our head outputs of the same transformed tensor, decoded in numpy and scaled back."""
    ssd, heads = torchvision_ssd()
    decoder = dataclasses.replace(heads.decoder, **change)
    for key, value in change.items():
        setattr(ssd, key, value)
    try:
        image = torch.rand(3, 240, 400, generator=torch.Generator().manual_seed(3))
        with torch.no_grad():
            want = ssd([image])[0]
            transformed = ssd.transform([image])[0].tensors
        got = detect(decoder, _torch_outputs(heads, transformed)).scaled((320, 320), (240, 400))
    finally:
        for key in change:
            setattr(ssd, key, getattr(DECODERS[SPEC], key))
    assert 0 < len(got) == len(want["scores"]) <= decoder.detections_per_img
    np.testing.assert_array_equal(got.labels, want["labels"].numpy())
    np.testing.assert_allclose(got.scores, want["scores"].numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got.boxes, want["boxes"].numpy(), rtol=0, atol=1e-3)
    assert got.boxes[:, 2].max() <= 400
    assert got.boxes[:, 3].max() <= 240


def test_outputs_of_the_wrong_shape_are_named() -> None:
    outs = _torch_outputs(torchvision_ssd()[1], torch.zeros(1, 3, 320, 320))
    with pytest.raises(ZooError, match="12 head outputs"):
        detect(DECODERS[SPEC], outs[:11])
    bad = SSDDecoder((320, 320), 90, ((2.0, 3.0),) * 6, DECODERS[SPEC].scales)
    with pytest.raises(ZooError, match=r"SSD level 0: .*\(1, 540, 20, 20\)"):
        detect(bad, outs)


def test_float_ir_matches_torch() -> None:
    model, graph, legal, _, xs = compiled()
    with torch.no_grad():
        want = [w.numpy() for w in model.module(torch.from_numpy(xs[0]))]
    for g in (graph, legal):
        got = mdla_ir.run_float(g, xs)
        assert len(got) == 12
        for a, b in zip(got, want, strict=True):
            assert relative_error(a, b) <= 1e-4


def test_every_op_maps_on_the_mdla(tmp_path: Path) -> None:
    _, _, legal, qgraph, _ = compiled()
    assert mdla_legalize.explain(legal, mdla_legalize.load_target("mdla3.5")).all_supported
    manifest = load(save(qgraph, tmp_path / "ssd.mdla"))
    assert open_target("emu").supported(manifest) == {"mtk-mdla": [True] * len(qgraph.ops)}


def test_emulator_and_litert_are_bit_exact_with_run_int8(tmp_path: Path) -> None:
    _, _, _, qgraph, xs = compiled()
    assert_emulator_bit_exact(qgraph, xs, tmp_path / "ssd.mdla")
    assert_tflite_bit_exact(qgraph, xs)


def test_int8_head_outputs_decode() -> None:
    """The INT8 head outputs go through the same decoder: boxes inside the image, scores
    sorted, and at least one box in common with FP32 (IoU > 0.5) among the top 10."""
    model, _, legal, qgraph, xs = compiled()
    assert model.decoder is not None
    fp32 = detect(model.decoder, mdla_ir.run_float(legal, xs))
    int8 = detect(model.decoder, run_int8(qgraph, xs))
    assert len(int8) == model.decoder.detections_per_img
    assert np.all(np.diff(int8.scores) <= 0)
    assert int8.boxes.min() >= 0
    assert int8.boxes.max() <= 320
    assert _best_iou(fp32.boxes[:10], int8.boxes[:10]) > 0.5


def _best_iou(a: Array, b: Array) -> float:
    lo, hi = np.maximum(a[:, None, :2], b[None, :, :2]), np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.prod(np.clip(hi - lo, 0, None), axis=2)
    area = lambda x: np.prod(x[:, 2:] - x[:, :2], axis=1)  # noqa: E731
    return float((inter / (area(a)[:, None] + area(b)[None, :] - inter)).max())


def test_workbench_run_prints_and_draws_the_boxes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`workbench run` on the manifest: the INT8 rows are the emulator's outputs decoded (equal
    to run_int8's, decoded and scaled to the 300x451 photo), the FP32 rows the float graph's
    of the model --model names, and the PNG holds both panels."""
    model, graph, _, qgraph, _ = compiled()
    prov = dataclasses.replace(
        qgraph.provenance,
        spec=SPEC,
        labels=model.labels,
        preprocess=Preprocess("stretch", (320, 320), (0.5,) * 3, (0.5,) * 3),
        random_weights=True,
    )
    path = save(qgraph.with_(provenance=prov), tmp_path / "ssd.mdla")
    photo = skimage.data.chelsea()
    Image.fromarray(photo).save(tmp_path / "cat.png")
    monkeypatch.chdir(tmp_path)
    args = ["run", str(path), str(tmp_path / "cat.png"), "--json", "--model", SPEC]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)["runs"][0]["boxes"]
    x = model.prepare(photo)
    assert model.decoder is not None
    int8 = detect(model.decoder, run_int8(qgraph, [x])).scaled((320, 320), photo.shape[:2])
    fp32 = detect(model.decoder, mdla_ir.run_float(graph, [x])).scaled((320, 320), (300, 451))
    assert found["int8"] == rows(int8, model.labels or ())
    assert found["fp32"] == rows(fp32, model.labels or ())
    assert [r["label"] for r in found["int8"]] == [model.labels[c] for c in int8.labels[:5]]
    with Image.open(found["png"]) as png:
        assert png.size == (2 * 451 + GAP, 300)
    # run writes into ./mdla-out, never beside the photo
    assert found["png"] == str(Path("mdla-out") / f"cat.{SPEC}.boxes.png")
    assert not list(tmp_path.glob("cat.*.png"))
    Boxes.print(json.loads(result.stdout)["runs"], random_weights=True)  # the table form
    table = capsys.readouterr().out
    assert "random weights: these boxes mean nothing" in table
    assert f"INT8 │ {found['int8'][0]['label']}" in table
    assert f"FP32 │ {found['fp32'][0]['label']}" in table


class _TwoLevels(nn.Module):
    """A small backbone with two feature levels (strides 8 and 16), as a user's SSD has."""

    out_channels = (8, 16)

    def __init__(self) -> None:
        super().__init__()
        conv = lambda i, o: nn.Sequential(  # noqa: E731
            nn.Conv2d(i, o, 3, 2, 1), nn.BatchNorm2d(o), nn.ReLU()
        )
        self.c1 = nn.Sequential(conv(3, 8), conv(8, 8), conv(8, 8))
        self.c2 = conv(8, 16)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        f1 = self.c1(x)
        return {"0": f1, "1": self.c2(f1)}


def test_another_ssd_configuration_decodes_as_torchvision() -> None:
    """Not only SSDlite's numbers: a plain SSDHead, a non-square 48x64 input, explicit steps,
    unclipped default boxes, other aspect ratios and 4 classes; the cut compiles to mtk-mdla."""
    torch.manual_seed(1)
    gen = DefaultBoxGenerator([[2], [2, 3]], steps=[8, 16], clip=False)
    ssd = SSD(_TwoLevels(), gen, (64, 48), num_classes=4, score_thresh=0.05, nms_thresh=0.3)
    heads = SSDHeads(ssd)
    recalibrate_batchnorm(heads, shape=(2, 3, 48, 64), steps=2)
    ssd.eval()
    assert heads.decoder.image_size == (48, 64)
    assert heads.decoder.steps == (8, 16)
    image = torch.rand(3, 60, 100, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        want = ssd([image])[0]
        transformed = ssd.transform([image])[0].tensors
    assert tuple(transformed.shape) == (1, 3, 48, 64)
    got = detect(heads.decoder, _torch_outputs(heads, transformed)).scaled((48, 64), (60, 100))
    assert 0 < len(got) == len(want["scores"])
    np.testing.assert_array_equal(got.labels, want["labels"].numpy())
    np.testing.assert_allclose(got.scores, want["scores"].numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got.boxes, want["boxes"].numpy(), rtol=0, atol=1e-3)
    graph = mdla_ir.from_torch(heads.eval(), (transformed,), name="tiny_ssd")
    legal = mdla_legalize.legalize(graph, mdla_legalize.load_target("mdla3.5"))
    assert mdla_legalize.explain(legal, mdla_legalize.load_target("mdla3.5")).all_supported
