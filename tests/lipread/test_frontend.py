"""Other clip lengths through a front-end compiled for a static length."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lipread.config import LipNetConfig
from lipread.frontend import HALO, pad_clip, run_chunked, windows
from lipread.model import FrontEnd


def temporal_fe(x: np.ndarray) -> np.ndarray:
    """A stand-in with the STCNN's temporal reach: three zero-padded k=3 stages (±3 frames)."""
    y = x.astype(np.float64)
    for _ in range(3):
        p = np.pad(y, ((0, 0), (0, 0), (1, 1), (0, 0), (0, 0)))
        y = np.tanh(p[:, :, :-2] + 2 * p[:, :, 1:-1] - 0.5 * p[:, :, 2:] + 0.1)
    return y


@pytest.mark.parametrize("length", [76, 100, 150, 151, 300])
def test_chunking_with_halo_is_exact(length: int) -> None:
    x = np.random.default_rng(length).normal(size=(1, 2, length, 3, 4))
    calls: list[int] = []

    def fn(chunk: np.ndarray) -> np.ndarray:
        calls.append(chunk.shape[2])
        return temporal_fe(chunk)

    out = run_chunked(fn, x, frames=20)
    assert out.shape[2] == length
    assert set(calls) == {20}
    assert np.array_equal(out, temporal_fe(x))


def test_windows_cover_each_frame_once() -> None:
    for length in (21, 40, 77, 150):
        ws = windows(length, 20)
        kept = [t for _, a, b in ws for t in range(a, b)]
        assert kept == list(range(length))
        for start, a, b in ws:
            inner_left = start > 0
            inner_right = start + 20 < length
            assert not inner_left or a - start >= HALO
            assert not inner_right or start + 20 - b >= HALO


def test_short_clip_is_padded_with_its_last_frame() -> None:
    x = np.random.default_rng(0).normal(size=(1, 2, 12, 3, 4))
    padded = pad_clip(x, 20)
    assert padded.shape[2] == 20
    assert np.array_equal(padded[:, :, 12:], np.repeat(x[:, :, 11:12], 8, axis=2))
    out = run_chunked(temporal_fe, x, frames=20)
    ref = temporal_fe(x)
    assert out.shape == ref.shape
    assert np.array_equal(out[:, :, : 12 - HALO], ref[:, :, : 12 - HALO])  # exact away from the end


def test_torch_frontend_chunked_matches_one_long_run() -> None:
    torch.manual_seed(0)
    cfg = LipNetConfig(height=16, width=32, conv1=4, conv2=4, conv3=4, hidden=8)
    fe = FrontEnd(cfg).eval()
    x = torch.rand(1, 3, 40, 16, 32)

    def fn(chunk: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            out: np.ndarray = fe(torch.from_numpy(chunk)).numpy()
        return out

    with torch.no_grad():
        ref = fe(x).numpy()
    out = run_chunked(fn, x.numpy(), frames=15)
    assert np.abs(out - ref).max() < 1e-6
