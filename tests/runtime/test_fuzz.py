"""Fuzzing both manifest readers: hypothesis mutations of valid files must only ever raise
ManifestError from the Python reader, and a ~20 s libFuzzer run under AddressSanitizer and
UBSan, seeded with valid manifests, must find no crash in the C reader."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mdla_ir.builders import random_qgraph
from mdla_ir.ops import OpKind
from mdla_runtime import ManifestError
from mdla_runtime.build import CSRC, generated_dir
from mdla_runtime.format.manifest import parse, to_bytes
from mdla_runtime.testing import chain_qgraph, malformed_cases, pack, sample_manifest, split

SEEDS = [sample_manifest(), to_bytes(chain_qgraph())]
SEEDS += [to_bytes(random_qgraph(k, np.random.default_rng(0))) for k in (OpKind.MEAN, OpKind.PAD)]
FUZZ_SECONDS = 20


def _reads_or_rejects(blob: bytes) -> None:
    try:
        m = parse(blob)
    except ManifestError as exc:
        offset = exc.offset
        m = None
    if m is None:
        assert offset is not None
        assert 0 <= offset <= len(blob)
        return
    for o in m.operands:  # a file that parses is internally consistent
        assert o.data is None or o.data.size == int(np.prod(o.dims))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_byte_mutations_only_raise_manifest_errors(data: st.DataObject) -> None:
    blob = bytearray(data.draw(st.sampled_from(SEEDS)))
    for _ in range(data.draw(st.integers(1, 8))):
        action = data.draw(st.sampled_from(["flip", "cut", "insert", "overwrite"]))
        pos = data.draw(st.integers(0, max(len(blob) - 1, 0)))
        if action == "flip" and blob:
            blob[pos] ^= 1 << data.draw(st.integers(0, 7))
        elif action == "cut":
            del blob[pos:]
        elif action == "insert":
            blob[pos:pos] = data.draw(st.binary(min_size=1, max_size=16))
        else:
            chunk = data.draw(st.binary(min_size=1, max_size=8))
            blob[pos : pos + len(chunk)] = chunk
    _reads_or_rejects(bytes(blob))


VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=8,
)


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(obj, dict):
        out += [p for k, v in obj.items() for p in _paths(v, (*prefix, k))]
    elif isinstance(obj, list):
        out += [p for i, v in enumerate(obj) for p in _paths(v, (*prefix, i))]
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_header_value_mutations_only_raise_manifest_errors(data: st.DataObject) -> None:
    header, body = split(data.draw(st.sampled_from(SEEDS)))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(header)[1:]))
        parent = header
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = data.draw(VALUES)
    _reads_or_rejects(pack(header, body))


def test_libfuzzer_finds_no_crash_in_the_c_reader(tmp_path: Path) -> None:
    clang = shutil.which("clang")
    if clang is None:
        pytest.fail("clang is missing, the C reader's fuzz run needs it: apt-get install -y clang")
    exe = tmp_path / "fuzz_manifest"
    srcs = [
        str(CSRC / f)
        for f in ("fuzz_manifest.c", "manifest.c", "manifest_check.c", "mdla_msgpack.c")
    ]
    flags = ["-std=c11", "-g", "-O1", "-fsanitize=fuzzer,address,undefined"]
    flags += ["-fno-sanitize-recover=undefined", f"-I{generated_dir()}"]
    build = subprocess.run([clang, *flags, *srcs, "-o", str(exe)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i, blob in enumerate(SEEDS + [c.data for c in malformed_cases()]):
        (corpus / f"seed{i}.mdla").write_bytes(blob)
    # The RSS limit covers ASan's shadow memory and libFuzzer's corpus on a loaded machine (1 GiB
    # was hit with 24 MB of live heap); the malloc limit is what bounds any single allocation a
    # malformed header could ask for.
    cmd = [str(exe), f"-max_total_time={FUZZ_SECONDS}", "-max_len=8192"]
    cmd += ["-rss_limit_mb=4096", "-malloc_limit_mb=1024"]
    cmd += [f"-artifact_prefix={tmp_path}/", str(corpus)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=FUZZ_SECONDS + 120)
    crashes = sorted(p.name for p in tmp_path.glob("crash-*"))
    assert not crashes, run.stderr[-3000:]
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Done" in run.stderr
    assert "runs in" in run.stderr
