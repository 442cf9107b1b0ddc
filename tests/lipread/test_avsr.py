"""The auto-avsr visual front-end: its keys, the checkpoint loader, the device split, INT8."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

import mdla_runtime
from lipread.avsr import (
    AvsrFrontEnd,
    DeviceTrunk,
    StemConv,
    avsr_shapes,
    bn_stats_from,
    load_avsr,
    to_avsr_input,
)
from lipread.avsr_npu import calibration_windows, compile_avsr, frames_batch, npu_avsr
from lipread.cli import app
from lipread.errors import CheckpointError
from lipread.render import render_clip, spoken_sentence

SAMPLE = sorted((Path(__file__).parents[2] / "apps/lipread/samples").glob("synthetic_*.mp4"))[0]
runner = CliRunner()


def clip(speaker: int, frames: int = 4) -> np.ndarray:
    return to_avsr_input(render_clip(spoken_sentence(speaker, 0), speaker, 0, frames=frames))


@pytest.fixture(scope="module")
def frontend() -> AvsrFrontEnd:
    """Random weights (seed 0), BatchNorm statistics from nine synthetic mouth clips."""
    torch.manual_seed(0)
    return bn_stats_from(AvsrFrontEnd(), [clip(20000 + i) for i in range(9)])


def test_the_published_keys_and_shapes() -> None:
    shapes = avsr_shapes()
    assert shapes["frontend3D.0.weight"] == (64, 1, 5, 7, 7)
    assert shapes["frontend3D.1.running_var"] == (64,)
    assert shapes["trunk.layer2.0.downsample.0.weight"] == (128, 64, 1, 1)
    assert shapes["trunk.layer4.1.conv2.weight"] == (512, 512, 3, 3)
    assert "trunk.layer1.0.downsample.0.weight" not in shapes  # 64 -> 64, stride 1
    params = sum(int(np.prod(s)) for k, s in shapes.items() if "num_batches" not in k)
    assert params == 11_192_384


def test_loader_reads_a_whole_model_and_names_every_bad_key(tmp_path: Path) -> None:
    fe = AvsrFrontEnd()
    whole = {f"encoder.frontend.{k}": v for k, v in fe.state_dict().items()}
    whole["decoder.embed.0.weight"] = torch.zeros(5000, 256)  # the back end: ignored
    torch.save({"state_dict": whole}, tmp_path / "model.pt")
    loaded = load_avsr(tmp_path / "model.pt")
    key = "trunk.layer3.1.conv1.weight"
    assert torch.equal(loaded.state_dict()[key], fe.state_dict()[key])
    bad = {k: v for k, v in fe.state_dict().items() if k != "trunk.layer1.0.bn1.weight"}
    bad["trunk.layer5.0.conv1.weight"] = torch.zeros(1)
    bad["frontend3D.0.weight"] = torch.zeros(64, 3, 5, 7, 7)
    torch.save(bad, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError) as err:
        load_avsr(tmp_path / "bad.pt")
    text = str(err.value)
    assert "missing trunk.layer1.0.bn1.weight" in text
    assert "unexpected trunk.layer5.0.conv1.weight" in text
    assert "mis-shaped frontend3D.0.weight (64, 3, 5, 7, 7) (expected (64, 1, 5, 7, 7))" in text


def test_the_device_split_is_the_published_module(frontend: AvsrFrontEnd) -> None:
    """StemConv (BN folded) -> frames as a batch -> DeviceTrunk (PAD(SILU_MIN) + VALID pool)
    equals the module: the fold and the pad trick are exact, up to float rounding."""
    x = torch.from_numpy(clip(20009))
    with torch.no_grad():
        ref = frontend(x)[0].numpy()
        mid = frames_batch(StemConv(frontend)(x).numpy())
        split = DeviceTrunk(frontend)(torch.from_numpy(mid)).numpy()
    assert np.abs(split - ref).max() <= 1e-4 * np.abs(ref).max()


def test_int8_on_the_emulator_matches_fp32(frontend: AvsrFrontEnd) -> None:
    """Random weights, BN statistics from data, calibrated on 8 clips, read on a 9th: the
    INT8 features (stem and trunk on mtk-mdla) against FP32 torch."""
    calib = [clip(20000 + i) for i in range(8)]
    fn, latencies = npu_avsr(frontend, "emu", frames=4, calibration=calib)
    x = clip(20008)
    got = fn(x)[0].T
    with torch.no_grad():
        ref = frontend(torch.from_numpy(x))[0].numpy()
    cos = float((got * ref).sum() / np.linalg.norm(got) / np.linalg.norm(ref))
    assert cos >= 0.99, cos
    assert got.shape == (4, 512)
    assert latencies[0] > 0


def test_features_command(tmp_path: Path, frontend: AvsrFrontEnd) -> None:
    torch.save(frontend.state_dict(), tmp_path / "avsr.pt")
    out = tmp_path / "f.npy"
    args = ["features", str(SAMPLE), "-o", str(out), "--frontend", "avsr"]
    result = runner.invoke(app, [*args, "--weights", str(tmp_path / "avsr.pt"), "--fp32"])
    assert result.exit_code == 0, result.output
    assert np.load(out).shape == (75, 512)
    assert runner.invoke(app, args).exit_code == 3  # no weights ship
    result = runner.invoke(app, ["features", str(SAMPLE), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert np.load(out).shape == (75, 24 * 2 * 4)  # the demo LipNet's STCNN, flattened
    result = runner.invoke(app, ["read", str(SAMPLE), "--frontend", "avsr"])
    assert result.exit_code == 3
    assert "lipread features" in result.stderr


def test_calibration_reads_every_window(
    frontend: AvsrFrontEnd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A clip's later windows are calibrated too (v2 read only the first `frames` frames):
    calibrated on one 8-frame clip whose last 4 frames are twice as bright, the stem's input
    range covers them; the windows tile the clip, the last padded by its final frame."""
    x = clip(20001, 8)
    bright = x.copy()
    bright[:, :, 4:] = 2 * np.abs(x[:, :, 4:]).max()
    parts = calibration_windows(bright, 3)
    assert [p.shape[2] for p in parts] == [3, 3, 3]
    np.testing.assert_array_equal(np.concatenate(parts, axis=2)[:, :, :8], bright)
    np.testing.assert_array_equal(parts[-1][:, :, 2], bright[:, :, 7])
    monkeypatch.setenv("LIPREAD_CACHE", str(tmp_path))  # not the 8-clip compile cached above
    stem, _ = compile_avsr(frontend, [bright], frames=4)
    spec = mdla_runtime.load(stem).inputs[0]
    top = spec.scale * (127 - spec.zero_point)
    assert top >= 0.9 * float(bright.max()), (top, float(bright.max()))
