"""Block reconstruction (BRECQ, Li et al. 2021): AdaRound with the loss on a block's output.

Per-layer AdaRound (`adaround.py`) fits each layer's rounding to that layer's own output; the
errors it leaves in an expand conv's output still pass through a depthwise conv and a
projection before anyone looks at them. Here, once per-layer AdaRound has rounded every op of
an inverted-residual block,

    x -> [CONV_2D 1x1 (expand), f1] -> DEPTHWISE_CONV_2D kxk, f2 -> CONV_2D 1x1 (project), f3
      -> [ADD x]

(brackets: optional; each inner tensor has the next op as its only consumer and is not a graph
output; depthwise multiplier 1), the roundings of all its ops are refined together, to
reconstruct the block's output:

    loss(V) = mean |B~(x~; w~(V)) - B(x; w)|^2 / E0  +  lam * sum_l mean(1 - |2 h_l - 1|^beta)

B is the block in float, fed the float network's input x; B~ the same block fed the int8
network's input x~ (dequantized, every earlier layer already rounded), with the int8 grid of
each inner tensor in it (clip to its range, round to its scale; gradient straight through
inside the range), as the int8 kernels compute it; the block's output itself stays unrounded
(as in the per-layer default). w~(V) is `adaround.py`'s soft weight; V starts where
h = 1 - H_START for a weight the per-layer fit rounded up and H_START where it rounded down; E0
is the loss of the per-layer roundings. Same warm-up, beta annealing, Adam and mini-batches as
`adaround._fit`, over STEPS of the per-layer iterations: Adam moves V about its learning rate a
step, so from h = 0.1 no rounding could flip before step ~160 of 300, and those steps bought
nothing; from h = 0.3 the first flips come near step 70, and 210 steps leave as many steps of
flips. On lite0 (300 iterations, 128 held-out crops) the logits' SQNR was 25.46 dB against 25.44
for h = 0.1 and 300 steps (a paired-bootstrap 95 % interval of the difference of -0.20 to +0.22
dB), for 30 % fewer block steps (bench/README: "Block reconstruction's cost, round 10").

Exactness of the patch form: the loss is evaluated on sampled output positions p of the
depthwise conv. Its output at p reads the expand's output at the kh x kw taps around p, and a
1x1 expand at a tap reads only x at that tap, so gathering x at the taps of p (zero, i.e. the
real value of the int8 zero point, where a tap falls into the padding: padding is applied to
the expand's output, whose real zero is 0 in both networks) gives the block's output at p
exactly, without computing the whole maps. The residual is x at p (an ADD of equal shapes
means stride 1). Neighbouring positions share taps, so the expand (its GEMM and its int8
grid) is computed once per distinct pixel a step's taps read, and each tap reads its pixel's
row: on the small late maps a step's 256 positions x 25 taps read a few hundred pixels. The
same holds backwards: the expand's gradient is x^T g with g the depthwise's gradient summed
per pixel over the taps reading it, one GEMM over those pixels, not over every tap
(`block_taps.py`, where the depthwise conv and its gradients read the pixel rows directly).

A block keeps its per-layer roundings unless the refined ones reconstruct the block's output
better on the positions they were fit on. Scales are unchanged; only the integers move, so the
weights stay ordinary symmetric int8 and every kernel runs them bit for bit as before.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from mdla_ir import Graph, Op, OpKind, Tensor
from mdla_ir.attrs import ConvAttrs
from mdla_ir.selection import is_selection
from mdla_quant.block_taps import depthwise, depthwise_grad, fused_quant_c, pixel_grad
from mdla_quant.soft_rounding import SoftRounding, each_tensor, matmul

Array = np.ndarray[Any, Any]
ZETA, GAMMA = 1.1, -0.1
CLIPS = {
    "NONE": (-np.inf, np.inf),
    "RELU": (0.0, np.inf),
    "RELU6": (0.0, 6.0),
    "RELU1": (-1.0, 1.0),
}
CHUNK = 256  # rows per chunk when evaluating on every fit position
H_START = 0.3  # where V starts: h = H_START where the per-layer fit rounded down, 1 - it up
STEPS = (7, 10)  # the refinement's steps per per-layer iteration (210 of 300)


@dataclass(frozen=True, slots=True)
class Block:
    """The weighted ops of one inverted-residual block (expand?, depthwise, project) and its
    residual ADD, if any."""

    ops: tuple[Op, ...]
    add: Op | None

    @property
    def name(self) -> str:
        return "+".join(op.name for op in self.ops)

    @property
    def input(self) -> str:
        return self.ops[0].inputs[0]


def _pointwise(graph: Graph, op: Op) -> bool:
    """A CONV_2D 1x1, stride 1, unpadded, ungrouped, not a selection conv, with a clip fuse."""
    if op.kind is not OpKind.CONV_2D or op.fuse not in CLIPS:
        return False
    w = graph.tensors[op.inputs[1]]
    return (
        w.data is not None
        and tuple(w.shape[1:3]) == (1, 1)
        and ConvAttrs.of(op).stride == (1, 1)
        and not any(ConvAttrs.of(op).padding)
        and ConvAttrs.of(op).groups == 1
        and not is_selection(graph, op)
    )


def find_blocks(graph: Graph) -> list[Block]:
    """Every inverted-residual block of `graph` (module docstring), in graph order."""
    consumers: dict[str, list[Op]] = {}
    producer: dict[str, Op] = {}
    for op in graph.ops:
        for name in op.inputs:
            consumers.setdefault(name, []).append(op)
        producer[op.outputs[0]] = op

    def only(tensor: str) -> Op | None:
        ops = consumers.get(tensor, [])
        return ops[0] if len(ops) == 1 and tensor not in graph.outputs else None

    blocks: list[Block] = []
    for dw in graph.ops:
        if dw.kind is not OpKind.DEPTHWISE_CONV_2D or dw.fuse not in CLIPS:
            continue
        if ConvAttrs.of(dw).multiplier not in (None, 1) or graph.tensors[dw.inputs[1]].data is None:
            continue
        project = only(dw.outputs[0])
        if project is None or not _pointwise(graph, project):
            continue
        expand = producer.get(dw.inputs[0])
        keep = expand is not None and _pointwise(graph, expand) and only(dw.inputs[0]) is dw
        ops = (expand, dw, project) if keep and expand is not None else (dw, project)
        x, y = ops[0].inputs[0], project.outputs[0]
        add = only(y)
        residual = (
            add is not None
            and add.kind is OpKind.ADD
            and add.fuse in CLIPS
            and sorted(add.inputs) == sorted((x, y))
            and graph.tensors[x].shape == graph.tensors[y].shape
        )
        blocks.append(Block(ops, add if residual else None))
    return blocks


def fused_quant(
    y: Array, fuse: str, grid: tuple[float, int] | None, into: tuple[Array, Array] | None = None
) -> tuple[Array, Array]:
    """The fused clip of `fuse`, then (with `grid` = (scale, zero point)) the int8 grid's range
    and rounding; returns the value and its straight-through derivative (1 inside the range),
    written into `into` (two arrays of y's shape: the value's of y's dtype, the derivative's
    of it or bool) when given, else into new ones of y's dtype."""
    lo, hi = CLIPS[fuse]
    if grid is not None:
        s, z = grid
        lo, hi = max(lo, s * (-128 - z)), min(hi, s * (127 - z))
    out, deriv = into if into is not None else (np.empty_like(y), np.empty_like(y))
    if fused_quant_c(y, lo, hi, grid, out, deriv):
        return out, deriv
    inside = np.greater(y, lo)
    inside &= np.less(y, hi)
    np.clip(y, lo, hi, out=out)
    if grid is not None:  # (round(out / s + z) - z) * s, in place
        np.divide(out, grid[0], out=out)
        np.add(out, grid[1], out=out)
        np.round(out, out=out)
        np.subtract(out, grid[1], out=out)
        np.multiply(out, grid[0], out=out)
    np.copyto(deriv, inside)
    return out, deriv


