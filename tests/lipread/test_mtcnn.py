"""MTCNN for `--roi auto` on the NPU (lipread.mtcnn, lipread.mtcnn_npu): the numpy cascade
reproduces facenet-pytorch's detections with its float nets; the compiled pyramid runs bit-exact
on the emulator; the NPU detections, landmarks and tracked mouth boxes agree with the float
reference on a real face (the astronaut photo)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import skimage.data
import torch
from typer.testing import CliRunner

import mdla_runtime
from lipread.cli import app
from lipread.image import resize
from lipread.mtcnn import area_resize, detect_faces, iou, nms, pyramid
from lipread.mtcnn_npu import (
    CascadeDetector,
    compile_mtcnn,
    detect_size,
    float_nets,
    mtcnn_jobs,
    npu_nets,
    quantized,
    track_batched,
)
from lipread.roi import boxes_from_corners
from lipread.track import MtcnnDetector, track_corners
from lipread.video import write_video
from mdla_quant import QuantConfig, quantize, run_int8
from mdla_runtime.format.container import TENSOR_QUANT8_ASYMM_SIGNED, TENSOR_QUANT16_SYMM

SIZE = (180, 320)  # frames small enough to need no downscale: the detector sees them as is


def face_frames(n: int) -> np.ndarray:
    """n frames (180x320) of the astronaut's head and shoulders (150 px) drifting sideways."""
    head = skimage.data.astronaut()[0:300, 80:380]
    head = np.clip(resize(head[None], (150, 150))[0], 0, 255).astype(np.uint8)
    out = np.full((n, *SIZE, 3), 70, np.uint8)
    for t in range(n):
        x, y = int(80 + 40 * np.sin(t / 9)), int(12 + 6 * np.sin(t / 7))
        out[t, y : y + 150, x : x + 150] = head
    return out


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.getbasetemp() / "lipread-cache"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LIPREAD_CACHE", str(path))
        compile_mtcnn(SIZE)
        yield path


@pytest.fixture(scope="module")
def latencies() -> list[float]:
    return []


@pytest.fixture(scope="module")
def nets(cache: Path, latencies: list[float]) -> tuple[CascadeDetector, CascadeDetector]:
    os.environ["LIPREAD_CACHE"] = str(cache)
    return (
        CascadeDetector(float_nets(), SIZE),
        CascadeDetector(npu_nets(SIZE, "emu", latencies), SIZE),
    )


def test_area_resize_is_torchs_area_interpolation() -> None:
    img = np.random.default_rng(0).uniform(0, 255, (37, 53, 3)).astype(np.float32)
    for size in ((24, 24), (11, 29), (37, 53)):
        want = torch.nn.functional.interpolate(
            torch.from_numpy(img).permute(2, 0, 1)[None], size=size, mode="area"
        )[0].permute(1, 2, 0)
        np.testing.assert_allclose(area_resize(img, size), want.numpy(), atol=1e-3)


def test_pyramid_and_nms() -> None:
    levels = pyramid(180, 320)
    assert levels[0] == (0.6, (109, 193))  # 12 / 20, int(180 * 0.6 + 1)
    assert min(levels[-1][1]) * 1 >= 12
    assert len(levels) == 7
    boxes = np.array([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30], [0, 0, 10, 5.0]])
    scores = np.array([0.9, 0.8, 0.7, 0.95])
    assert nms(boxes, scores, 0.5).tolist() == [3, 0, 2]  # IoU(0,1) = 81/119 > 0.5
    # "min": overlap over the smaller box (+1 areas): box 3 (11x6) lies inside box 0 and
    # shares 10x5 = 50/66 > 0.7 of its area with box 1, so both go
    assert nms(boxes, scores, 0.7, "min").tolist() == [3, 2]
    assert nms(boxes, scores, 0.8, "min").tolist() == [3, 1, 2]


def test_cascade_with_float_nets_is_facenet_pytorch(
    nets: tuple[CascadeDetector, CascadeDetector],
) -> None:
    """The numpy cascade over facenet's float nets == facenet's own `MTCNN.detect`."""
    frame = face_frames(1)[0]
    boxes, points = detect_faces(frame, nets[0].nets)
    found = MtcnnDetector().mtcnn.detect(frame, landmarks=True)
    want, probs, marks = (np.asarray(a, np.float64) for a in found)
    assert len(boxes) == len(want) >= 1
    np.testing.assert_allclose(boxes[:, :4], want, atol=0.05)
    np.testing.assert_allclose(boxes[:, 4], probs, atol=1e-5)
    np.testing.assert_allclose(points, marks, atol=0.05)


def test_pyramid_graph_is_bit_exact_on_the_emulator(cache: Path, tmp_path: Path) -> None:
    """The multi-level P-Net graph (one input per level): emulator raw == run_int8."""
    name, module, calib = mtcnn_jobs(SIZE)[0]
    assert name == "pnet"
    assert len(calib[0]) == len(pyramid(*SIZE))
    qgraph = quantized(name, module, calib[:1])
    manifest = mdla_runtime.load(mdla_runtime.save(qgraph, tmp_path / "pnet.mdla"))
    x = calib[-1]
    got = mdla_runtime.open_target("emu").run(manifest, x).raw_outputs
    want = run_int8(qgraph, x, raw=True)
    assert len(got) == 2 * len(x)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a.reshape(b.shape), b)


