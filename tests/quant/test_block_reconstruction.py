"""Block reconstruction (AdaRound to an inverted-residual block's output): the blocks it finds,
the patch form equal to the float network on the sampled positions, its gradient equal to
finite differences, a block output better reconstructed than per-layer AdaRound leaves it, the
weights ordinary int8 the emulator runs bit for bit, and the config through the manifest."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mdla_ir
import mdla_runtime
from mdla_ir import Graph, OpKind
from mdla_ir.testing import GraphBuilder
from mdla_quant import QuantConfig, block_reconstruction, quantize, run_int8, soft_rounding
from mdla_quant.adaround import _weight_layout, adaround
from mdla_quant.block_reconstruction import BlockPatches, find_blocks, fused_quant
from mdla_quant.errors import QuantError
from mdla_quant.sequential import dequantize

ONE = {"stride": (1, 1), "dilation": (1, 1), "padding": (0, 0, 0, 0), "groups": 1}


def samples(n: int, seed: int = 0, side: int = 10) -> list[list[Any]]:
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal((1, side, side, 3)).astype(np.float32)] for _ in range(n)]


def mbconv(stride: int = 1, residual: bool = True, seed: int = 0, expand: bool = True) -> Graph:
    """stem conv 3x3 (3->6, RELU) -> expand 1x1 (6->18, RELU6; when `expand`) -> depthwise 3x3
    (stride, RELU6) -> project 1x1 (18->6, or 6->6) -> ADD stem (when residual) -> head 1x1
    (6->4)."""
    rng = np.random.default_rng(seed)

    def const(name: str, *shape: int, scale: float = 1.0) -> str:
        # weights heavy-tailed (Student t, 3 dof), as folded BatchNorm leaves them: a few
        # large taps set each channel's int8 step, the rest round coarsely
        draw = rng.standard_t(3, shape) if name.startswith("w") else rng.standard_normal(shape)
        return b.const(name, (draw * scale).astype(np.float32))

    b = GraphBuilder(layout="NHWC")
    x = b.input("x", (1, 10, 10, 3))
    stem = b.op(
        OpKind.CONV_2D,
        [x, const("ws", 6, 3, 3, 3, scale=0.5), const("bs", 6, scale=0.1)],
        name="stem",
        fuse="RELU",
        **{**ONE, "padding": (1, 1, 1, 1)},
    )
    c = 18 if expand else 6
    e = stem
    if expand:
        e = b.op(
            OpKind.CONV_2D,
            [stem, const("we", 18, 1, 1, 6, scale=0.6), const("be", 18, scale=0.3)],
            name="expand",
            fuse="RELU6",
            **ONE,
        )
    pad = (0, 1, 0, 1) if stride == 2 else (1, 1, 1, 1)
    d = b.op(
        OpKind.DEPTHWISE_CONV_2D,
        [e, const("wd", 1, 3, 3, c, scale=0.5), const("bd", c, scale=0.2)],
        name="dw",
        fuse="RELU6",
        stride=(stride, stride),
        dilation=(1, 1),
        padding=pad,
        multiplier=1,
    )
    p = b.op(
        OpKind.CONV_2D,
        [d, const("wp", 6, 1, 1, c, scale=0.3), const("bp", 6, scale=0.1)],
        name="project",
        fuse="NONE",
        **ONE,
    )
    if residual:
        p = b.op(OpKind.ADD, [p, stem], name="add", fuse="NONE")
    out = b.op(
        OpKind.CONV_2D,
        [p, const("wh", 4, 1, 1, 6, scale=0.5), const("bh", 4, scale=0.1)],
        name="head",
        fuse="NONE",
        **ONE,
    )
    return b.build(out)


def test_the_inverted_residual_block_is_found() -> None:
    (block,) = find_blocks(mbconv())
    assert [op.name for op in block.ops] == ["expand", "dw", "project"]
    assert block.add is not None
    assert block.add.name == "add"
    assert block.input == mbconv().ops[0].outputs[0]
    (strided,) = find_blocks(mbconv(stride=2, residual=False))
    assert strided.add is None


def _weights(g: Graph, names: list[str]) -> tuple[list[Any], list[Any]]:
    ops = {op.name: op for op in g.ops}
    ws = [_weight_layout(ops[n], g.const(ops[n].inputs[1]))[0] for n in names]
    bs = [g.const(ops[n].inputs[2]) for n in names]
    return ws, bs


@pytest.mark.parametrize(("stride", "residual"), [(1, True), (2, False)])
def test_the_patch_form_is_the_block_on_the_sampled_positions(stride: int, residual: bool) -> None:
    g = mbconv(stride, residual)
    (block,) = find_blocks(g)
    xs = samples(2)
    out = block.add.outputs[0] if block.add is not None else block.ops[-1].outputs[0]
    stems, outs = [], []
    for x in xs:
        env = mdla_ir.evaluate(g, x, keep=(block.input, out))
        stems.append(env[block.input])
        outs.append(env[out])
    full = np.concatenate(outs).reshape(-1, outs[0].shape[-1])  # rows in (b, y, x) order
    picks = np.sort(np.random.default_rng(1).choice(len(full), 40, replace=False))
    patches = BlockPatches(block, g, stems, picks)
    ws, bs = _weights(g, ["expand", "dw", "project"])
    got = patches.output(ws, bs, [None, None, None])
    np.testing.assert_allclose(got, full[picks], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("stride", [1, 2])
def test_the_expand_is_computed_once_per_distinct_pixel(stride: int) -> None:
    """The expand's quantized output on the distinct pixels a step's taps read, read at each
    tap, is bit for bit the tap-wise computation (0 in the padding), on fewer GEMM rows."""
    g = mbconv(stride, residual=stride == 1)
    (block,) = find_blocks(g)
    stems = [mdla_ir.evaluate(g, x, keep=(block.input,))[block.input] for x in samples(2)]
    picks = np.arange(2 * int(np.prod(g.tensors[block.ops[1].outputs[0]].shape[1:3])))
    patches = BlockPatches(block, g, stems, picks)
    (w, _), (b, _) = _weights(g, ["expand", "dw"])
    idx = np.random.default_rng(2).integers(0, len(picks), 64)
    grid = (0.05, -128)
    pixel, tap = np.unique(patches.pixel[idx], return_inverse=True)
    z, d = patches._expand(w, b, "RELU6", grid, pixel)
    x = np.concatenate(stems)
    inside = patches.pixel[idx] >= 0
    flat = x.reshape(-1, x.shape[-1])[np.where(inside, patches.pixel[idx], 0)]
    z0, d0 = fused_quant(flat @ w + b, "RELU6", grid)
    np.testing.assert_array_equal(z[tap.reshape(inside.shape)], z0 * inside[..., None])
    np.testing.assert_array_equal(d[tap.reshape(inside.shape)], d0 * inside[..., None])
    assert not inside.all()  # the padding is read
    assert len(pixel) < inside.size / 2


@pytest.mark.parametrize(
    ("stride", "residual", "expand"), [(1, True, True), (2, False, True), (1, True, False)]
)
def test_the_gradient_is_the_loss_derivative(stride: int, residual: bool, expand: bool) -> None:
    """Every weight's gradient against central differences of the loss, on a step that reads
    the padding and samples some positions twice (their rows summed per pixel first)."""
    g = mbconv(stride, residual, expand=expand)
    (block,) = find_blocks(g)
    names = [op.name for op in block.ops]
    stems = [mdla_ir.evaluate(g, x, keep=(block.input,))[block.input] for x in samples(2)]
    positions = 2 * int(np.prod(g.tensors[block.ops[1].outputs[0]].shape[1:3]))
    patches = BlockPatches(block, g, stems, np.arange(positions))
    ws, bs = _weights(g, names)
    ws = [w.astype(np.float64) for w in ws]
    rng = np.random.default_rng(2)
    target = rng.standard_normal((patches.rows, 6))
    idx = rng.integers(0, patches.rows, 60)
    assert len(np.unique(idx)) < len(idx)
    assert (patches.pixel[idx] < 0).any()

    def loss(w: list[Any]) -> float:
        y, _ = patches.forward(w, bs, [None] * len(w), idx)
        return float(((y - target[idx]) ** 2).sum())

    y, cache = patches.forward(ws, bs, [None] * len(ws), idx)
    grads = patches.backward(ws, cache, 2 * (y - target[idx]))
    eps = 1e-5
    for layer, (w, gw) in enumerate(zip(ws, grads, strict=True)):
        assert gw.shape == w.shape
        numeric = np.empty_like(w)
        for k, o in np.ndindex(*w.shape):
            up = [v.copy() for v in ws]
            up[layer][k, o] += eps
            down = [v.copy() for v in ws]
            down[layer][k, o] -= eps
            numeric[k, o] = (loss(up) - loss(down)) / (2 * eps)
        np.testing.assert_allclose(gw, numeric, rtol=1e-4, atol=1e-4, err_msg=f"layer {layer}")


FIT: dict[str, Any] = {"iters": 300, "rows": 512, "batch": 128}  # the fixture's and each seed's


@pytest.fixture(scope="module")
def fitted() -> tuple[Graph, list[list[Any]], Graph, Graph, Graph, Any]:
    g, calib = mbconv(seed=3), samples(8, seed=4)
    q = quantize(g, calib, QuantConfig(method="minmax", weight_rounding="nearest"))
    per_layer, _ = adaround(g, q, calib, **FIT)
    per_block, report = adaround(g, q, calib, **FIT, blocks=True)
    return g, calib, q, per_layer, per_block, report


def _block_error(g: Graph, q: Graph, data: list[list[Any]]) -> float:
    """The int8 network's error at the block's output (the ADD), against the float network."""
    (block,) = find_blocks(g)
    assert block.add is not None
    name, total = block.add.outputs[0], 0.0
    for x in data:
        want = mdla_ir.evaluate(g, x, keep=(name,))[name]
        seen: dict[str, Any] = {}
        run_int8(q, x, observe=seen.__setitem__)
        total += float(((dequantize(q.tensors[name], seen[name]) - want) ** 2).sum())
    return total


def test_block_reconstruction_beats_per_layer_adaround_on_the_block_output(
    fitted: tuple[Graph, list[list[Any]], Graph, Graph, Graph, Any],
) -> None:
    """The block's output off the fit's positions too (the whole maps of every sample), summed
    over five seeds so that the comparison does not hinge on one draw: a single seed's goes
    either way (the block wins on 14 of seeds 0-19, by -0.99 on average)."""
    g, calib, q, per_layer, per_block, report = fitted
    names = [row[0] for row in report.layers]
    assert names == ["stem", "expand", "dw", "project", "expand+dw+project", "head"]
    _, per_layer_error, refined_error, kept = report.layers[4]
    assert kept
    assert refined_error < per_layer_error
    for name in ("we", "wd", "wp"):  # only the integers move, by at most one step
        t0, t1 = q.tensors[name], per_block.tensors[name]
        assert t0.quant == t1.quant
        assert np.abs(t0.data.astype(int) - t1.data.astype(int)).max() <= 1  # type: ignore[union-attr]
    errors = {"n": 5 * _block_error(g, q, calib), "l": 0.0, "b": 0.0}
    for seed in range(5):
        if seed:
            per_layer, _ = adaround(g, q, calib, **FIT, seed=seed)
            per_block, _ = adaround(g, q, calib, **FIT, blocks=True, seed=seed)
        errors["l"] += _block_error(g, per_layer, calib)
        errors["b"] += _block_error(g, per_block, calib)
    assert errors["b"] < errors["l"] < errors["n"], errors


def test_block_weights_run_bit_exact_on_the_emulator(
    tmp_path: Path, fitted: tuple[Graph, list[list[Any]], Graph, Graph, Graph, Any]
) -> None:
    _, _, _, _, per_block, _ = fitted
    path = mdla_runtime.save(per_block, tmp_path / "block.mdla")
    target = mdla_runtime.open_target("emu")
    for x in samples(2, seed=5):
        got = target.run(mdla_runtime.load(path), x).raw_outputs[0]
        want = run_int8(per_block, x, raw=True)[0]
        assert np.array_equal(got.reshape(want.shape), want)


def test_the_reconstruction_round_trips_through_the_manifest(tmp_path: Path) -> None:
    config = QuantConfig(adaround=10, reconstruction="block")
    q = quantize(mbconv(), samples(2), config)
    m = mdla_runtime.load(mdla_runtime.save(q, tmp_path / "m.mdla"))
    assert m.provenance.quant == config.record()
    assert m.provenance.quant.reconstruction == "block"  # type: ignore[union-attr]


def test_block_reconstruction_needs_adaround_and_a_known_name() -> None:
    with pytest.raises(QuantError, match="adaround > 0"):
        QuantConfig(reconstruction="block")
    with pytest.raises(QuantError, match="unknown reconstruction `net`"):
        dataclasses.replace(QuantConfig(adaround=5), reconstruction="net")


def _int8_digest(q: Graph) -> str:
    h = hashlib.sha256()
    for name in sorted(q.tensors):
        t = q.tensors[name]
        if t.dtype == "int8" and t.data is not None:
            h.update(name.encode())
            h.update(np.ascontiguousarray(t.data).tobytes())
    return h.hexdigest()[:16]


@pytest.mark.parametrize(
    ("stride", "residual", "blocks", "before", "after"),
    [
        (1, True, False, "ee322ccef9eea622", "d10d7e03e7d0c848"),
        (1, True, True, "ee322ccef9eea622", "0cd4fff2f40b57d5"),
        (2, False, True, "ee322ccef9eea622", "6d12bdf61c943664"),
    ],
)
def test_the_chosen_roundings_are_pinned(
    stride: int, residual: bool, blocks: bool, before: str, after: str
) -> None:
    """Every int8 weight AdaRound (and block reconstruction) chooses, bit for bit as the
    straightforward implementation chose them before it was made faster: a speedup that
    moves a single rounding fails here (the digests were taken from that implementation; the
    stride-1 block's since its refinement starts at h = 0.3 and takes 7/10 of the steps, where
    the refined roundings now beat the per-layer ones it kept before)."""
    g, calib = mbconv(stride=stride, residual=residual, seed=3), samples(8, seed=4)
    q = quantize(g, calib, QuantConfig(method="minmax", weight_rounding="nearest"))
    assert _int8_digest(q) == before
    qa, _ = adaround(g, q, calib, iters=120, rows=512, batch=128, blocks=blocks)
    assert _int8_digest(qa) == after


@pytest.mark.parametrize(("stride", "residual", "after"), [(1, True, "0cd4fff2f40b57d5")])
def test_the_roundings_do_not_depend_on_the_threads(
    stride: int, residual: bool, after: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The element-wise step cut into blocks of rows (every tensor, however small) and every
    GEMM cut by columns over 3 threads choose the pinned roundings: each element-wise operation
    is per element and each GEMM column the same sum, so the cut cannot matter."""
    monkeypatch.setattr(soft_rounding, "MIN_CHUNK", 1)
    monkeypatch.setattr(soft_rounding, "MIN_MACS", 1)
    monkeypatch.setattr(soft_rounding, "COLUMNS", 1)
    monkeypatch.setattr(soft_rounding, "CHUNK", 5)
    monkeypatch.setattr(soft_rounding, "threads", lambda: 3)
    g, calib = mbconv(stride=stride, residual=residual, seed=3), samples(8, seed=4)
    q = quantize(g, calib, QuantConfig(method="minmax", weight_rounding="nearest"))
    qa, _ = adaround(g, q, calib, iters=120, rows=512, batch=128, blocks=True)
    assert _int8_digest(qa) == after
    soft = soft_rounding.SoftRounding(
        np.zeros((6, 4), np.float32), np.zeros((6, 4), np.float32), np.float32(1.0), 0.01
    )
    assert [len(lane) for lane in soft.lanes] == [2, 2, 1]  # 5 blocks of rows, 3 threads


