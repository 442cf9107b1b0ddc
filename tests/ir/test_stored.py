"""A float graph stored as data (`mdla_ir.stored`): the same ops, tensors and outputs back,
and every malformation one StoredGraphError naming what is wrong."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import numpy as np
import pytest

import mdla_ir
from mdla_ir import stored
from mdla_ir.stored import StoredGraphError
from mdla_ir.testing import random_inputs
from tests.models import legalized

Array = np.ndarray[Any, Any]


@pytest.mark.parametrize("spec", ["efficientnet_lite0", "lipnet_frontend"])
def test_a_graph_comes_back_op_for_op_and_computes_the_same(spec: str) -> None:
    graph, _ = legalized(spec)
    back, bound_to = stored.loads(stored.dumps(graph, "ab" * 32))
    assert bound_to == "ab" * 32
    assert back.ops == tuple(op.with_(source=None) for op in graph.ops)
    assert (back.inputs, back.outputs, back.layout) == (graph.inputs, graph.outputs, graph.layout)
    assert dict(back.boundary) == dict(graph.boundary)
    assert back.tensors.keys() == graph.tensors.keys()
    for name, t in graph.tensors.items():
        assert (back.tensors[name].shape, back.tensors[name].dtype) == (t.shape, t.dtype)
        if t.data is not None:
            np.testing.assert_array_equal(back.const(name), t.data)
    x = random_inputs(graph)
    for want, got in zip(mdla_ir.run_float(graph, x), mdla_ir.run_float(back, x), strict=True):
        np.testing.assert_array_equal(got, want)


def _tiny() -> mdla_ir.Graph:
    graph, _ = legalized("lipnet_frontend")
    return graph


def _rewrite(blob: bytes, header: dict[str, Any] | None = None, **arrays: Array) -> bytes:
    """`blob` with its header replaced (when given) and members replaced or added."""
    with np.load(io.BytesIO(blob), allow_pickle=False) as z:
        members = {k: z[k] for k in z.files}
    if header is not None:
        members["header"] = np.frombuffer(json.dumps(header).encode(), np.uint8)
    members |= arrays
    buf = io.BytesIO()
    np.savez(buf, **members)
    return buf.getvalue()


def _header(blob: bytes) -> dict[str, Any]:
    with np.load(io.BytesIO(blob), allow_pickle=False) as z:
        parsed: dict[str, Any] = json.loads(z["header"].tobytes())
        return parsed


def _huge_claim(blob: bytes) -> bytes:
    """Member c0's .npy header rewritten to claim 10^12 floats (its data left as it was)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(blob)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "c0.npy":
                text = data[10 : 10 + int.from_bytes(data[8:10], "little")].decode()
                start = text.index("'shape': (") + len("'shape': (")
                claimed = text[:start] + "1000000, 1000000" + text[text.index(")", start) :]
                head = claimed.encode().ljust(len(text.encode()))
                data = data[:10] + head + data[10 + len(head) :]
            dst.writestr(info, data)
    return out.getvalue()


def _bad_blobs() -> list[tuple[str, bytes, str]]:
    blob = stored.dumps(_tiny(), "00")
    h = _header(blob)
    later = h | {"version": stored.VERSION + 1}
    unknown = h | {"ops": [h["ops"][0] | {"kind": "NOT_AN_OP"}, *h["ops"][1:]]}
    bad_attr = h | {"ops": [h["ops"][0] | {"attrs": {"no_such": 1}}, *h["ops"][1:]]}
    dangling = h | {"ops": [h["ops"][0] | {"inputs": ["nowhere"]}, *h["ops"][1:]]}
    c0 = next(t for t in h["tensors"] if t["const"] == 0)
    reshaped = h | {"tensors": [t | {"shape": [7]} if t is c0 else t for t in h["tensors"]]}
    act = next(t for t in h["tensors"] if t["const"] < 0 and t["name"] not in h["inputs"])
    lying = h | {"tensors": [t | {"shape": [1, 2, 3]} if t is act else t for t in h["tensors"]]}
    vast = h | {
        "tensors": [t | {"shape": [1, 128, 1024, 1024]} if t is act else t for t in h["tensors"]]
    }
    huge = h | {"tensors": [t | {"shape": [10**6, 10**6]} if t is c0 else t for t in h["tensors"]]}
    return [
        ("not a zip", b"PK\x03\x04 nonsense", "not a stored float graph"),
        ("another format", _rewrite(blob, h | {"format": "x"}), "no `mdla-float-graph` header"),
        ("a later version", _rewrite(blob, later), "format 2; this mdla reads 1: compile"),
        ("an unknown kind", _rewrite(blob, unknown), "unknown kind 'NOT_AN_OP'"),
        ("a wrong attribute", _rewrite(blob, bad_attr), "unknown attribute(s) ['no_such']"),
        ("a dangling tensor", _rewrite(blob, dangling), "uses unknown tensor(s) ['nowhere']"),
        ("a shape not the tensor's", _rewrite(blob, reshaped), "array `c0`:"),
        ("a shape that lies", _rewrite(blob, lying), "the stored float graph does not verify"),
        ("a vast tensor", _rewrite(blob, vast), "over the 256 MiB a stored graph's tensor may"),
        ("a huge claim", _huge_claim(_rewrite(blob, huge)), "claims 4000000000000 bytes"),
    ]


@pytest.mark.parametrize(
    ("blob", "message"), [pytest.param(b, m, id=w) for w, b, m in _bad_blobs()]
)
def test_a_malformed_blob_is_one_error(blob: bytes, message: str) -> None:
    with pytest.raises(StoredGraphError) as info:
        stored.loads(blob)
    assert message in str(info.value)


def test_the_sidecar_sits_beside_the_mdla() -> None:
    assert str(stored.sidecar("out/net.mdla")) == "out/net.mdla.fp32"


def test_members_over_the_limit_are_refused_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    blob = stored.dumps(_tiny(), "00")
    monkeypatch.setattr(stored, "MAX_BYTES", 1 << 20)
    with pytest.raises(StoredGraphError, match=r"MiB: over the 1 MiB one may hold"):
        stored.loads(blob + b"")  # lipnet's front-end: several MiB of float weights


def test_mutated_bytes_give_a_graph_or_one_stored_graph_error() -> None:
    """300 blobs with random bytes flipped, cut or inserted: each loads (a change the checks
    let through, e.g. inside a weight) or raises StoredGraphError; nothing else escapes."""
    blob = stored.dumps(_tiny(), "00")
    rng = np.random.default_rng(7)
    outcomes = {"loaded": 0, "refused": 0}
    for _ in range(300):
        data = bytearray(blob)
        for _ in range(int(rng.integers(1, 4))):
            at = int(rng.integers(0, len(data)))
            how = int(rng.integers(0, 3))
            if how == 0:
                data[at] ^= 1 << int(rng.integers(0, 8))
            elif how == 1:
                del data[at : at + int(rng.integers(1, 64))]
            else:
                data[at:at] = rng.integers(0, 256, int(rng.integers(1, 16)), np.uint8).tobytes()
        try:
            stored.loads(bytes(data))
            outcomes["loaded"] += 1
        except StoredGraphError:
            outcomes["refused"] += 1
    assert outcomes["refused"] > 0
    assert outcomes["loaded"] + outcomes["refused"] == 300
