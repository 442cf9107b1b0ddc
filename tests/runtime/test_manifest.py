"""The .mdla manifest in Python: save/load round trips of every op kind, the NNAPI operand
orders of the lowering, atomic writes, and one malformed file per error kind."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from mdla_ir.builders import random_qgraph
from mdla_ir.graph import Op
from mdla_ir.ops import FUSE_CODES, OpKind
from mdla_runtime import errors, load, save
from mdla_runtime.format import container as fmt
from mdla_runtime.format.manifest import parse
from mdla_runtime.format.model import MODEL_KEYS
from mdla_runtime.testing import malformed_cases, pack, sample_graph, sample_manifest, split

KINDS = [
    OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D, OpKind.FULLY_CONNECTED, OpKind.AVERAGE_POOL_2D,
    OpKind.MAX_POOL_2D, OpKind.ADD, OpKind.SUB, OpKind.MUL, OpKind.RELU, OpKind.RELU6,
    OpKind.LOGISTIC, OpKind.TANH, OpKind.HARD_SWISH, OpKind.SOFTMAX, OpKind.CONCATENATION,
    OpKind.PAD, OpKind.RESHAPE, OpKind.MEAN, OpKind.RESIZE_BILINEAR,
]  # fmt: skip
CASES = {c.name: c for c in malformed_cases()}


def _values(m: object, idx: tuple[int, ...]) -> list[object]:
    return [m.operands[i].value for i in idx]  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
@pytest.mark.parametrize("seed", range(3))
def test_round_trip_every_op_kind(tmp_path: Path, kind: OpKind, seed: int) -> None:
    graph = random_qgraph(kind, np.random.default_rng(seed))
    m = load(save(graph, tmp_path / "g.mdla"))
    op, (neuron_op,) = graph.ops[0], m.operations
    assert (neuron_op.code, neuron_op.name) == (kind.value, op.name)
    assert fmt.arity_ok(neuron_op.code, len(neuron_op.inputs), len(neuron_op.outputs))
    for name in op.inputs:  # every graph constant comes back byte for byte
        t = graph.tensors[name]
        idx = next(i for i, o in enumerate(m.operands) if o.name == name)
        got = m.operands[idx]
        assert got.dims == t.shape
        if t.data is not None:
            assert got.data is not None
            np.testing.assert_array_equal(got.data, t.data)
        elif t.quant is not None:
            assert got.type == fmt.TENSOR_QUANT8_ASYMM_SIGNED
            assert (got.scale, got.zero_point) == (t.quant.scale[0], t.quant.zero_point[0])
    assert [s.name for s in m.inputs] == list(graph.inputs)
    out = m.outputs[0]
    q = graph.tensors["out"].quant
    assert q is not None
    assert (out.scale, out.zero_point, out.layout) == (q.scale[0], q.zero_point[0], "NHWC")
    assert out.shape == graph.tensors["out"].shape
    assert m.model["name"] == graph.name
    assert m.model["rounding"] == "double"
    assert len(m.model["content_hash"]) == 64
    _check_scalars(m, op, neuron_op.inputs)


def _check_scalars(m: object, op: Op, ins: tuple[int, ...]) -> None:
    """NNAPI operand order (§4): explicit padding l r t b, stride w h, width before height."""
    a, fuse = dataclasses.asdict(op.attrs), FUSE_CODES[op.fuse]
    if op.kind in (OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D):
        t, b, left, r = a["padding"]
        (sh, sw), (dh, dw) = a["stride"], a["dilation"]
        tail = [a["multiplier"]] if op.kind is OpKind.DEPTHWISE_CONV_2D else []
        want = [left, r, t, b, sw, sh, *tail, fuse, False, dw, dh]
        assert _values(m, ins[3:]) == want
        w = m.operands[ins[1]]  # type: ignore[attr-defined]
        if w.type == fmt.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            assert w.channel_dim == (3 if op.kind is OpKind.DEPTHWISE_CONV_2D else 0)
            assert (w.scale, w.zero_point) == (0.0, 0)
        bias = m.operands[ins[2]]  # type: ignore[attr-defined]
        assert bias.type == fmt.TENSOR_INT32
        assert bias.data is not None
    elif op.kind in (OpKind.AVERAGE_POOL_2D, OpKind.MAX_POOL_2D):
        t, b, left, r = a["padding"]
        (sh, sw), (kh, kw) = a["stride"], a["kernel"]
        assert _values(m, ins[1:]) == [left, r, t, b, sw, sh, kw, kh, fuse, False]
    elif op.kind is OpKind.RESIZE_BILINEAR:
        oh, ow = a["size"]
        want = [ow, oh, False, a["align_corners"], a["half_pixel_centers"]]
        assert _values(m, ins[1:]) == want
    elif op.kind is OpKind.MEAN:
        assert _values(m, ins[2:]) == [1 if a["keepdims"] else 0]
        assert m.operands[ins[1]].type == fmt.TENSOR_INT32  # type: ignore[attr-defined]
    elif op.kind is OpKind.PAD:
        pads = m.operands[ins[1]].data  # type: ignore[attr-defined]
        np.testing.assert_array_equal(pads, np.array(a["pads"]))
    elif op.kind in (OpKind.ADD, OpKind.SUB, OpKind.MUL, OpKind.FULLY_CONNECTED):
        assert _values(m, ins[-1:]) == [fuse]


def test_every_slice_is_aligned_and_inside_the_data(tmp_path: Path) -> None:
    graph = random_qgraph(OpKind.CONV_2D, np.random.default_rng(1), large=True)
    path = save(graph, tmp_path / "g.mdla")
    blob = path.read_bytes()
    header, data = split(blob)
    assert blob[:8] == fmt.MAGIC
    assert (len(blob) - len(data)) % fmt.ALIGN == 0
    slices = [o["data"] for o in header["operands"] if "data" in o]
    assert len(slices) >= 2
    assert all(off % fmt.ALIGN == 0 and off + n <= len(data) for off, n in slices)


def test_save_is_atomic_and_leaves_nothing_on_failure(tmp_path: Path) -> None:
    graph = random_qgraph(OpKind.RELU, np.random.default_rng(0))
    bad = graph.with_(ops=(graph.ops[0].with_(kind=OpKind.SILU),))
    target = tmp_path / "m.mdla"
    save(graph, target)
    before = target.read_bytes()
    with pytest.raises(errors.LoweringError, match="legalize"):
        save(bad, target)
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.mdla"]


def test_lowering_names_the_op_and_the_fix() -> None:
    graph = random_qgraph(OpKind.CONV_2D, np.random.default_rng(0))
    grouped = graph.with_(
        ops=(graph.ops[0].with_(attrs=dataclasses.replace(graph.ops[0].attrs, groups=2)),)
    )
    with pytest.raises(errors.LoweringError, match=r"conv_2d0.*groups=2"):
        save(grouped, "/nonexistent/never-written.mdla")


def test_an_edited_but_valid_header_still_loads() -> None:
    header, data = split(sample_manifest())
    header["model"]["labels"] = ["cat", "dog"]
    from mdla_runtime.format.manifest import parse

    assert parse(pack(header, data)).model["labels"] == ["cat", "dog"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_malformed_file_raises_its_error(name: str) -> None:
    from mdla_runtime.format.manifest import parse

    case = CASES[name]
    with pytest.raises(case.kind) as info:
        parse(case.data)
    assert info.value.field == case.field
    assert info.value.offset is not None
    assert 0 <= info.value.offset <= len(case.data)
    assert case.field in str(info.value)
    assert f"byte {info.value.offset}" in str(info.value)


def test_every_error_kind_has_a_malformed_case() -> None:
    assert {c.kind for c in CASES.values()} == set(errors.ALL_KINDS)


@pytest.mark.parametrize(
    ("name", "offset"),
    [("bad_magic", 0), ("future_version", 8), ("header_too_large", 12), ("not_msgpack", 20)],
)
def test_fixed_offsets(name: str, offset: int) -> None:
    from mdla_runtime.format.manifest import parse

    with pytest.raises(errors.ManifestError) as info:
        parse(CASES[name].data)
    assert info.value.offset == offset


def test_save_gives_the_file_ordinary_permissions(tmp_path: Path) -> None:
    import os

    from mdla_runtime.testing import chain_qgraph

    old = os.umask(0o022)
    try:
        path = save(chain_qgraph(), tmp_path / "m.mdla")
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644


def test_the_model_section_round_trips_the_provenance() -> None:
    graph = sample_graph()
    m = parse(sample_manifest())
    assert m.provenance == graph.provenance
    assert m.rounding == "double"
    # postprocess (a detector's): tests/runtime/test_manifest_postprocess.py
    assert set(m.model) == set(MODEL_KEYS) - {"probe_patched", "random_weights", "postprocess"}


def test_the_int16_activation_names_round_trip_and_are_absent_when_none(tmp_path: Path) -> None:
    graph = sample_graph()
    quant = graph.provenance.quant
    assert quant is not None
    prov = dataclasses.replace(graph.provenance, quant=dataclasses.replace(quant, a16=("x", "y")))
    m = load(save(graph.with_(provenance=prov), tmp_path / "a16.mdla"))
    assert m.provenance.quant is not None
    assert m.provenance.quant.a16 == ("x", "y")
    assert m.model["quant"]["a16"] == ["x", "y"]
    assert "a16" not in parse(sample_manifest()).model["quant"]  # int8 files: byte for byte


def test_the_int16_choice_and_its_gains_round_trip_and_are_absent_when_none(
    tmp_path: Path,
) -> None:
    graph = sample_graph()
    quant = graph.provenance.quant
    assert quant is not None
    chosen = dataclasses.replace(
        quant, a16=("x", "y"), a16_gain_db=(0.25, 1.5), a16_mode="auto:25%"
    )
    prov = dataclasses.replace(graph.provenance, quant=chosen)
    m = load(save(graph.with_(provenance=prov), tmp_path / "a16.mdla"))
    assert m.provenance.quant == chosen
    assert m.model["quant"]["a16_gain_db"] == [0.25, 1.5]
    assert m.model["quant"]["a16_mode"] == "auto:25%"
    named = dataclasses.replace(quant, a16=("x",))  # named by hand: no gains, no mode
    m = load(save(graph.with_(provenance=dataclasses.replace(prov, quant=named)), tmp_path / "n"))
    assert {"a16_gain_db", "a16_mode"}.isdisjoint(m.model["quant"])
    assert m.provenance.quant == named


def test_a_format_1_file_says_rebuild() -> None:
    header, data = split(sample_manifest())
    with pytest.raises(errors.FutureVersionError) as info:
        parse(pack(header, data, version=1))
    assert "format version 1, rebuild with `workbench compile`" in str(info.value)
    assert f"reads format {fmt.FORMAT_VERSION}" in str(info.value)
    assert fmt.FORMAT_VERSION == 3