def test_onet_box_head_is_int16_and_bit_exact_on_the_emulator(cache: Path, tmp_path: Path) -> None:
    """O-Net's box regression head (dense5, its PRELU, dense6_2) is int16 in the shipped
    O-Net (`box_head`), the box output TENSOR_QUANT16_SYMM; the emulator gives run_int8's
    codes on a calibration batch. The other two outputs stay int8."""
    name, module, calib = mtcnn_jobs(SIZE)[2]
    assert name == "onet"
    manifest = mdla_runtime.load(next(cache.glob("*.onet-*.mdla")))
    quant = manifest.provenance.quant
    assert quant is not None
    assert quant.a16 == (
        "dense5.as_image", "dense5", "prelu5", "prelu5.as_image.1", "dense6_2.as_image", "dense6_2"
    )  # fmt: skip
    types = [manifest.operands[o.operand].type for o in manifest.outputs]
    assert types == [TENSOR_QUANT16_SYMM, TENSOR_QUANT8_ASYMM_SIGNED, TENSOR_QUANT8_ASYMM_SIGNED]
    qgraph = quantized(name, module, calib[:1])
    small = mdla_runtime.load(mdla_runtime.save(qgraph, tmp_path / "onet.mdla"))
    x = calib[-1]
    got = mdla_runtime.open_target("emu").run(small, x).raw_outputs
    for a, b in zip(got, run_int8(qgraph, x, raw=True), strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a.reshape(b.shape), b)


def test_pnet_pyramid_compiles_alike_through_torch_export_and_fx() -> None:
    """The P-Net pyramid (one net's parameters read on every level) compiles through
    torch.export (which lifts each parameter once for all levels) to the same ops and the same
    int8 outputs as through torch.fx (a copy per level), the path the default import takes."""
    import mdla_ir
    import mdla_legalize
    from mdla_ir.devices import DEFAULT_TARGET

    name, module, calib = mtcnn_jobs(SIZE)[0]
    example = tuple(torch.from_numpy(x) for x in calib[0])
    assert mdla_ir.import_torch(module, example).path == "fx"
    graph = mdla_ir.from_torch(module, example, name="pnet_export", path="export")
    legal = mdla_legalize.legalize(graph, mdla_legalize.load_target(DEFAULT_TARGET))
    by_export = quantize(legal, calib[:2], QuantConfig(method="minmax"))
    default = quantized(name, module, calib[:2])
    assert [(o.kind, o.attrs) for o in default.ops] == [(o.kind, o.attrs) for o in by_export.ops]
    for a, b in zip(run_int8(default, calib[-1]), run_int8(by_export, calib[-1]), strict=True):
        np.testing.assert_array_equal(a, b)


def test_npu_detections_match_float(
    nets: tuple[CascadeDetector, CascadeDetector], latencies: list[float]
) -> None:
    """Per frame: the largest face's box IoU >= 0.85 and landmarks within 4% of the box width
    of the float reference; one P-Net call per detection (the whole pyramid)."""
    ref, npu = nets
    before = len(latencies)
    for frame in face_frames(40)[::10]:
        f_boxes, f_pts = detect_faces(frame, ref.nets)
        n_boxes, n_pts = detect_faces(frame, npu.nets)
        assert len(f_boxes) >= 1
        assert len(n_boxes) >= 1
        width = f_boxes[0, 2] - f_boxes[0, 0]
        assert iou(f_boxes[0], n_boxes[0]) >= 0.85
        dist = np.linalg.norm(f_pts[0] - n_pts[0], axis=1)
        assert dist.max() <= 0.04 * width, (dist, width)
    assert 4 * 3 <= len(latencies) - before <= 4 * 4  # P-, R-, O-Net (R-Net chunks of 64)


def test_tracked_mouth_boxes_match_the_float_tracker(
    nets: tuple[CascadeDetector, CascadeDetector], latencies: list[float]
) -> None:
    """A 40-frame clip: the batched NPU tracker's smoothed mouth boxes against the float
    tracker's (`track_corners` with facenet's MTCNN): IoU >= 0.7 on every frame, in a few
    engine calls, not one per frame. The head swings 80 px and back between keyframes 0 and
    25, so the straight-line start loses frames and the nearest-frame rounds must recover
    them (keyframes 0, 25, 39: 3-4 calls each; O-Net rounds: one call each, 4 measured)."""
    frames = face_frames(40)
    detector = MtcnnDetector()
    with detector.one_thread():
        ref = boxes_from_corners(track_corners(frames, detector))
    before = len(latencies)
    got = boxes_from_corners(track_batched(frames, nets[1]))
    calls = len(latencies) - before
    xyxy = np.column_stack([got[:, :2], got[:, :2] + got[:, 2:]])
    want = np.column_stack([ref[:, :2], ref[:, :2] + ref[:, 2:]])
    ious = [iou(a, b) for a, b in zip(xyxy, want, strict=True)]
    assert min(ious) >= 0.7, ious
    assert calls <= 3 * 4 + 6, calls
    assert not np.isnan(track_batched(frames, nets[1])).any()


