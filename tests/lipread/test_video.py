from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from lipread.errors import VideoError
from lipread.render import render_clip
from lipread.video import read_video, resample, write_video


def test_roundtrip_h264(tmp_path: Path) -> None:
    clip = render_clip(("lay", "red"), 3, 1, frames=10)
    write_video(tmp_path / "c.mp4", clip)
    back = read_video(tmp_path / "c.mp4")
    assert back.shape == clip.shape
    assert back.flags.c_contiguous
    assert np.abs(back.astype(float) - clip).mean() < 6.0


@pytest.mark.parametrize(("fps", "n", "expected"), [(50, 20, 10), (10, 4, 10), (25, 7, 7)])
def test_other_frame_rates_are_resampled_to_25(
    tmp_path: Path, fps: int, n: int, expected: int
) -> None:
    frames = np.zeros((n, 16, 16, 3), np.uint8)
    frames[:, :, :, 0] = (np.arange(n) * 10)[:, None, None]
    write_video(tmp_path / "r.mp4", frames, fps=fps, crf=0)
    back = read_video(tmp_path / "r.mp4")
    assert len(back) == expected


def test_resample_sample_and_hold() -> None:
    frames = np.arange(4).reshape(4, 1, 1, 1)
    out = resample(frames, np.array([0.0, 0.1, 0.2, 0.3]))  # 10 fps -> 25 fps
    assert out[:, 0, 0, 0].tolist() == [0, 0, 0, 1, 1, 2, 2, 2, 3, 3]


def test_not_a_video(tmp_path: Path) -> None:
    bad = tmp_path / "notes.mp4"
    bad.write_text("this is not a video\n")
    with pytest.raises(VideoError, match="not a readable video"):
        read_video(bad)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(VideoError, match="no such file"):
        read_video(tmp_path / "nope.mp4")


def write_empty_video(path: Path) -> None:
    """An AVI with one MPEG-4 video stream and no frames in it."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream("mpeg4", rate=Fraction(25))
        stream.width, stream.height, stream.pix_fmt = 16, 16, "yuv420p"
        out.start_encoding()


def test_zero_frames(tmp_path: Path) -> None:
    write_empty_video(tmp_path / "empty.avi")
    with pytest.raises(VideoError, match="zero frames"):
        read_video(tmp_path / "empty.avi")


def test_no_video_stream(tmp_path: Path) -> None:
    with av.open(str(tmp_path / "audio.m4a"), "w") as out:  # sound only
        stream = out.add_stream("aac", rate=16000)
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 4096), np.float32), "fltp", "mono")
        frame.sample_rate = 16000
        out.mux(stream.encode(frame))
        out.mux(stream.encode())
    with pytest.raises(VideoError, match="no video stream"):
        read_video(tmp_path / "audio.m4a")


def test_odd_sizes_are_refused_for_h264(tmp_path: Path) -> None:
    with pytest.raises(VideoError, match="even"):
        write_video(tmp_path / "odd.mp4", np.zeros((2, 15, 16, 3), np.uint8))


@pytest.mark.parametrize("suffix", [".png", ".jpg", ".gif"])
def test_a_still_picture_is_not_read_as_a_video(tmp_path: Path, suffix: str) -> None:
    from PIL import Image

    path = tmp_path / f"face{suffix}"
    Image.fromarray(render_clip(("lay",), 3, 1, frames=1)[0]).save(path)
    with pytest.raises(VideoError, match="still picture"):
        read_video(path)


def test_a_one_by_one_picture_is_refused(tmp_path: Path) -> None:
    from PIL import Image

    path = tmp_path / "dot.png"
    Image.fromarray(np.zeros((1, 1, 3), np.uint8)).save(path)
    with pytest.raises(VideoError, match="still picture"):
        read_video(path)


def test_tiny_frames_are_refused(tmp_path: Path) -> None:
    write_video(tmp_path / "tiny.mp4", np.zeros((5, 8, 8, 3), np.uint8))
    with pytest.raises(VideoError, match="8x8; a mouth needs at least 16x16"):
        read_video(tmp_path / "tiny.mp4")


def test_a_single_frame_video_is_refused(tmp_path: Path) -> None:
    write_video(tmp_path / "one.mp4", render_clip(("lay",), 3, 1, frames=1))
    with pytest.raises(VideoError, match="1 frame"):
        read_video(tmp_path / "one.mp4")


def test_a_directory_is_named_as_such(tmp_path: Path) -> None:
    with pytest.raises(VideoError, match="is a directory"):
        read_video(tmp_path)


def test_large_frames_are_scaled_down_while_decoding(tmp_path: Path) -> None:
    """A 4K clip decodes at MAX_SIDE on its longer side: memory bounded, aspect kept."""
    frames = np.zeros((3, 2160, 3840, 3), np.uint8)
    frames[:, :1080] = 200  # top half bright: survives the scaling
    write_video(tmp_path / "uhd.mp4", frames, crf=30)
    back = read_video(tmp_path / "uhd.mp4")
    assert back.shape == (3, 720, 1280, 3)
    assert back[:, :300].mean() > 150 > 50 > back[:, 420:].mean()


def test_decoded_bytes_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import lipread.video

    monkeypatch.setattr(lipread.video, "MAX_BYTES", 16 * 16 * 3 * 4)  # four 16x16 frames
    write_video(tmp_path / "long.mp4", np.zeros((10, 16, 16, 3), np.uint8))
    with pytest.raises(
        VideoError,
        match=r"3840 bytes of decoded frames after 5 frames \(16x16\), over the 3072 bytes",
    ):
        read_video(tmp_path / "long.mp4")


def write_sparse_video(path: Path, seconds_apart: int, n: int = 3, side: int = 320) -> None:
    """`n` frames of `side`x`side`, one every `seconds_apart` seconds (a few KB on disk)."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream("mpeg4", rate=Fraction(25))
        stream.width, stream.height, stream.pix_fmt = side, side, "yuv420p"
        stream.codec_context.time_base = Fraction(1, 25)
        for i in range(n):
            frame = av.VideoFrame.from_ndarray(np.full((side, side, 3), 40 * i, np.uint8), "rgb24")
            frame.pts, frame.time_base = i * seconds_apart * 25, Fraction(1, 25)
            out.mux(stream.encode(frame))
        out.mux(stream.encode())


