"""The loader on state dicts with LipNet-PyTorch's exact published keys and shapes."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from lipread.checkpoint import check_state, demo_weights, load_checkpoint, save_npz
from lipread.config import DEMO, PUBLISHED, PUBLISHED_50X100
from lipread.errors import CheckpointError
from lipread.model import LipNet

PUBLISHED_KEYS = {
    "conv1.weight": (32, 3, 3, 5, 5), "conv1.bias": (32,),
    "conv2.weight": (64, 32, 3, 5, 5), "conv2.bias": (64,),
    "conv3.weight": (96, 64, 3, 3, 3), "conv3.bias": (96,),
    "gru1.weight_ih_l0": (768, 3072), "gru1.weight_hh_l0": (768, 256),
    "gru1.bias_ih_l0": (768,), "gru1.bias_hh_l0": (768,),
    "gru1.weight_ih_l0_reverse": (768, 3072), "gru1.weight_hh_l0_reverse": (768, 256),
    "gru1.bias_ih_l0_reverse": (768,), "gru1.bias_hh_l0_reverse": (768,),
    "gru2.weight_ih_l0": (768, 512), "gru2.weight_hh_l0": (768, 256),
    "gru2.bias_ih_l0": (768,), "gru2.bias_hh_l0": (768,),
    "gru2.weight_ih_l0_reverse": (768, 512), "gru2.weight_hh_l0_reverse": (768, 256),
    "gru2.bias_ih_l0_reverse": (768,), "gru2.bias_hh_l0_reverse": (768,),
    "FC.weight": (28, 512), "FC.bias": (28,),
}  # fmt: skip


def published_state() -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    return {k: torch.randn(s, generator=gen) * 0.01 for k, s in PUBLISHED_KEYS.items()}


def test_published_shapes_are_lipnet_pytorch_head() -> None:
    assert PUBLISHED.shapes() == PUBLISHED_KEYS
    assert sum(int(np.prod(s)) for s in PUBLISHED_KEYS.values()) == 6_638_844
    assert {k: tuple(v.shape) for k, v in LipNet().lipnet_state().items()} == PUBLISHED_KEYS


def test_loads_a_published_state_dict(tmp_path: Path) -> None:
    state = published_state()
    torch.save(state, tmp_path / "LipNet_overlap.pt")
    ckpt = load_checkpoint(tmp_path / "LipNet_overlap.pt")
    assert ckpt.config == PUBLISHED
    assert np.array_equal(ckpt.state["FC.bias"], state["FC.bias"].numpy())
    assert len(ckpt.sha256) == 64


def test_module_prefix_of_dataparallel_is_stripped(tmp_path: Path) -> None:
    torch.save({f"module.{k}": v for k, v in published_state().items()}, tmp_path / "dp.pt")
    assert load_checkpoint(tmp_path / "dp.pt").config == PUBLISHED


def test_50x100_checkpoints_are_recognised(tmp_path: Path) -> None:
    state = {k: torch.zeros(s) for k, s in PUBLISHED_50X100.shapes().items()}
    torch.save(state, tmp_path / "old.pt")
    assert load_checkpoint(tmp_path / "old.pt").config == PUBLISHED_50X100
    assert PUBLISHED_50X100.features == 1728


def test_every_bad_key_is_named(tmp_path: Path) -> None:
    state = published_state()
    del state["gru2.bias_hh_l0_reverse"]
    del state["conv3.bias"]
    state["fc.weight"] = state.pop("FC.weight")
    state["conv1.weight"] = torch.zeros(32, 3, 5, 5, 5)
    torch.save(state, tmp_path / "wrong.pt")
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(tmp_path / "wrong.pt")
    msg = str(info.value)
    for name in ("conv3.bias", "gru2.bias_hh_l0_reverse", "FC.weight", "fc.weight"):
        assert name in msg
    assert "conv1.weight (32, 3, 5, 5, 5) (expected (32, 3, 3, 5, 5))" in msg
    assert msg.index("missing") < msg.index("unexpected") < msg.index("mis-shaped")


def test_not_a_checkpoint(tmp_path: Path) -> None:
    (tmp_path / "x.pt").write_bytes(b"\x00garbage")
    with pytest.raises(CheckpointError, match="not a readable PyTorch checkpoint"):
        load_checkpoint(tmp_path / "x.pt")
    torch.save([1, 2], tmp_path / "list.pt")
    with pytest.raises(CheckpointError, match="expected a state dict"):
        load_checkpoint(tmp_path / "list.pt")
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        load_checkpoint(tmp_path / "absent.pt")


def test_npz_roundtrip_keeps_config(tmp_path: Path) -> None:
    state = {k: np.full(s, 0.5, np.float32) for k, s in DEMO.shapes().items()}
    save_npz(tmp_path / "d.npz", state, {"config": DEMO.as_dict(), "synthetic": True})
    ckpt = load_checkpoint(tmp_path / "d.npz")
    assert ckpt.config == DEMO
    assert ckpt.meta["synthetic"] is True
    check_state(ckpt.state, DEMO, "d.npz")


def test_shipped_demo_weights_are_small_and_valid() -> None:
    path = demo_weights()
    assert path.stat().st_size <= 5 * 1024 * 1024
    ckpt = load_checkpoint()
    assert ckpt.config == DEMO
    assert ckpt.meta["synthetic"] is True


def test_weights_hash_ignores_the_file_format(tmp_path: Path) -> None:
    state = {k: torch.rand(s) for k, s in DEMO.shapes().items()}
    torch.save(state, tmp_path / "d.pt")
    save_npz(
        tmp_path / "d.npz", {k: v.numpy() for k, v in state.items()}, {"config": DEMO.as_dict()}
    )
    with pytest.raises(CheckpointError, match=r"mis-shaped conv1\.weight"):
        load_checkpoint(tmp_path / "d.pt")  # a bare .pt is taken to be the published size
    torch.save(published_state(), tmp_path / "p.pt")
    save_npz(
        tmp_path / "p.npz",
        {k: v.numpy() for k, v in published_state().items()},
        {"config": PUBLISHED.as_dict()},
    )
    assert load_checkpoint(tmp_path / "p.pt").sha256 == load_checkpoint(tmp_path / "p.npz").sha256
    assert load_checkpoint(tmp_path / "p.npz").sha256 != load_checkpoint(tmp_path / "d.npz").sha256


def test_save_npz_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`lipread convert`'s writer: a full disk keeps the old file and names the path."""
    path = tmp_path / "w.npz"
    path.write_bytes(b"old")

    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match=rf"No space left on device: '{path}'"):
        save_npz(path, {"w": np.zeros(3, np.float32)}, {"config": DEMO.as_dict()})
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["w.npz"]


@pytest.mark.parametrize("kind", ["garbage", "whole model"])
def test_an_unreadable_pt_never_advises_weights_only_false(tmp_path: Path, kind: str) -> None:
    """torch's own message advises `weights_only=False`, which would run the file's code."""
    path = tmp_path / "w.pt"
    if kind == "garbage":
        path.write_bytes(bytes(range(256)) * 4)
    else:
        torch.save(torch.nn.Linear(2, 2), path)
    with pytest.raises(CheckpointError, match="not a readable PyTorch checkpoint") as info:
        load_checkpoint(path)
    text = str(info.value)
    assert "weights_only" not in text
    assert "safe_globals" not in text
    assert "never code" in text