class BlockPatches:
    """The block on sampled depthwise output positions (module docstring: the patch form).

    `pixels` (B*H*W, C): the block input's pixels; `pixel` (M, T): the pixel each of the
    T = kh*kw taps of each position reads (-1 in the padding); `residual` (M, C): the input at
    the position (when the block has an ADD)."""

    def __init__(self, block: Block, graph: Graph, xs: list[Array], picks: Array) -> None:
        dw = block.ops[-2]
        self.block, self.expand = block, len(block.ops) == 3
        kh, kw = graph.tensors[dw.inputs[1]].shape[1:3]
        a = ConvAttrs.of(dw)
        (sh, sw), (dh, dwid), (pt, _, pl, _) = a.stride, a.dilation, a.padding
        oh, ow = graph.tensors[dw.outputs[0]].shape[1:3]
        x = np.concatenate([np.asarray(v, np.float32) for v in xs])  # (B, H, W, C)
        b, rem = np.divmod(picks, oh * ow)
        oy, ox = np.divmod(rem, ow)
        iy = oy[:, None] * sh - pt + (np.arange(kh) * dh).repeat(kw)[None]
        ix = ox[:, None] * sw - pl + np.tile(np.arange(kw) * dwid, kh)[None]
        inside = (iy >= 0) & (iy < x.shape[1]) & (ix >= 0) & (ix < x.shape[2])
        self.pixels = x.reshape(-1, x.shape[3])
        self.pixel = np.where(inside, (b[:, None] * x.shape[1] + iy) * x.shape[2] + ix, -1)
        self.residual = x[b, oy, ox] if block.add is not None else None
        self.rows = len(picks)
        self._buffers: dict[str, Array] = {}

    def _buffer(self, name: str, shape: tuple[int, ...], dtype: Any = np.float32) -> Array:
        """An array of `shape` reused from step to step: a fresh array of tens of MB each
        step costs more in page faults than the work written into it."""
        size, key = int(np.prod(shape)), f"{name}:{np.dtype(dtype).str}"
        if key not in self._buffers or self._buffers[key].size < size:
            self._buffers[key] = np.empty(size, dtype)
        return self._buffers[key][:size].reshape(shape)

    def _pair(self, name: str, like: Array) -> tuple[Array, Array]:
        """Two reused arrays shaped as `like`, for a fused_quant's value and derivative."""
        return (
            self._buffer(name, like.shape, like.dtype),
            self._buffer(name + "'", like.shape, like.dtype),
        )

    def forward(
        self,
        ws: list[Array],
        bs: list[Array],
        grids: list[tuple[float, int] | None],
        idx: Array,
    ) -> tuple[Array, list[Array]]:
        """The block's output at rows `idx` for weights `ws` ((K, O) each) and biases `bs`;
        `grids` the inner tensors' int8 grids (None: float). Also what `backward` needs."""
        fuses = [op.fuse for op in self.block.ops]
        pixel, tap = np.unique(self.pixel[idx], return_inverse=True)
        tap = tap.reshape(len(idx), -1)  # each tap's row in `pixel`
        k = 1 if self.expand else 0
        if self.expand:
            z1, d1 = self._expand(ws[0], bs[0], fuses[0], grids[0], pixel)
        else:
            z1, d1 = self.pixels[pixel], np.ones(0, np.bool_)
            z1[: int(pixel[0] < 0)] = 0.0
        a2 = self._buffer("a2", (len(idx), ws[k].shape[1]), np.result_type(z1, ws[k]))
        a2 = depthwise(z1, tap, ws[k], a2)
        a2 += bs[k]
        z2, d2 = fused_quant(a2, fuses[k], grids[k], self._pair("dw", a2))
        a3 = matmul(z2, ws[k + 1])
        a3 += bs[k + 1]
        y, d3 = fused_quant(a3, fuses[k + 1], None, self._pair("project", a3))
        d4 = np.ones_like(y)
        if self.block.add is not None and self.residual is not None:
            np.add(y, self.residual[idx], out=a3)  # a3 is spent: d3 holds what it gave
            y, d4 = fused_quant(a3, self.block.add.fuse, None, self._pair("add", a3))
        return y, [pixel, tap, idx, z1, d1, z2, d2, d3, d4]

    def _expand(
        self, w: Array, b: Array, fuse: str, grid: tuple[float, int] | None, pixel: Array
    ) -> tuple[Array, Array]:
        """The expand's quantized output and its derivative at the block input's `pixel`s
        (P, O), 0 in the padding (pixel -1, first if any); the derivative (0 or 1) as bool."""
        a = matmul(self.pixels[pixel], w)
        a += b
        bits = self._buffer("expand'", a.shape, np.bool_)
        z, d = fused_quant(a, fuse, grid, (self._buffer("expand", a.shape, a.dtype), bits))
        if pixel[0] < 0:
            z[0], d[0] = 0.0, False
        return z, d

    def backward(self, ws: list[Array], cache: list[Array], dy: Array) -> list[Array]:
        """d loss / d w for each weighted op, given d loss / d output `dy`. The expand's is
        summed per pixel before its GEMM (module docstring: the per-pixel gradient)."""
        pixel, tap, idx, z1, d1, z2, d2, d3, d4 = cache
        dp = dy * d4 * d3
        k = 1 if self.expand else 0
        grads = [matmul(z2.T, dp)]
        dd = matmul(dp, ws[k + 1].T) * d2
        grads.insert(0, depthwise_grad(z1, tap, dd))
        if self.expand:
            g = self._buffer("pixel_grad", (len(pixel), dd.shape[1]), np.result_type(dd, ws[1]))
            g = pixel_grad(tap, idx, dd, ws[1], len(pixel), d1, g)
            inside = slice(int(pixel[0] < 0), None)  # the padding's row is 0
            grads.insert(0, matmul(self.pixels[pixel[inside]].T, g[inside]))
        return grads

    def error(
        self,
        ws: list[Array],
        bs: list[Array],
        grids: list[tuple[float, int] | None],
        target: Array,
    ) -> float:
        """Mean squared error against `target` over every row (in chunks)."""
        total = 0.0
        for start in range(0, self.rows, CHUNK):
            idx = np.arange(start, min(start + CHUNK, self.rows))
            y, _ = self.forward(ws, bs, grids, idx)
            total += float(((y - target[idx]).astype(np.float64) ** 2).sum())
        return total / max(target.size, 1)

    def output(self, ws: list[Array], bs: list[Array], grids: list[Any]) -> Array:
        parts = [  # copied: each forward writes its output into the same reused array
            self.forward(ws, bs, grids, np.arange(s, min(s + CHUNK, self.rows)))[0].copy()
            for s in range(0, self.rows, CHUNK)
        ]
        return np.concatenate(parts)