def test_the_thread_budget_is_the_workers_share(monkeypatch: pytest.MonkeyPatch) -> None:
    cores = len(os.sched_getaffinity(0))
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert soft_rounding.threads() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", str(cores + 5))
    assert soft_rounding.threads() == cores
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert soft_rounding.threads() == cores


def test_fused_quant_writes_into_the_arrays_given_bit_for_bit() -> None:
    """The step's reused arrays (the derivative also as bool) hold what fresh ones would."""
    y = np.random.default_rng(5).standard_normal((40, 18)).astype(np.float32) * 4
    want, want_d = fused_quant(y, "RELU6", (0.05, -128))
    value, bits = np.empty_like(y), np.empty(y.shape, np.bool_)
    got, got_d = fused_quant(y, "RELU6", (0.05, -128), (value, bits))
    assert got is value
    assert got_d is bits
    assert got.tobytes() == want.tobytes()
    np.testing.assert_array_equal(got_d, want_d.astype(bool))


def _mbconv_patches() -> tuple[BlockPatches, list[Any], list[Any], list[Any]]:
    """The mbconv block's patches over 150 taps, its float weights and biases, its grids."""
    g = mbconv()
    (block,) = find_blocks(g)
    stems = [mdla_ir.evaluate(g, x, keep=(block.input,))[block.input] for x in samples(2)]
    patches = BlockPatches(block, g, stems, np.arange(150))
    ws, bs = _weights(g, ["expand", "dw", "project"])
    grids: list[Any] = [(0.05, -128), (0.05, -128), None]
    return patches, ws, bs, grids


