"""`format.c_reader` (the C reader through ctypes) and `written` (the bytes and the Manifest a
save returns): the C verdict raises what the Python reader raises on every malformed case;
`written` returns what `parse` of its bytes returns, without the Python decoder, and still
refuses (naming the file) a file either reader refuses."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mdla_runtime
from mdla_runtime import Budget, Manifest, ManifestError
from mdla_runtime.format import c_reader
from mdla_runtime.format import manifest as mf
from mdla_runtime.testing import malformed_cases, partitioned_qgraph, sample_graph


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    if c_reader.library() is None:
        pytest.skip("no C compiler")


@pytest.mark.parametrize("case", malformed_cases(), ids=lambda c: c.name)
def test_the_c_verdict_is_the_python_readers(case: object) -> None:
    with pytest.raises(ManifestError) as py:
        mdla_runtime.parse(case.data)  # type: ignore[attr-defined]
    with pytest.raises(ManifestError) as c:
        c_reader.check(case.data, Budget())  # type: ignore[attr-defined]
    assert type(c.value) is type(py.value) is case.kind  # type: ignore[attr-defined]
    assert (c.value.field, c.value.offset) == (py.value.field, py.value.offset)


def test_a_good_file_passes_any_budget() -> None:
    blob = mdla_runtime.to_bytes(sample_graph())
    assert c_reader.check(blob, Budget())
    assert c_reader.check(blob, Budget.UNLIMITED)  # (its 2^64 limits clamp to the C type)


def _same(a: Manifest, b: Manifest) -> None:
    assert (a.model, a.operations, a.inputs, a.outputs) == (
        b.model,
        b.operations,
        b.inputs,
        b.outputs,
    )
    assert (a.partitions, a.data_size, a.version, a.path) == (
        b.partitions,
        b.data_size,
        b.version,
        b.path,
    )
    assert len(a.operands) == len(b.operands)
    for x, y in zip(a.operands, b.operands, strict=True):
        assert (x.type, x.dims, x.name, x.scale, x.zero_point) == (
            y.type,
            y.dims,
            y.name,
            y.scale,
            y.zero_point,
        )
        assert (x.channel_dim, x.scales, x.value) == (y.channel_dim, y.scales, y.value)
        assert (x.data is None) == (y.data is None)
        if x.data is not None and y.data is not None:
            assert x.data.dtype == y.data.dtype
            assert np.array_equal(x.data, y.data)


@pytest.mark.parametrize("make", [sample_graph, partitioned_qgraph])
def test_written_is_what_parse_returns(make: object, monkeypatch: pytest.MonkeyPatch) -> None:
    graph = make()  # type: ignore[operator]
    path = Path("m.mdla")
    decoded: list[bytes] = []
    real = mf.validate
    monkeypatch.setattr(
        mf, "validate", lambda buf, budget: decoded.append(buf) or real(buf, budget)
    )
    blob, manifest = mdla_runtime.written(graph, path)
    assert decoded == []  # the Python decoder never ran
    assert blob == mdla_runtime.to_bytes(graph)
    _same(manifest, mdla_runtime.parse(blob, path, Budget.UNLIMITED))


def _broken(encoded: tuple[bytes, dict[str, object], int]) -> tuple[bytes, dict[str, object], int]:
    blob, header, start = encoded
    return b"GGUF" + blob[4:], header, start


@pytest.mark.parametrize("c", [True, False], ids=["c-reader", "python-reader"])
def test_written_refuses_a_bad_file_by_name(c: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    graph = sample_graph()
    real = mf._encode
    monkeypatch.setattr(mf, "_encode", lambda g: _broken(real(g)))
    if not c:
        monkeypatch.setattr(c_reader, "library", lambda: None)
    with pytest.raises(mdla_runtime.errors.BadMagicError, match=r"^out\.mdla: BadMagic"):
        mdla_runtime.written(graph, Path("out.mdla"))
