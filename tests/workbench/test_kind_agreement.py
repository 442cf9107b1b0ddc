"""Agreement with FP32 by output kind, on cases small enough to compute by hand: box F1 and IoU
of one-to-one matches, keypoint distance and OKS, a raw output's SQNR; and `validate` and `tune`
reporting them (never "no agreement metric" for a keypoint head or a regressor)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import mdla_compile
import mdla_ir
import mdla_quant
from mdla_compile import CompileOptions
from mdla_compile.contract import Contract
from mdla_zoo.detection import Detections
from mdla_zoo.yolo import YoloDecoder
from workbench import agreement as ag
from workbench import validation
from workbench.cli import app
from workbench.tui import outputs as tui_outputs
from workbench.tui import restore
from workbench.tui.state import tui_options

Array = np.ndarray[Any, Any]
HERE = Path(__file__).parent
SEG = f"{HERE / 'seg_model.py'}:segmenter"  # outputs `out` [1, 5, 64, 64] and `aux` [1, 3, 32, 32]


def dets(*rows: tuple[float, float, float, float, int]) -> Detections:
    boxes = np.array([r[:4] for r in rows], np.float32).reshape(-1, 4)
    labels = np.array([r[4] for r in rows], np.int64)
    return Detections(boxes, np.linspace(0.9, 0.5, len(rows)), labels)


def test_boxes_match_one_to_one_by_class_and_iou() -> None:
    f = dets((0, 0, 10, 10, 1), (20, 20, 30, 30, 2))
    q = dets((0, 0, 10, 5, 1), (20, 20, 30, 30, 3), (50, 50, 60, 60, 1))
    m = ag.match_boxes(f, q)  # IoU 50/100 = 0.5 (kept); the same box of class 3 is no match
    assert (m.fp32, m.int8, m.matched) == (2, 3, 1)
    assert m.f1 == pytest.approx(2 * 1 / 5)
    assert m.mean_iou == pytest.approx(0.5)
    m = ag.match_boxes(dets((0, 0, 10, 10, 1)), dets((0, 0, 10, 4.9, 1)))  # IoU 0.49
    assert (m.matched, m.f1, m.mean_iou) == (0, 0.0, None)


def test_the_best_iou_is_matched_first() -> None:
    """One INT8 box overlaps two FP32 boxes: it goes to the one of IoU 90/100 (not 80/90)."""
    f = dets((0, 0, 10, 8, 1), (0, 0, 10, 10, 1))
    m = ag.match_boxes(f, dets((0, 0, 10, 9, 1)))
    assert m.matched == 1
    assert m.f1 == pytest.approx(2 / 3)
    assert m.mean_iou == pytest.approx(0.9)
    assert ag.match_boxes(dets(), dets()).f1 == 1.0  # nothing found by either: agreement


def test_keypoints_from_heatmaps() -> None:
    """K = 2 on a 4 x 5 map: keypoint 0 at the same cell, keypoint 1 one row lower (d = 1):
    mean distance 0.5, OKS (1 + exp(-1 / (2 * 20 * 0.01))) / 2."""
    f, q = np.zeros((1, 2, 4, 5)), np.zeros((1, 2, 4, 5))
    f[0, 0, 2, 1] = q[0, 0, 2, 1] = 1.0  # (x 1, y 2)
    f[0, 1, 0, 4] = 1.0  # (x 4, y 0)
    q[0, 1, 1, 4] = 1.0  # (x 4, y 1)
    k = ag.match_keypoints(f, q)
    assert k.mean_distance == pytest.approx(0.5)
    assert k.oks == pytest.approx((1 + math.exp(-2.5)) / 2)  # 0.541042


def test_keypoints_from_coordinates() -> None:
    """[1, K, 3] (x, y, score): the FP32 keypoints span 4 x 2 (area 8); one moves 0.4:
    mean distance 0.2, OKS (1 + exp(-0.16 / (2 * 8 * 0.01))) / 2 = (1 + e^-1) / 2."""
    f = np.array([[[0.0, 0.0, 0.9], [4.0, 2.0, 0.8]]])
    q = np.array([[[0.0, 0.4, 0.1], [4.0, 2.0, 0.2]]])  # the score column is not a position
    k = ag.match_keypoints(f, q)
    assert k.mean_distance == pytest.approx(0.2)
    assert k.oks == pytest.approx((1 + math.exp(-1)) / 2)  # 0.683940


def _sqnr_db(f: np.ndarray[Any, Any], q: np.ndarray[Any, Any]) -> float:
    one = validation.Agreement()  # a raw output's SQNR is the accumulated validate one
    one.add(f, q)
    return one.sqnr_db


def test_raw_sqnr_and_top1() -> None:
    assert _sqnr_db(np.array([3.0, 4.0]), np.array([3.0, 3.0])) == pytest.approx(
        10 * math.log10(25)  # 13.98 dB
    )
    assert _sqnr_db(np.ones(3), np.ones(3)) == math.inf
    assert ag.top1(np.array([[0.1, 0.9]]), np.array([[0.2, 0.8]])) == 1.0
    assert ag.top1(np.array([[0.1, 0.9]]), np.array([[0.9, 0.8]])) == 0.0


def test_image_score_decodes_yolo_boxes() -> None:
    """A YOLO head at 160 x 160: the INT8 box is the FP32 box moved 5 px right: IoU
    900 / 1100; F1 1.0 (one box each, matched)."""
    f = np.zeros((1, 84, 525), np.float32)
    f[0, :4, 7] = (80, 40, 50, 20)  # cx cy w h: x 55..105, y 30..50
    f[0, 4 + 15, 7] = 0.9
    q = f.copy()
    q[0, 0, 7] = 85
    decoder = YoloDecoder((160, 160), 80)
    share, iou = validation.image_score("boxes", [f], [q], decoder)
    assert share == 1.0
    assert iou == pytest.approx(900 / 1100)
    q[0, 4 + 15, 7], q[0, 4 + 16, 7] = 0.0, 0.9  # another class: no match
    assert validation.image_score("boxes", [f], [q], decoder) == (0.0, None)


@pytest.fixture(scope="module")
def keypoint_seg() -> mdla_compile.Compiled:
    """The segmenter with its half-resolution `aux` head named a keypoint head."""
    return mdla_compile.compile(
        CompileOptions(
            SEG,
            contract=Contract(input_shape=(1, 3, 64, 64)),
            calib="random",
            count=2,
            output_kinds=("aux=keypoints",),
        )
    )


def test_validate_scores_a_keypoint_head(keypoint_seg: mdla_compile.Compiled) -> None:
    x = np.random.default_rng(3).uniform(-1, 1, (1, 3, 64, 64)).astype(np.float32)
    v = validation.validate(keypoint_seg, [("x", x)], None)
    assert [o.kind for o in v.outputs] == ["classmap", "keypoints"]
    f = mdla_ir.run_float(keypoint_seg.source.graph, [x])[1]
    q = mdla_quant.run_int8(keypoint_seg.qgraph, [x])[1]
    want = ag.match_keypoints(np.asarray(f), np.asarray(q))
    assert v.outputs[1].agreement("ref") == pytest.approx(want.oks)
    assert v.outputs[1].detail("ref") == pytest.approx(want.mean_distance)
    line = validation.summary_lines(v)[1]
    assert line.startswith(f"INT8 reference `aux` [1, 3, 32, 32]: keypoint OKS {want.oks:.3f}")
    assert f"mean distance {want.mean_distance:.2f}, cosine " in line


def test_tune_scores_a_regressor_by_sqnr() -> None:
    """`out` named raw: tune's metric is the output's SQNR, never "no agreement metric"."""
    result = CliRunner().invoke(
        app,
        [
            *("tune", SEG, "--input-shape", "1,3,64,64", "--count", "2", "--held-out", "1"),
            *("--method", "minmax", "--json", "--output-kind", "out=raw"),
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    for which in ("new", "previous"):
        score = doc[which]["kind_agreement"]
        assert doc[which]["output_kind"] == "raw"
        assert score["kind"] == "raw"
        assert 5 < score["sqnr_db"] < 80
        assert f"output SQNR {score['sqnr_db']:.1f} dB" in result.stderr
    assert "no agreement metric" not in result.stderr


def test_a_mdla_opened_in_the_tui_keeps_its_kinds(
    keypoint_seg: mdla_compile.Compiled, tmp_path: Path
) -> None:
    """Calibrate re-quantizes an opened .mdla: its recorded kinds come back as overrides."""
    manifest = keypoint_seg.save(tmp_path / "kp.mdla")
    options = restore.recorded_options(manifest, tui_options(SEG))
    assert options.output_kinds == ("out=classmap", "aux=keypoints")


def test_the_tui_run_screen_names_keypoints() -> None:
    """The Run screen's line for a keypoint head: the first heatmaps' argmax cells as (x, y)."""
    maps = np.zeros((1, 4, 8, 8), np.float32)
    for k, (x, y) in enumerate([(1, 2), (7, 0), (3, 3), (0, 7)]):
        maps[0, k, y, x] = 1.0
    manifest = SimpleNamespace(provenance=SimpleNamespace(labels=()))
    line = tui_outputs.summary("keypoints", manifest, maps, [maps], None)  # type: ignore[arg-type]
    assert line == "4 keypoints (x, y): (1, 2) (7, 0) (3, 3) +1 more"