def test_the_output_in_chunks_is_the_output_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each chunk's forward writes into the same reused arrays: every chunk is kept."""
    patches, ws, bs, grids = _mbconv_patches()
    whole, _ = patches.forward(ws, bs, grids, np.arange(150))
    whole = whole.copy()
    monkeypatch.setattr(block_reconstruction, "CHUNK", 7)
    assert patches.output(ws, bs, grids).tobytes() == whole.tobytes()


def test_each_step_writes_into_the_arrays_of_the_step_before() -> None:
    """The expand's and depthwise's values and derivatives: the same memory from step to step
    (a fresh array of tens of MB per step costs its page faults)."""
    patches, ws, bs, grids = _mbconv_patches()
    _, first = patches.forward(ws, bs, grids, np.arange(0, 128))
    _, second = patches.forward(ws, bs, grids, np.arange(64, 128))
    for a, b in zip(first[3:7], second[3:7], strict=True):  # z1, d1, z2, d2
        assert np.shares_memory(a, b)


def test_the_block_fit_is_deterministic() -> None:
    """Two fits of the same block from the same seed choose the same integers and report the
    same errors: no reused array carries a value from one step or fit into the next."""
    patches, ws, bs, grids = _mbconv_patches()
    target = patches.output(ws, bs, [None] * 3)
    scales = [np.float32(np.abs(w).max() / 127) for w in ws]
    start = [np.floor(w / s) for w, s in zip(ws, scales, strict=True)]  # all rounded down

    def fit() -> tuple[list[bytes], float, float]:
        rng = np.random.default_rng(7)
        learned, e0, e1 = block_reconstruction.fit_block(
            patches, target, ws, start, scales, bs, grids, 500, 64, 0.01, rng
        )
        return [q.tobytes() for q in learned], e0, e1

    first = fit()
    assert first[2] < first[1] / 2  # the fit moved integers (it keeps them only if better)
    assert fit() == first