@pytest.mark.parametrize("seconds_apart", [400, 4 * 3600])
def test_frames_far_apart_are_refused_before_resampling(tmp_path: Path, seconds_apart: int) -> None:
    """3 frames minutes or hours apart would resample to 30,000+ frames (gigabytes): refused
    from the timestamps, before any of them is allocated."""
    path = tmp_path / "sparse.mkv"
    write_sparse_video(path, seconds_apart)
    assert path.stat().st_size < 20_000
    n = 3 * seconds_apart * 25
    with pytest.raises(
        VideoError,
        match=rf"sparse.mkv: 3 frames over {2 * seconds_apart}.0 s resample to {n} frames at 25 "
        r"fps, \d+ MiB with the decoded ones, over the 3072 MiB budget .* LIPREAD_MAX_VIDEO_MB",
    ):
        read_video(path)


def test_the_budget_counts_the_resampled_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """3 frames 1 s apart at 16x16 are 76 frames at 25 fps: 79 frames of 768 bytes in all."""
    write_sparse_video(tmp_path / "s.mkv", 1, side=16)
    monkeypatch.setenv("LIPREAD_MAX_VIDEO_MB", "1")
    assert read_video(tmp_path / "s.mkv").shape == (75, 16, 16, 3)
    import lipread.video

    monkeypatch.delenv("LIPREAD_MAX_VIDEO_MB")
    monkeypatch.setattr(lipread.video, "MAX_BYTES", 78 * 768 - 1)
    with pytest.raises(VideoError, match="resample to 75 frames"):
        read_video(tmp_path / "s.mkv")


@pytest.mark.parametrize("value", ["0", "-3", "lots", "1e9"])
def test_a_bad_budget_override_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    write_sparse_video(tmp_path / "s.mkv", 1, side=16)
    monkeypatch.setenv("LIPREAD_MAX_VIDEO_MB", value)
    with pytest.raises(VideoError, match=f"LIPREAD_MAX_VIDEO_MB='{value}': expected a whole"):
        read_video(tmp_path / "s.mkv")
