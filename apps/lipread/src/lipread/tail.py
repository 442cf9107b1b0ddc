"""LipNet's CPU tail in numpy: 2 bidirectional GRUs, the linear layer, greedy CTC.

Matches `torch.nn.GRU` (gate order reset, update, new in the 3H rows) within 1e-5:
    r = σ(W_ir x + b_ir + W_hr h + b_hr)
    z = σ(W_iz x + b_iz + W_hz h + b_hz)
    n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))
    h' = (1 − z) ⊙ n + z ⊙ h
computed in float64, returned as float32. No torch needed: this is what runs on a phone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]


def _sigmoid(x: Array) -> Array:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def gru_direction(x: Array, w_ih: Array, w_hh: Array, b_ih: Array, b_hh: Array) -> Array:
    """One GRU direction over x (T, I) from h0 = 0 -> hidden states (T, H), float64."""
    hidden = w_hh.shape[1]
    gi = x.astype(np.float64) @ w_ih.T.astype(np.float64) + b_ih  # all input projections at once
    w_hh64, b_hh64 = w_hh.astype(np.float64), b_hh.astype(np.float64)
    h = np.zeros(hidden)
    out = np.empty((x.shape[0], hidden))
    for t in range(x.shape[0]):
        gh = w_hh64 @ h + b_hh64
        r = _sigmoid(gi[t, :hidden] + gh[:hidden])
        z = _sigmoid(gi[t, hidden : 2 * hidden] + gh[hidden : 2 * hidden])
        n = np.tanh(gi[t, 2 * hidden :] + r * gh[2 * hidden :])
        h = (1.0 - z) * n + z * h
        out[t] = h
    return out


def bigru(x: Array, state: dict[str, Array], name: str) -> Array:
    """A 1-layer bidirectional nn.GRU named `name` over x (T, I) -> (T, 2H) float32."""

    def params(sfx: str) -> tuple[Array, Array, Array, Array]:
        return tuple(  # type: ignore[return-value]
            state[f"{name}.{p}_l0{sfx}"] for p in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
        )

    fwd = gru_direction(x, *params(""))
    bwd = gru_direction(x[::-1], *params("_reverse"))[::-1]
    return np.concatenate([fwd, bwd], axis=1).astype(np.float32)


def flatten_features(feats: Array) -> Array:
    """Front-end output (1, C, T, h, w) -> GRU input (T, C·h·w), as LipNet-PyTorch flattens."""
    _, c, t, h, w = feats.shape
    return np.ascontiguousarray(feats[0].transpose(1, 0, 2, 3).reshape(t, c * h * w))


def tail_logits(feats: Array, state: dict[str, Array]) -> Array:
    """Front-end features (1, C, T, h, w) -> logits (T, classes)."""
    x = bigru(flatten_features(feats), state, "gru1")
    x = bigru(x, state, "gru2")
    w, b = state["FC.weight"].astype(np.float64), state["FC.bias"].astype(np.float64)
    return (x.astype(np.float64) @ w.T + b).astype(np.float32)