def test_the_small_tensors_of_a_block_step_side_by_side(monkeypatch: pytest.MonkeyPatch) -> None:
    """A block's one-lane weight tensors take their soft weight and step on both threads at
    once, the caller's and the pool's (the pinned roundings hold them to the bits of one
    after the other)."""
    monkeypatch.setattr(soft_rounding, "threads", lambda: 2)
    patches, ws, bs, grids = _mbconv_patches()
    target = patches.output(ws, bs, [None] * 3)
    scales = [np.float32(np.abs(w).max() / 127) for w in ws]
    start = [np.floor(w / s) for w, s in zip(ws, scales, strict=True)]
    where: dict[str, set[str]] = {"soft": set(), "step": set()}
    for name in where:
        real = getattr(soft_rounding.SoftRounding, name)

        def spy(self: Any, *args: Any, real: Any = real, name: str = name) -> Any:
            where[name].add(threading.current_thread().name.split("_")[0])
            return real(self, *args)

        monkeypatch.setattr(soft_rounding.SoftRounding, name, spy)
    rng = np.random.default_rng(7)
    block_reconstruction.fit_block(patches, target, ws, start, scales, bs, grids, 5, 64, 0.01, rng)
    both = {"MainThread", "soft-rounding"}
    assert where == {"soft": both, "step": both}
