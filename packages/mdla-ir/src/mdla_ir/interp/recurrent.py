"""GRU (one torch.nn.GRU layer) and FULLY_CONNECTED_F32 in the float interpreter.

GRU over x (T, I) from h0 = 0, gate rows in torch's order (reset, update, new):

    r = σ(W_ir x + b_ir + W_hr h + b_hr)
    z = σ(W_iz x + b_iz + W_hz h + b_hz)
    n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))
    h' = (1 − z) ⊙ n + z ⊙ h

computed in float64 and returned as float32 (the float reference; the bit-exact float32
definition the CPU runs is `mdla_quant.kernels.gru`). Weights are stacked per direction:
w_ih [D, 3H, I], w_hh [D, 3H, H], b_ih and b_hh [D, 3H]; direction 1 reads x reversed in time
and its states are put back in time order; the output is (T, D·H), [forward | backward].
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mdla_ir.graph import Op
from mdla_ir.interp.registry import Array, kernel
from mdla_ir.ops import OpKind


def _sigmoid(x: Array) -> Array:
    out: Array = 0.5 * (1.0 + np.tanh(0.5 * x))
    return out


def gru_direction(x: Array, w_ih: Array, w_hh: Array, b_ih: Array, b_hh: Array) -> Array:
    """One direction over x (T, I) -> hidden states (T, H), float64."""
    hidden = w_hh.shape[1]
    gi = x.astype(np.float64) @ w_ih.T.astype(np.float64) + b_ih.astype(np.float64)
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


@kernel(OpKind.GRU)
def gru(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    x, w_ih, w_hh, b_ih, b_hh = args
    outs = []
    for d in range(w_ih.shape[0]):
        xd = x if d == 0 else x[::-1]
        y = gru_direction(xd, w_ih[d], w_hh[d], b_ih[d], b_hh[d])
        outs.append(y if d == 0 else y[::-1])
    return [np.concatenate(outs, axis=1).astype(np.float32)]


@kernel(OpKind.FULLY_CONNECTED_F32)
def fully_connected_f32(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """out[..., o] = b[o] + sum_i x[..., i] * w[o, i] (float64, returned as float32)."""
    x, w, b = (a.astype(np.float64) for a in args)
    return [(x @ w.T + b).astype(np.float32)]
