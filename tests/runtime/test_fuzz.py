"""Fuzzing both manifest readers: hypothesis mutations of valid files must only ever raise
ManifestError from the Python reader, and a ~20 s libFuzzer run under AddressSanitizer and
UBSan, seeded with valid manifests, must find no crash in the C reader."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mdla_emu import build_emulator
from mdla_emu.emulator import CSRC as EMU_CSRC
from mdla_ir.builders import random_qgraph
from mdla_ir.ops import OpKind
from mdla_runtime import ManifestError
from mdla_runtime.build import (
    ENGINE_SOURCES,
    FORMAT,
    READER_SOURCES,
    compile_c,
    engine_path,
    generated_dir,
)
from mdla_runtime.format.manifest import parse, to_bytes
from mdla_runtime.testing import (
    chain_qgraph,
    malformed_cases,
    pack,
    partitioned_qgraph,
    sample_manifest,
    split,
)
from tests.runtime.fuzzing import (
    NOT_IN_HARNESS,
    fresh_process,
    fuzz,
    run_driver,
    run_fresh,
    seed_manifests,
)
from tests.runtime.mutate import mutate
from tests.runtime.test_engine import inputs_for

SEEDS = [sample_manifest(), to_bytes(chain_qgraph()), to_bytes(partitioned_qgraph())]
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
    owned = sorted(i for p in m.partitions for i in p.operations)  # each operation in one
    assert owned == list(range(len(m.operations)))


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


@pytest.mark.deep  # timed fuzz runs: `make deep`
def test_libfuzzer_finds_no_crash_in_the_c_reader(tmp_path: Path) -> None:
    clang = shutil.which("clang")
    if clang is None:
        pytest.fail("clang is missing, the C reader's fuzz run needs it: apt-get install -y clang")
    exe = tmp_path / "fuzz_manifest"
    srcs = [str(FORMAT / "fuzz_manifest.c"), *map(str, READER_SOURCES)]
    flags = ["-std=c11", "-g", "-O1", "-fsanitize=fuzzer,address,undefined"]
    flags += ["-fno-sanitize-recover=undefined", f"-I{generated_dir()}", f"-I{EMU_CSRC}"]
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
    run = run_fresh(cmd, timeout=FUZZ_SECONDS + 120)
    crashes = sorted(p.name for p in tmp_path.glob("crash-*"))
    assert not crashes, run.stderr[-3000:]
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Done" in run.stderr
    assert "runs in" in run.stderr


# ---- beyond the readers: the engine harness (csrc/engine/fuzz_engine.c, tests/runtime/fuzzing.py)

ENGINE_FUZZ_SECONDS = 15
MUTANTS = 3000  # structure-aware mutants for the differential test (deterministic seed)
ENGINE_RUNS = 120  # accepted mutants also run through mdla-engine on the emulator


def _write(directory: Path, blobs: list[bytes], stem: str) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"{stem}{i:05d}.mdla" for i in range(len(blobs))]
    for path, blob in zip(paths, blobs, strict=True):
        path.write_bytes(blob)
    return paths


def test_engine_harness_runs_every_seed_clean(tmp_path: Path) -> None:
    """Every seed (a valid manifest of each kind) planned, built, compiled, run and round-tripped
    under ASan + UBSan. Found: a misaligned int32 store in emu/kernel_common.c (emu_gemm_s16)
    on an unmutated random FULLY_CONNECTED (odd input width: FC's accumulators followed its
    int16 row in the scratch)."""
    proc = run_driver(_write(tmp_path, seed_manifests(), "seed"))
    assert proc.returncode == 0, proc.stderr[-4000:]


REGRESSIONS = Path(__file__).parent / "fuzz_regressions"


def test_engine_harness_runs_the_inputs_it_once_crashed_on_clean(tmp_path: Path) -> None:
    """Inputs libFuzzer found crashing the engine, kept as files and replayed every run.
    conv_rows_null_requant.mdla: a CONV_2D whose requantization is not narrow, where the rows
    GEMM's per-channel table is NULL and conv_rows still formed its four offsets from it
    (UBSan: applying non-zero offset 64 to null pointer)."""
    blobs = [path.read_bytes() for path in sorted(REGRESSIONS.glob("*.mdla"))]
    assert blobs
    proc = run_driver(_write(tmp_path, blobs, "crash"))
    assert proc.returncode == 0, proc.stderr[-4000:]


def _with_quant(blob: bytes, scales: dict[int, float]) -> bytes:
    header, data = split(blob)
    for index, scale in scales.items():
        header["operands"][index]["scale"] = scale
        for rec in header["inputs"] + header["outputs"]:
            if rec["operand"] == index:
                rec["scale"] = scale
    return pack(header, data)


def test_engine_harness_survives_extreme_scales(tmp_path: Path) -> None:
    """UBSan findings in the emulator: a shift exponent of 118 (emu/arith.h) for an output
    scale of 1e-38, inf->int (emu/k_relu.c) for FLT_MIN. Both readers may accept these scales
    (positive, finite); the emulator now rejects the multiplier at prepare and saturates the
    clamp bound, so the harness runs clean (test_emu_hardening.py checks the results)."""
    flt_min = float(np.finfo(np.float32).tiny)
    blobs = []
    for kind in (OpKind.FULLY_CONNECTED, OpKind.CONV_2D, OpKind.RELU, OpKind.RELU6, OpKind.ADD):
        blob = to_bytes(random_qgraph(kind, np.random.default_rng(1)))
        header, _ = split(blob)
        out = header["outputs"][0]["operand"]
        blobs.append(_with_quant(blob, {out: 1e-38}))
        blobs.append(_with_quant(blob, {out: flt_min}))
        blobs.append(_with_quant(blob, {header["inputs"][0]["operand"]: flt_min, out: flt_min}))
    proc = run_driver(_write(tmp_path, blobs, "scale"))
    assert proc.returncode == 0, proc.stderr[-4000:]


@pytest.mark.parametrize(
    "kind",
    [OpKind.RESIZE_BILINEAR, OpKind.RESIZE_NEAREST_NEIGHBOR],
    ids=lambda k: k.name,
)
def test_engine_harness_survives_float_resize_scales(tmp_path: Path, kind: OpKind) -> None:
    """UBSan finding: a RESIZE by float32 scales (a form the readers accept) computed
    floor(40000 * 60000) as an int32 (float-cast-overflow) before the range check."""
    header, data = split(to_bytes(random_qgraph(kind, np.random.default_rng(0))))
    header["operands"][0]["dims"] = [1, 1, 40000, 1]
    for key in ("shape", "model_shape"):
        header["inputs"][0][key] = [1, 1, 40000, 1]
    for size in header["operations"][0]["inputs"][1:3]:
        header["operands"][size].update(type=0, value=60000.0)  # FLOAT32 scalars
    proc = run_driver(_write(tmp_path, [pack(header, data)], "resize"))
    assert proc.returncode == 0, proc.stderr[-4000:]


@pytest.mark.deep  # timed fuzz runs: `make deep`
def test_libfuzzer_finds_no_crash_in_the_engine(tmp_path: Path) -> None:
    """~20 s of libFuzzer through reader, planning, the emulator's build, compile, execution and
    compiled-network round trip (the `make fuzz` harness, briefly)."""
    runs, _, crashes, tail = fuzz(tmp_path, seconds=ENGINE_FUZZ_SECONDS, jobs=1)
    assert not crashes, tail
    assert not tail
    assert runs > 1000


def _python_verdict(blob: bytes) -> str:
    try:
        parse(blob)
    except ManifestError as exc:
        field = exc.field.replace("\n", " ").replace("\r", " ")  # one line, as the C driver
        return f"err {exc.kind} {exc.offset} {field}"
    return "ok"


def _c_verdicts(paths: list[Path]) -> list[str]:
    sources = [Path(__file__).with_name("manifest_verdicts.c")]
    sources += [f for f in ENGINE_SOURCES if f.name not in {*NOT_IN_HARNESS, "model.c"}]
    exe = compile_c(sources, "manifest_verdicts")
    proc = subprocess.run(
        [str(exe)],
        input="".join(f"{p}\n" for p in paths),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_structure_aware_mutants_agree_between_readers_and_run_clean(tmp_path: Path) -> None:
    """MUTANTS structural mutants (tests/runtime/mutate.py) of the seeds: the Python and the C
    reader agree on each (accept, or the same kind, field and offset); every accepted one runs
    clean through the sanitized engine harness, and ENGINE_RUNS of them through mdla-engine on
    the emulator end in an exit code, never a signal."""
    rng = np.random.default_rng(14)
    seeds = seed_manifests()
    blobs = [mutate(seeds[i % len(seeds)], rng) for i in range(MUTANTS)]
    paths = _write(tmp_path / "mutants", blobs, "m")
    python = [_python_verdict(b) for b in blobs]
    c = _c_verdicts(paths)
    assert len(c) == len(python)
    pairs = zip(paths, python, c, strict=True)
    differ = [f"{p.name}: python {a!r}, C {b!r}" for p, a, b in pairs if a != b]
    assert not differ, f"{len(differ)} of {MUTANTS} mutants differ:\n" + "\n".join(differ[:20])
    accepted = [p for p, v in zip(paths, python, strict=True) if v == "ok"]
    assert MUTANTS // 20 < len(accepted) < MUTANTS // 2  # the mutants reach both outcomes
    proc = run_driver(accepted)
    assert proc.returncode == 0, proc.stderr[-4000:]
    engine, lib = str(engine_path()), str(build_emulator())
    for path in accepted[:ENGINE_RUNS]:
        args = [engine, str(path), "--lib", lib, "--json", *inputs_for(path, tmp_path)]
        run = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
        assert run.returncode in (0, 1, 2, 3, 4), f"{path.name}: {run.returncode} {run.stderr}"


PEAK = "import resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)"


def test_a_fuzzer_does_not_inherit_the_test_processes_peak_rss() -> None:
    """Found in `make test`: libFuzzer's -rss_limit_mb watches the peak RSS, which Linux keeps
    across execve, so a fuzzer started from a 2.9 GB pytest reported out-of-memory on a 3-op
    mutant. A parent with a 600 MB peak: its direct child starts at that peak, the child through
    `fresh_process` does not."""
    parent = (
        "import subprocess, sys\n"
        "hold = bytearray(600 << 20)\n"
        "for i in range(0, len(hold), 4096): hold[i] = 1\n"
        f"child = [sys.executable, '-c', {PEAK!r}]\n"
        "direct = subprocess.run(child, capture_output=True, text=True).stdout\n"
        f"fresh = subprocess.run({fresh_process([])!r} + child, capture_output=True, text=True)\n"
        "print(direct.strip(), fresh.stdout.strip())\n"
    )
    out = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True, check=True)
    direct, fresh = map(int, out.stdout.split())
    assert direct >= 600  # the kernel behaviour the wrapper exists for
    assert fresh < 200


def test_a_timeout_kills_the_fuzzer_not_only_its_shell() -> None:
    """run_fresh starts the command as a shell's grandchild: on a timeout the whole process
    group goes, so no fuzzer outlives the test."""
    marker = "31.4159"  # a sleep no other process runs
    start = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_fresh(["sleep", marker], timeout=0.5)
    # killing only the shell leaves the sleep holding the pipes: the call would wait it out
    assert time.monotonic() - start < 20
    left = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if cmdline.read_bytes().split(b"\0")[:2] == [b"sleep", marker.encode()]:
                left.append(cmdline.parent.name)
        except OSError:  # the process ended while we looked
            continue
    assert not left, f"the fuzzer outlived its timeout: pid {left}"
