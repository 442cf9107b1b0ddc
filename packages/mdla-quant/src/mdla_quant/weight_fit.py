"""Data-free choices of the int8 weights: the clipping scale and the rounding direction.

    amax = mse_amax(w, channel_dim)          the per-channel max |w| the scale is taken from
    q = balanced(x, q, units)                round to nearest, then flips that cancel error sums

`mse_amax` (QuantConfig weight_scale="mse"): per channel, the clip a * max|w| (a from 1.00 down
to 0.80 in steps of 0.01) whose int8 round trip has the least squared error over the channel's
weights; a = 1 (the max-abs scale) unless a smaller clip is strictly better, so a channel
without outliers keeps its scale.

`balanced` (QuantConfig weight_rounding="balanced"), after SQuant's diagonal-Hessian argument:
an input that is smooth over a kernel's window (or roughly constant over a channel's inputs)
multiplies the *sum* of the kernel's (the channel's) rounding errors, not each error alone. So,
with e = q - w/s in [-0.5, 0.5] after rounding to nearest:
1. per kernel (one input channel's KH x KW window of one output channel), round(sum e) of its
   elements flip by one step against the sum, those whose flip adds the least error (the e
   nearest +-0.5 on the sum's side); after it |sum e| <= 0.5 per kernel;
2. per output channel, round(sum e) of its kernels, those with the largest residual sum on the
   channel sum's side, flip their best element the same way; after it |sum e| <= 0.5 per
   output channel (for a 1x1 conv or a fully connected layer, whose kernels are single weights,
   only this step acts).
A flip never leaves [-127, 127]; each weight moves by at most one step from round to nearest.

`kernel`: step 1 alone. `weighted` and `mean` read the calibration's statistics of the op's
input (`observers.ChannelMoments`, gathered in the calibration pass itself): with E[o, i] the
kernel sums after step 1 and mu[i], var[i] input channel i's mean and variance, the output
channel's expected squared error (in weight steps, per unit activation) is modelled as
J = (sum_i mu[i] E[o, i])^2 + sum_i var[i] E[o, i]^2, the mean error's square plus the kernels'
variance (SQuant's smooth-window assumption);
- `weighted` then flips, greedily, the kernel (its best element) whose flip lowers J the most,
  each kernel at most once, until none lowers it (no bias change);
- `mean` keeps step 1's weights and moves the mean error into the bias instead
  (`weight_stats.mean_shift`: the op itself on the calibration's mean input, exact for the
  weights' share of bias correction), which leaves J's variance term only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mdla_ir import OpKind, QuantParams
from mdla_quant.arith import round_half_away
from mdla_quant.native import library
from mdla_quant.weights import quantize_weights, weight_scales

Array = np.ndarray[Any, Any]
WEIGHT_SCALES = ("max", "mse")
WEIGHT_ROUNDINGS = ("nearest", "balanced", "kernel", "weighted", "mean")
MAX_FLIPS = 256  # greedy rounds per block of `weighted` (each flips one kernel per channel)
CLIPS = np.round(np.arange(1.0, 0.795, -0.01), 2)  # 1.00, 0.99, ... 0.80: a = 1 first
ROWS = 1 << 16  # values per pass of the clip search (cache-sized temporaries)


def mse_amax(w: Array, channel_dim: int | None) -> Array:
    """Per channel (or one for the tensor), float64: a * max|w| for the a of CLIPS whose
    symmetric int8 round trip of the channel has the least squared error (ties: the larger a)."""
    rows = (
        w.reshape(1, -1)
        if channel_dim is None
        else np.moveaxis(w, channel_dim, 0).reshape(w.shape[channel_dim], -1)
    )
    out = np.empty(rows.shape[0], np.float64)
    step = max(1, ROWS // max(1, rows.shape[1]))
    for r0 in range(0, rows.shape[0], step):
        out[r0 : r0 + step] = _search(rows[r0 : r0 + step].astype(np.float64))
    return out


def _search(rows: Array) -> Array:
    amax: Array = np.abs(rows).max(1, initial=0.0)
    best: Array = amax.copy()
    best_err = np.full(amax.shape, np.inf)
    for a in CLIPS:
        s = np.where(amax > 0, amax * a / 127.0, 1.0)[:, None]
        err = ((np.clip(round_half_away(rows / s), -127, 127) * s - rows) ** 2).sum(1)
        better = err < best_err
        best[better], best_err[better] = (amax * a)[better], err[better]
    return best


def units(kind: OpKind, x: Array) -> tuple[Array, tuple[int, ...]]:
    """`x` (a weight in `kind`'s layout) as (output channels, kernels, elements per kernel),
    and the axis order that view was taken in (to put it back: `from_units`)."""
    if kind is OpKind.DEPTHWISE_CONV_2D:  # (1, KH, KW, C): one kernel per channel
        order = (3, 0, 1, 2)
        t = x.transpose(order)
        return t.reshape(t.shape[0], 1, -1), order
    if x.ndim == 4:  # CONV_2D, TRANSPOSE_CONV_2D: (O, KH, KW, I)
        order = (0, 3, 1, 2)
        t = x.transpose(order)
        return t.reshape(t.shape[0], t.shape[1], -1), order
    return x.reshape(x.shape[0], -1, 1), tuple(range(x.ndim))  # FULLY_CONNECTED (O, I)


def from_units(q: Array, shape: tuple[int, ...], order: tuple[int, ...]) -> Array:
    """The inverse of `units`: (O, kernels, elements) back to the weight's own `shape`."""
    view = tuple(shape[a] for a in order)
    return q.reshape(view).transpose(np.argsort(order))


def balanced(
    x: Array,
    q: Array,
    rounding: str = "balanced",
    moments: tuple[Array, Array] | None = None,
    scale: Array | None = None,
) -> Array:
    """`q` (round to nearest of `x`, both (O, kernels, n)) with the flips of the module
    docstring: kernel sums of q - x within 0.5, then (`balanced`) output-channel sums within
    0.5, or (`weighted`, with the input's per-channel (mean, variance)) the greedy flips.
    With `scale` (float64, one per output channel or one for all), `x` is the weights and
    x / scale the values rounded, divided a pass at a time (no float64 copy of them all)."""
    out = np.empty(q.shape, np.int8)
    o, k, n = x.shape
    per = None if scale is None else np.broadcast_to(scale.reshape(-1), (o,))[:, None, None]
    step = max(1, ROWS // max(1, k * n))  # output channels per pass: cache-sized temporaries
    for c in range(0, o, step):
        xs, qs = x[c : c + step], q[c : c + step].astype(np.int16)
        if per is not None:
            xs = xs.astype(np.float64) / per[c : c + step]
        m = xs.shape[0]
        if n > 1:
            qs = _balance_kernels(xs.reshape(m * k, n), qs.reshape(m * k, n)).reshape(m, k, n)
        if rounding == "balanced":
            qs = _balance_channels(xs, qs)
        elif rounding == "weighted" and moments is not None and moments[0].size == k > 1:
            qs = _weighted_channels(xs, qs, *moments)
        out[c : c + step] = qs
    return out


def _weighted_channels(x: Array, q: Array, mu: Array, var: Array) -> Array:
    """Per output channel, greedy kernel flips (each kernel's best element, once) while one
    lowers J = (sum_i mu_i E_i)^2 + sum_i var_i E_i^2 (module docstring)."""
    e = q - x
    kern = e.sum(2)
    r = kern @ mu
    down = np.where((q > -127) & (e > 0), e, -1.0)
    up = np.where((q < 127) & (e < 0), -e, -1.0)
    bd, bu = down.argmax(2), up.argmax(2)
    ok_d = np.take_along_axis(down, bd[..., None], 2)[..., 0] > 0
    ok_u = np.take_along_axis(up, bu[..., None], 2)[..., 0] > 0
    cost_d = np.where(ok_d, var * (1 - 2 * kern), np.inf)  # E -> E - 1
    cost_u = np.where(ok_u, var * (1 + 2 * kern), np.inf)  # E -> E + 1
    flip_d, flip_u = np.zeros(kern.shape, bool), np.zeros(kern.shape, bool)
    rows = np.arange(kern.shape[0])
    for _ in range(MAX_FLIPS):
        gain_d = cost_d + mu * (mu - 2 * r[:, None])  # (r - mu)^2 - r^2
        gain_u = cost_u + mu * (mu + 2 * r[:, None])
        g = np.minimum(gain_d, gain_u)
        i = g.argmin(1)
        go = g[rows, i] < 0
        if not go.any():
            break
        rr, ii = rows[go], i[go]
        dn = gain_d[rr, ii] <= gain_u[rr, ii]
        r[rr] -= np.where(dn, mu[ii], -mu[ii])
        flip_d[rr[dn], ii[dn]] = True
        flip_u[rr[~dn], ii[~dn]] = True
        cost_d[rr, ii] = cost_u[rr, ii] = np.inf
    out_d, out_u = np.zeros(q.shape, bool), np.zeros(q.shape, bool)
    np.put_along_axis(out_d, bd[..., None], flip_d[..., None], 2)
    np.put_along_axis(out_u, bu[..., None], flip_u[..., None], 2)
    return q - out_d + out_u


def _largest(key: Array, count: Array) -> Array:
    """Per row of the 2-D `key`, a mask of its `count` largest finite entries (fewer when the
    row has fewer); one argmax per pick, since counts are small against row lengths."""
    key, mask = key.copy(), np.zeros(key.shape, bool)
    rows = np.arange(key.shape[0])
    for j in range(int(count.max(initial=0))):
        best = key.argmax(1)
        take = (count > j) & np.isfinite(key[rows, best])
        mask[rows[take], best[take]] = True
        key[rows, best] = -np.inf
    return mask


def _balance_kernels(x: Array, q: Array) -> Array:
    """Rows (kernels) of x, q: flip round(sum e) elements per row against the sum (in C when
    it builds: one pass over the rows instead of one argmax over all of them per flip)."""
    e = q - x
    need = round_half_away(e.sum(1)).astype(np.int64)
    lib = library()
    if lib is not None and q.dtype == np.int16:
        out = np.ascontiguousarray(q).copy()
        e, need = np.ascontiguousarray(e, np.float64), np.ascontiguousarray(need)
        n = e.shape[1]
        taken = np.empty(n, np.uint8)
        lib.mdla_balance_kernels(e.ctypes, out.ctypes, need.ctypes, e.shape[0], n, taken.ctypes)
        return out
    down = np.where((q > -127) & (e > 0), e, -np.inf)  # flip down: e -> e - 1
    up = np.where((q < 127) & (e < 0), -e, -np.inf)  # flip up: e -> e + 1
    q = q - _largest(down, np.maximum(need, 0))
    return q + _largest(up, np.maximum(-need, 0))


def _balance_channels(x: Array, q: Array) -> Array:
    """Per output channel: round(sum e) of its kernels, largest residual on the sum's side
    first, flip their best element against the sum."""
    e = q - x
    need = round_half_away(e.sum((1, 2))).astype(np.int64)
    rest = e.sum(2)
    for sign in (1, -1):
        cand = np.where((q > -127) & (e > 0) if sign > 0 else (q < 127) & (e < 0), sign * e, -1.0)
        best = cand.argmax(2)
        has = np.take_along_axis(cand, best[..., None], 2)[..., 0] > 0
        key = np.where(has & (sign * rest > 0), sign * rest, -np.inf)
        pick = _largest(key, np.maximum(sign * need, 0))
        flip = np.zeros(q.shape, bool)
        np.put_along_axis(flip, best[..., None], pick[..., None], 2)
        q = q - sign * flip
    return q


def fit_weights(
    kind: OpKind,
    w: Array,
    channel_dim: int | None,
    min_scale: Array | None,
    scale: str = "max",
    rounding: str = "nearest",
    moments: tuple[Array, Array] | None = None,
) -> tuple[Array, QuantParams]:
    """`quantize_weights` of `kind`'s weight `w` with the config's weight_scale and
    weight_rounding ("max" and "nearest" are exactly `quantize_weights`); `moments`, the op
    input's per-channel (mean, variance), for `weighted`."""
    amax = mse_amax(w, channel_dim) if scale == "mse" else None
    if rounding in ("kernel", "mean") and w.size:
        fitted = _kernel_step_in_c(kind, w, channel_dim, min_scale, amax)
        if fitted is not None:
            return fitted
    q, params = quantize_weights(w, channel_dim, min_scale, amax)
    if rounding == "nearest" or w.size == 0:
        return q, params
    s = np.asarray(params.scale, np.float32).astype(np.float64)
    x, order = units(kind, w)
    near, _ = units(kind, q)
    fit = balanced(x, near, rounding, moments, scale=s)
    return from_units(fit, w.shape, order), params


def _kernel_step_in_c(
    kind: OpKind,
    w: Array,
    channel_dim: int | None,
    min_scale: Array | None,
    amax: Array | None,
) -> tuple[Array, QuantParams] | None:
    """`fit_weights` for `kernel` and `mean` (step 1 alone) in one C pass over the float32
    weights: quantize_weights' codes, then `balanced`'s kernel flips, the same codes bit for
    bit without numpy's float64 copies of the weights. None where C cannot take it (no library,
    not float32, a value divided to a NaN or an infinity): numpy's path then."""
    lib = library()
    if lib is None or w.dtype != np.float32:
        return None
    scale = weight_scales(w, channel_dim, min_scale, amax)
    x, order = units(kind, w)
    o, k, n = x.shape
    if scale.size not in (1, o) or any(st % x.itemsize for st in x.strides):
        return None
    s64 = np.ascontiguousarray(scale, np.float64)
    out = np.empty(x.shape, np.int8)
    so, sk, sn = (st // x.itemsize for st in x.strides)
    e, q = np.empty((k + 8) * n, np.float64), np.empty((k + 8) * n, np.int16)  # C's layout
    row_e, row_q, taken = np.empty(n, np.float64), np.empty(n, np.int16), np.empty(n, np.uint8)
    flips = int(n > 1)
    args = (x.ctypes, so, sk, sn, o, k, n, s64.ctypes, int(scale.size > 1), flips, out.ctypes)
    scratch = (e.ctypes, q.ctypes, row_e.ctypes, row_q.ctypes, taken.ctypes)
    if lib.mdla_fit_kernels_f32(*args, *scratch):
        return None
    params = QuantParams(tuple(float(v) for v in scale), (0,) * scale.size, channel_dim)
    return from_units(out, w.shape, order), params