def test_read_with_roi_auto_runs_the_detector_on_the_target(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`lipread read --roi auto` (not --fp32) finds the face with the cached compiled nets,
    without facenet-pytorch (the float detector cannot run: the target path needs no torch
    MTCNN once compiled)."""
    monkeypatch.setenv("LIPREAD_CACHE", str(cache))
    monkeypatch.setitem(sys.modules, "facenet_pytorch", None)
    video = tmp_path / "face.mp4"
    write_video(video, face_frames(30))
    stamp = {p: p.stat().st_mtime_ns for p in cache.glob("mtcnn-*.mdla")}
    result = CliRunner().invoke(app, ["read", str(video), "--roi", "auto", "--json"])
    assert result.exit_code == 0, result.output
    assert '"roi": "auto"' in result.stdout
    assert stamp
    assert all(p.stat().st_mtime_ns == t for p, t in stamp.items())
    assert detect_size(720, 1280) == (270, 480)


def test_pyramid_module_is_pnet_per_level_with_a_fixed_arity() -> None:
    """`pyramid_module` (built as a torch.fx graph, no generated source): one named input per
    level, outputs P-Net's (reg, prob) per level bit for bit, and it imports through
    `mdla_ir.from_torch` with one graph input per level and two outputs per level."""
    import inspect

    import mdla_ir
    from lipread.errors import UnsupportedError
    from lipread.mtcnn_npu import float_modules, pyramid_module

    pnet = float_modules()[0]
    sizes = [s for _, s in pyramid(*SIZE)][:3]
    module = pyramid_module(pnet, len(sizes))
    assert not module.training
    assert list(inspect.signature(module.forward).parameters) == ["x0", "x1", "x2"]
    rng = np.random.default_rng(1)
    xs = [torch.from_numpy(rng.uniform(-1, 1, (1, 3, *s)).astype(np.float32)) for s in sizes]
    with torch.no_grad():
        got = module(*xs)
        want = [o for x in xs for o in pnet(x)]
    assert len(got) == 2 * len(sizes)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    graph = mdla_ir.from_torch(module, tuple(xs), name="pyr")
    assert len(graph.inputs) == 3
    assert len(graph.outputs) == 6
    with pytest.raises(UnsupportedError, match="at least one level"):
        pyramid_module(pnet, 0)


@pytest.fixture
def no_float_mtcnn(cache: Path, monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """The cached compiled nets, facenet-pytorch blocked (the float detector cannot run) and
    every `roi.mtcnn_corners` call's target recorded."""
    import lipread.roi

    monkeypatch.setenv("LIPREAD_CACHE", str(cache))
    monkeypatch.setitem(sys.modules, "facenet_pytorch", None)
    targets: list[str | None] = []
    real = lipread.roi.mtcnn_corners

    def spy(frames: np.ndarray, on: str | None = None) -> np.ndarray:
        targets.append(on)
        return real(frames, on)

    monkeypatch.setattr(lipread.roi, "mtcnn_corners", spy)
    return targets


def test_features_with_roi_auto_runs_the_detector_on_the_target(
    no_float_mtcnn: list[str | None], tmp_path: Path
) -> None:
    """`lipread features VIDEO --roi auto` finds the mouth with MTCNN's compiled nets on the
    --on target (facenet-pytorch blocked: the float detector would fail); with --fp32 it is
    the float reference, which then says what it needs (exit 2)."""
    video = tmp_path / "face.mp4"
    write_video(video, face_frames(30))
    out = tmp_path / "feats.npy"
    args = ["features", str(video), "--roi", "auto", "-o", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert no_float_mtcnn == ["emu"]
    feats = np.load(out)
    assert feats.shape[0] == 30
    assert np.isfinite(feats).all()
    result = CliRunner().invoke(app, [*args, "--fp32"])
    assert result.exit_code == 2, result.output  # a missing package: the install to change
    assert "facenet-pytorch" in result.stderr
    assert no_float_mtcnn == ["emu", None]


def test_calibrate_with_roi_auto_runs_the_detector_on_the_target(
    no_float_mtcnn: list[str | None], tmp_path: Path
) -> None:
    """`lipread calibrate DIR --roi auto` crops each video's mouth with the compiled nets on
    the --on target (one detector call per video), not the float MTCNN."""
    folder = tmp_path / "faces"
    folder.mkdir()
    write_video(folder / "a.mp4", face_frames(24))
    result = CliRunner().invoke(app, ["calibrate", str(folder), "--roi", "auto", "--on", "emu"])
    assert result.exit_code == 0, result.output
    assert "calibrated on 1 videos" in result.stdout
    assert no_float_mtcnn == ["emu"]
