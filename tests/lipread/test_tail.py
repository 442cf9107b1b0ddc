from __future__ import annotations

import numpy as np
import torch

from lipread.config import DEMO, LipNetConfig
from lipread.model import LipNet
from lipread.tail import bigru, flatten_features, tail_logits


def test_bigru_matches_torch_gru_within_1e5() -> None:
    torch.manual_seed(1)
    gru = torch.nn.GRU(40, 32, 1, bidirectional=True)
    for p in gru.parameters():  # larger than init so the gates saturate somewhere
        p.data.mul_(3.0)
    x = torch.randn(30, 1, 40)
    ref = gru(x)[0][:, 0].detach().numpy()
    state = {f"g.{k}": v.detach().numpy() for k, v in gru.state_dict().items()}
    out = bigru(x[:, 0].numpy(), state, "g")
    assert out.dtype == np.float32
    assert np.abs(out - ref).max() < 1e-5


def test_tail_matches_lipnet_tail() -> None:
    torch.manual_seed(2)
    cfg = LipNetConfig(height=32, width=64, conv1=4, conv2=4, conv3=8, hidden=16)
    model = LipNet(cfg).eval()
    feats = torch.rand(1, 8, 11, *cfg.feature_hw)
    ref = model.tail(feats)[0].detach().numpy()
    state = {k: v.numpy() for k, v in model.lipnet_state().items()}
    assert np.abs(tail_logits(feats.numpy(), state) - ref).max() < 1e-5


def test_flatten_is_time_major_channel_height_width() -> None:
    feats = np.arange(2 * 3 * 2 * 2).reshape(1, 2, 3, 2, 2).astype(np.float32)
    flat = flatten_features(feats)
    assert flat.shape == (3, 8)
    assert flat[1].tolist() == [4, 5, 6, 7, 16, 17, 18, 19]


def test_demo_config_feature_size() -> None:
    assert DEMO.feature_hw == (2, 4)
    assert DEMO.features == 24 * 8