def _step(i: int, soft: SoftRounding, grads: list[Array], t: int, beta: float | None) -> None:
    soft.step(grads[i], t, beta)


def fit_block(
    patches_q: BlockPatches,
    target: Array,
    floats: list[Array],
    start: list[Array],
    scales: list[Array],
    bs: list[Array],
    grids: list[tuple[float, int] | None],
    iters: int,
    batch: int,
    lam: float,
    rng: np.random.Generator,
) -> tuple[list[Array], float, float]:
    """The block's int8 weights ((K, O) each) refined from `start` (the per-layer roundings)
    in STEPS of `iters` (the per-layer iterations) steps, and the relative errors on its output
    of `start` and of the result (module docstring)."""
    energy = float(np.mean(target.astype(np.float64) ** 2)) or 1.0

    def error(qs: list[Array]) -> float:
        return patches_q.error([q * s for q, s in zip(qs, scales, strict=True)], bs, grids, target)

    e_start = error(start)
    if e_start == 0.0 or iters <= 0:
        return start, e_start / energy, e_start / energy
    base = [np.floor(w / s) for w, s in zip(floats, scales, strict=True)]
    softs = []
    for q0, b0, s in zip(start, base, scales, strict=True):  # h = H_START: down, 1 - it: up
        h0 = H_START + (1.0 - 2.0 * H_START) * np.clip(q0 - b0, 0.0, 1.0)
        p = np.clip((h0 - GAMMA) / (ZETA - GAMMA), 1e-4, 1 - 1e-4)
        softs.append(SoftRounding(b0, np.log(p / (1 - p)), s, lam, late_lr=True))
    iters = max(1, iters * STEPS[0] // STEPS[1])
    warm = iters // 5
    for t in range(1, iters + 1):
        idx = rng.integers(0, patches_q.rows, min(batch, patches_q.rows))
        ws = each_tensor(softs, lambda _, soft: soft.soft())
        y, cache = patches_q.forward(ws, bs, grids, idx)
        dy = 2.0 * (y - target[idx]) / (y.size * e_start)
        grads = patches_q.backward(ws, cache, dy)
        beta = 20.0 + (2.0 - 20.0) * (t - warm) / max(iters - warm, 1)
        late = beta if t > warm else None
        each_tensor(softs, functools.partial(_step, grads=grads, t=t, beta=late))
    vs = [soft.v for soft in softs]
    learned = []
    for b0, v in zip(base, vs, strict=True):
        h = np.clip(1.0 / (1.0 + np.exp(-v)) * (ZETA - GAMMA) + GAMMA, 0.0, 1.0)
        learned.append(np.clip(b0 + (h >= 0.5), -127, 127))
    e_learned = error(learned)
    if e_learned >= e_start:
        return start, e_start / energy, e_start / energy
    return learned, e_start / energy, e_learned / energy


def grids_of(block: Block, qgraph: Graph) -> list[tuple[float, int] | None]:
    """The int8 grids of the block's inner tensors (expand and depthwise outputs), None for
    the project's output (left unrounded in the loss)."""
    out: list[tuple[float, int] | None] = []
    for op in block.ops[:-1]:
        q = qgraph.tensors[op.outputs[0]].quant
        out.append((float(q.scale[0]), int(q.zero_point[0])) if q is not None else None)
    return [*out, None]


def replace_weights(qgraph: Graph, block: Block, ints: list[Array], layouts: list[Any]) -> Graph:
    """`qgraph` with the block's int8 weights set to `ints` ((K, O) each, mapped back by
    `layouts`); scales and zero points unchanged."""
    tensors = dict(qgraph.tensors)
    for op, q, back in zip(block.ops, ints, layouts, strict=True):
        old = qgraph.tensors[op.inputs[1]]
        data = back(q).astype(np.int8)
        tensors[old.name] = Tensor(old.name, old.shape, "int8", data=data, quant=old.quant)
    return qgraph.with_(tensors=tensors)
