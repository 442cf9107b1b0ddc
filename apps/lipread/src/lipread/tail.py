"""LipNet's CPU tail in numpy: 2 bidirectional GRUs, the linear layer, greedy CTC.

Matches `torch.nn.GRU` (gate order reset, update, new in the 3H rows) within 1e-5:
    r = σ(W_ir x + b_ir + W_hr h + b_hr)
    z = σ(W_iz x + b_iz + W_hz h + b_hz)
    n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))
    h' = (1 − z) ⊙ n + z ⊙ h
computed in float64, returned as float32. No torch needed. One direction is `mdla_ir`'s
`gru_direction` (the GRU op's float64 kernel in `run_float`), so the tail and the IR's GRU are one
definition; the engine's float32 C GRU is checked against this tail
(tests/lipread/test_fullmodel.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mdla_ir.interp.recurrent import gru_direction

Array = np.ndarray[Any, Any]


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
