"""CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, BATCH_MATMUL and CONV_3D in float32.

CONV_2D: out[n,y,x,o] = b[o] + sum_{i,j,c} in[n, y*sh + i*dh, x*sw + j*dw, g*Cg + c] * w[o,i,j,c]
(in zero-padded, g = o // (O/groups)),
computed as im2col patches times the filter matrix per group.
DEPTHWISE_CONV_2D: out[n,y,x,c*m+k] = b + sum_{i,j} in[n, y*sh+i*dh, x*sw+j*dw, c] * w[i,j,c*m+k].
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mdla_ir.attrs import ConvAttrs, MatmulAttrs
from mdla_ir.graph import Op
from mdla_ir.interp.registry import Array, apply_fuse, from_nhwc, kernel, to_nhwc
from mdla_ir.ops import OpKind


def pad_nhwc(x: Array, padding: Sequence[int], value: float = 0.0) -> Array:
    """x inside a border of `value` (what np.pad's constant mode gives, without its per-call
    Python overhead: the copy is the same values)."""
    t, b, left, r = padding
    if not any(padding):
        return x
    n, h, w, c = x.shape
    out = np.full((n, t + h + b, left + w + r, c), value, dtype=x.dtype)
    out[:, t : t + h, left : left + w] = x
    return out


def windows(
    x: Array, kernel_hw: Sequence[int], stride: Sequence[int], dilation: Sequence[int]
) -> Array:
    """Strided view (N, OH, OW, C, KH, KW) of an already padded NHWC array."""
    (kh, kw), (sh, sw), (dh, dw) = kernel_hw, stride, dilation
    span_h, span_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    view = np.lib.stride_tricks.sliding_window_view(x, (span_h, span_w), axis=(1, 2))
    return view[:, ::sh, ::sw, :, ::dh, ::dw]


def conv2d_nhwc(
    x: Array,
    w: Array,
    bias: Array | None,
    stride: Sequence[int],
    dilation: Sequence[int],
    padding: Sequence[int],
    groups: int,
) -> Array:
    """x (N,H,W,C), w (O,KH,KW,C/groups) -> (N,OH,OW,O), float32."""
    o, kh, kw, cg = w.shape
    if (kh, kw, groups) == (1, 1, 1) and tuple(stride) == (1, 1) and not any(padding):
        out = pointwise_nhwc(x, w)
        if bias is not None:
            out += bias.astype(np.float32)
        return out
    patches = windows(pad_nhwc(x, padding), (kh, kw), stride, dilation)
    n, oh, ow = patches.shape[:3]
    og = o // groups
    out = np.empty((n, oh, ow, o), dtype=np.float32)
    blocks = _row_blocks(n, oh, ow, o, kh * kw * cg) if groups == 1 else []
    if blocks and x.dtype == w.dtype == np.float32:
        p, wt = patches.transpose(0, 1, 2, 4, 5, 3), w.reshape(o, kh * kw * cg).T
        for b, y0, y1 in blocks:
            cols = p[b, y0:y1].reshape((y1 - y0) * ow, kh * kw * cg)
            np.matmul(cols, wt, out=out[b, y0:y1].reshape((y1 - y0) * ow, o))
    else:
        for g in range(groups):
            p = patches[:, :, :, g * cg : (g + 1) * cg].transpose(0, 1, 2, 4, 5, 3)
            cols = p.reshape(n * oh * ow, kh * kw * cg)
            wg = w[g * og : (g + 1) * og].reshape(og, kh * kw * cg)
            out[..., g * og : (g + 1) * og] = (cols @ wg.T).reshape(n, oh, ow, og)
    if bias is not None:
        out += bias.astype(np.float32)
    return out


IM2COL_WHOLE_BYTES = 1 << 22  # a smaller im2col matrix is made and multiplied whole
IM2COL_BLOCK_BYTES = 1 << 19  # else its rows in blocks of about this size (they stay in L2)
GEMM_MIN_MNK = 1 << 23  # and no block's m * n * k below this


def _row_blocks(n: int, oh: int, ow: int, o: int, k: int) -> list[tuple[int, int, int]]:
    """(image, first row, end row) blocks of a CONV_2D's output whose im2col rows are
    multiplied one block at a time, or [] for one product of the whole matrix.

    On OpenBLAS's AVX-512 kernels a block's GEMM gives each output value exactly what the
    whole product gives: they sum each value over K in an order set by K alone (M only splits
    the work), and every block stays above `GEMM_MIN_MNK`, clear of the smaller products'
    other kernels (its direct and small-matrix SGEMMs stop at 7.3 M). Its AVX2 kernels sum a
    row by its position within a 12-row tile, so there a block's values (like an image's in a
    batch, or a product cut over another thread count) can move in the last float32 bits.
    What blocks buy is that a block's patches are still in cache when they are multiplied:
    0.6-0.7x the time on resnet18's 56x56 and 112x112 layers."""
    per_row = ow * o * k  # one output row's m * n * k
    if n * oh * ow * k * 4 <= IM2COL_WHOLE_BYTES or per_row == 0:
        return []
    rows = min(oh, max(1, IM2COL_BLOCK_BYTES // (ow * k * 4), -(-GEMM_MIN_MNK // per_row)))
    starts = list(range(0, oh, rows))
    if (oh - starts[-1]) * per_row < GEMM_MIN_MNK:  # a short last block joins the one before
        starts.pop()
    if not starts:  # (an image smaller than one block: whole)
        return []
    ends = [*starts[1:], oh]
    return [(b, y0, y1) for b in range(n) for y0, y1 in zip(starts, ends, strict=True)]


def pointwise_nhwc(x: Array, w: Array) -> Array:
    """A 1x1, stride-1, unpadded, ungrouped conv: its im2col matrix is x itself, (N*H*W, C)
    (each pixel's patch is its one channel vector, in the same order), so the same product
    is taken without copying the patches."""
    n, h, wd, c = x.shape
    cols = np.ascontiguousarray(x).reshape(n * h * wd, c)
    out = np.asarray(cols @ w.reshape(w.shape[0], c).T).astype(np.float32, copy=False)
    return out.reshape(n, h, wd, w.shape[0])


DEPTHWISE_BLOCK_BYTES = 1 << 18  # output rows per block: the block and its product stay in L2


def depthwise_nhwc(
    x: Array,
    w: Array,
    bias: Array | None,
    stride: Sequence[int],
    dilation: Sequence[int],
    padding: Sequence[int],
) -> Array:
    """x (N,H,W,C), w (1,KH,KW,C*m) -> (N,OH,OW,C*m).

    Every output value is 0 + p_00 + p_01 + ... (the taps' products in row-major tap order,
    each rounded to float32) + bias; the taps are applied to blocks of output rows
    (`DEPTHWISE_BLOCK_BYTES`), all taps on one block before the next, so the block stays in
    cache. Each value sees the same operations in the same order as with whole-output passes."""
    _, kh, kw, o = w.shape
    mult = o // x.shape[3]
    xp = pad_nhwc(x, padding)
    if mult > 1:
        xp = np.repeat(xp, mult, axis=3)
    (sh, sw), (dh, dw) = stride, dilation
    n, hp, wp, _ = xp.shape
    oh, ow = (hp - dh * (kh - 1) - 1) // sh + 1, (wp - dw * (kw - 1) - 1) // sw + 1
    rows = max(1, DEPTHWISE_BLOCK_BYTES // max(1, n * ow * o * 4))
    out = np.zeros((n, oh, ow, o), dtype=np.float32)
    product = np.empty((n, min(rows, oh), ow, o), dtype=np.float32)  # one buffer for all taps
    exact32 = xp.dtype == w.dtype == np.float32
    for r0 in range(0, oh, rows):
        block, r = out[:, r0 : r0 + rows], min(rows, oh - r0)
        for i in range(kh):
            y0 = r0 * sh + i * dh
            for j in range(kw):
                tap = xp[
                    :, y0 : y0 + sh * (r - 1) + 1 : sh, j * dw : j * dw + sw * (ow - 1) + 1 : sw
                ]
                if exact32:
                    block += np.multiply(tap, w[0, i, j], out=product[:, :r])
                else:  # (a wider product is added before it is rounded to float32)
                    block += tap * w[0, i, j]
    if bias is not None:
        out += bias.astype(np.float32)
    return out


def _conv_args(op: Op, args: Sequence[Array]) -> tuple[Array, Array, Array | None]:
    return args[0], args[1], (args[2] if len(args) > 2 else None)


@kernel(OpKind.CONV_2D)
def conv_2d(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    x, w, b = _conv_args(op, args)
    a = ConvAttrs.of(op)
    if layout == "NCHW":  # torch filter (O, I/g, KH, KW) -> (O, KH, KW, I/g)
        w = w.transpose(0, 2, 3, 1)
    y = conv2d_nhwc(
        to_nhwc(x, layout),
        w,
        b,
        a.stride,
        a.dilation,
        a.padding,
        a.groups,
    )
    return [from_nhwc(apply_fuse(y, op.fuse, in_place=True), layout)]


@kernel(OpKind.DEPTHWISE_CONV_2D)
def depthwise_conv_2d(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    x, w, b = _conv_args(op, args)
    if layout == "NCHW":  # torch filter (O, 1, KH, KW) -> (1, KH, KW, O)
        w = w.transpose(1, 2, 3, 0)
    a = ConvAttrs.of(op)
    y = depthwise_nhwc(to_nhwc(x, layout), w, b, a.stride, a.dilation, a.padding)
    return [from_nhwc(apply_fuse(y, op.fuse, in_place=True), layout)]


@kernel(OpKind.FULLY_CONNECTED)
def fully_connected(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """out[..., o] = b[o] + sum_i x[..., i] * w[o, i]."""
    x, w, b = _conv_args(op, args)
    y = (x @ w.T).astype(np.float32)
    if b is not None:
        y += b
    return [apply_fuse(y, op.fuse, in_place=True)]


@kernel(OpKind.BATCH_MATMUL)
def batch_matmul(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    a, b = args[0], args[1]
    adj = MatmulAttrs.of(op)
    if adj.adj_x:
        a = np.swapaxes(a, -1, -2)
    if adj.adj_y:
        b = np.swapaxes(b, -1, -2)
    return [np.matmul(a, b).astype(np.float32)]


@kernel(OpKind.CONV_3D)
def conv_3d(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """NCDHW: out[:, :, t] = b + sum_k conv2d(x_pad[:, :, t*st + k*dt], w[:, :, k])."""
    x, w, b = _conv_args(op, args)
    if layout == "NHWC":  # an NHWC graph holds 5-D activations as NDHWC (filter stays torch's)
        x = x.transpose(0, 4, 1, 2, 3)
    a = ConvAttrs.of(op)
    (st, sh, sw), (pt, ph, pw), (dt, dh, dw) = a.stride, a.padding, a.dilation
    groups = a.groups
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pt), (0, 0), (0, 0)))
    kd = w.shape[2]
    od = (xp.shape[2] - dt * (kd - 1) - 1) // st + 1
    frames = []
    for t in range(od):
        acc: Array | None = None
        for k in range(kd):
            xs = xp[:, :, t * st + k * dt].transpose(0, 2, 3, 1)
            wk = w[:, :, k].transpose(0, 2, 3, 1)
            y = conv2d_nhwc(xs, wk, None, (sh, sw), (dh, dw), (ph, ph, pw, pw), groups)
            acc = y if acc is None else acc + y
        assert acc is not None  # kd >= 1 by the filter's shape
        frames.append(acc.transpose(0, 3, 1, 2))
    out = np.stack(frames, axis=2)
    if b is not None:
        out += b.reshape(1, -1, 1, 1, 1)
    if layout == "NHWC":
        out = np.ascontiguousarray(out.transpose(0, 2, 3, 4, 1))
    return [out.astype(np.float32)]


def transpose_conv_nhwc(
    x: Array, w: Array, bias: Array | None, stride: Sequence[int], padding: Sequence[int]
) -> Array:
    """x (N,H,W,I), w (O,KH,KW,I) -> (N,OH,OW,O): every input pixel scatters x[n,y,x,:] @ w^T
    to out[n, y*sh + i - t, x*sw + j - l, :]; taps landing outside the output are dropped."""
    o, kh, kw, _ = w.shape
    n, h, wd, _ = x.shape
    (sh, sw), (t, b, left, r) = stride, padding
    full = np.zeros((n, (h - 1) * sh + kh, (wd - 1) * sw + kw, o), np.float64)
    for i in range(kh):
        for j in range(kw):
            tap = x.astype(np.float64) @ w[:, i, j, :].astype(np.float64).T
            full[:, i : i + (h - 1) * sh + 1 : sh, j : j + (wd - 1) * sw + 1 : sw] += tap
    out = full[:, t : full.shape[1] - b, left : full.shape[2] - r].astype(np.float32)
    return out + bias.astype(np.float32) if bias is not None else out


@kernel(OpKind.TRANSPOSE_CONV_2D)
def transpose_conv_2d(op: Op, args: Sequence[Array], layout: str) -> list[Array]:
    """TRANSPOSE_CONV_2D (torch's ConvTranspose2d, groups 1, dilation 1): `padding` (t, b, l, r)
    crops the full (in-1)*s + k output."""
    x, w, b = _conv_args(op, args)
    if layout == "NCHW":  # torch filter (I, O, KH, KW) -> (O, KH, KW, I)
        w = w.transpose(1, 2, 3, 0)
    a = ConvAttrs.of(op)
    y = transpose_conv_nhwc(to_nhwc(x, layout), w, b, a.stride, a.padding)
    return [from_nhwc(apply_fuse(y, op.fuse), layout)]
