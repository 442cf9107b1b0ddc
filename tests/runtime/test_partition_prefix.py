"""`mdla-engine --ops N` and `--cache` on a partitioned manifest (issue 17, docs/partitions.md
section 4): the op prefix 0..N-1 runs across partitions (whole ones before the partition N cuts,
that one as a Neuron model of its prefix), its outputs are the tensors live at the cut, bit-exact
with run_int8 of `mdla_legalize.prefix`; the support of an NPU partition's prefix is asked on its
device, so bisection finds an op inside a partition; each NPU partition has its own cache blob.

The model: softmax over H on the cpu between NPU partitions [stem.0, stem.2] and [mix.0, add,
head] (tests/workbench/softmax_models.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mdla_ir
import mdla_legalize
import mdla_quant
from mdla_emu import build_emulator
from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from mdla_legalize.prefix import prefix
from mdla_quant import run_int8
from mdla_runtime import load, open_target, save
from mdla_runtime.build import engine_path
from mdla_runtime.engine.target import quantize
from tests.runtime.test_engine import fake_adapter
from tests.workbench.softmax_models import softmax_over_height

PARTS = [("mtk-mdla", (0, 1)), ("cpu", (2,)), ("mtk-mdla", (3, 4, 5))]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Graph, Path, np.ndarray]:
    module, x0 = softmax_over_height()
    graph = mdla_ir.from_torch(module, (x0,), name="smh")
    placed = mdla_legalize.place(
        graph, mdla_legalize.load_target("mdla3.5"), "mtk-mdla", ["SOFTMAX"]
    )
    rng = np.random.default_rng(1)
    calib = [[rng.normal(size=x0.shape).astype(np.float32)] for _ in range(2)]
    qgraph = mdla_quant.quantize(placed.graph, calib)
    path = save(qgraph, tmp_path_factory.mktemp("prefix") / "smh.mdla")
    assert [(p.device, p.operations) for p in load(path).partitions] == PARTS
    return qgraph, path, rng.normal(size=x0.shape).astype(np.float32)


@pytest.fixture(scope="module")
def lib() -> str:
    return str(build_emulator())


def engine(path: Path, tmp: Path, x: np.ndarray, *extra: str) -> tuple[int, dict[str, Any], str]:
    f = tmp / "in0.bin"
    f.write_bytes(quantize(x, load(path).inputs[0]).tobytes())
    args = [str(engine_path()), str(path), "--input", str(f), "--outdir", str(tmp), "--json"]
    proc = subprocess.run([*args, *extra], capture_output=True, text=True, timeout=300)
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def outputs(tmp: Path, report: dict[str, Any]) -> dict[str, np.ndarray]:
    return {
        o["name"]: np.fromfile(tmp / o["file"], np.int8).reshape(o["dims"])
        for o in report["outputs"]
    }


def test_every_prefix_is_bit_exact_with_run_int8(
    tmp_path: Path, lib: str, model: tuple[Graph, Path, np.ndarray]
) -> None:
    qgraph, path, x = model
    for n in range(1, len(qgraph.ops) + 1):
        code, report, err = engine(path, tmp_path, x, "--lib", lib, "--ops", str(n))
        assert code == 0, err
        assert (report["ops"], report["total_ops"]) == (n, 6)
        ran = [(dev, sum(i < n for i in ops)) for dev, ops in PARTS]
        want_parts = [(k, dev, c) for k, (dev, c) in enumerate(ran) if c]
        assert [(p["index"], p["device"], p["ops"]) for p in report["partitions"]] == want_parts
        head = qgraph if n == len(qgraph.ops) else prefix(qgraph, n)
        want = dict(zip(head.outputs, run_int8(head, [x], raw=True), strict=True))
        got = outputs(tmp_path, report)
        assert sorted(got) == sorted(want), n
        for name, w in want.items():
            np.testing.assert_array_equal(got[name], w, err_msg=f"--ops {n}: {name}")
    # --ops 4 cuts [mix.0, add, head] after mix.0: the softmax (a cpu output that add would
    # read) and mix.0's output are both live
    code, report, _ = engine(path, tmp_path, x, "--lib", lib, "--ops", "4")
    assert sorted(o["name"] for o in report["outputs"]) == ["mix_1", "softmax"]


def test_the_cut_partition_is_a_model_of_its_prefix(
    tmp_path: Path, model: tuple[Graph, Path, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the Neuron ABI (the fake adapter logs each call): --ops 4 builds partition 0 whole
    (2 operations) and partition 2 as one CONV_2D whose one output is mix.0's."""
    _, path, x = model
    log = tmp_path / "calls.log"
    monkeypatch.setenv("FAKE_NEURON_LOG", str(log))
    code, report, err = engine(path, tmp_path, x, "--lib", str(fake_adapter()), "--ops", "4")
    assert code == 0, err
    calls = log.read_text().splitlines()
    ops = [c.split()[1] for c in calls if c.startswith("operation ")]
    assert ops == [f"code={OpKind.CONV_2D.value}"] * 3
    assert sum(c.startswith("compile devices=mtk-mdla") for c in calls) == 2
    code, report, err = engine(path, tmp_path, x, "--lib", str(fake_adapter()), "--ops", "1")
    assert code == 0, err
    assert [p["index"] for p in report["partitions"]] == [0]


def test_ops_past_the_end_runs_everything_and_zero_is_refused(
    tmp_path: Path, lib: str, model: tuple[Graph, Path, np.ndarray]
) -> None:
    qgraph, path, x = model
    code, report, err = engine(path, tmp_path, x, "--lib", lib, "--ops", "99")
    assert code == 0, err
    assert report["ops"] == 6
    assert [p["ops"] for p in report["partitions"]] == [2, 1, 3]
    (got,) = outputs(tmp_path, report).values()
    np.testing.assert_array_equal(got, run_int8(qgraph, [x], raw=True)[0])
    code, report, _ = engine(path, tmp_path, x, "--lib", lib, "--ops", "0")
    assert code == 2
    assert report["error"]["message"] == "--ops wants a positive integer, got `0`"


def test_support_bisection_finds_the_op_inside_an_npu_partition(
    model: tuple[Graph, Path, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake adapter's mtk-mdla answers all-or-nothing (as the MDLA does) and cannot run ADD:
    the whole model reports every op of partition 2 unsupported, and bisection over prefixes
    (the cut partition asked on its own) names op 4, `add`, the second op of partition 2."""
    _, path, _ = model
    monkeypatch.setenv("FAKE_NEURON_UNSUPPORTED", str(OpKind.ADD.value))
    target = open_target(f"lib:{fake_adapter()}")
    assert target.supported(path) == {"mtk-mdla": [True, True, False, False, False]}
    assert target.supported(path, ops=4) == {"mtk-mdla": [True, True, True]}
    assert target.supported(path, ops=5) == {"mtk-mdla": [True, True, False, False]}
    assert target.supported(path, ops=3) == {"mtk-mdla": [True, True]}  # cpu ops: not asked
    assert target.bisect(path) == 4
    monkeypatch.delenv("FAKE_NEURON_UNSUPPORTED")
    assert target.bisect(path) is None


def corrupt(blob: Path) -> None:
    """Flip one byte of the adapter's network (after the engine's 64-byte prefix): the key
    still matches, the emulator's checksum does not."""
    data = bytearray(blob.read_bytes())
    data[64 + 40] ^= 0x5A
    blob.write_bytes(bytes(data))


def test_one_cache_blob_per_npu_partition(
    tmp_path: Path, lib: str, model: tuple[Graph, Path, np.ndarray]
) -> None:
    qgraph, path, x = model
    cache = tmp_path / "smh.cache"
    (want,) = run_int8(qgraph, [x], raw=True)

    def run(*extra: str) -> tuple[dict[str, Any], str]:
        code, report, err = engine(path, tmp_path, x, "--lib", lib, "--cache", str(cache), *extra)
        assert code == 0, err
        if not extra:
            (got,) = outputs(tmp_path, report).values()
            np.testing.assert_array_equal(got, want)
        return report, err

    def states(report: dict[str, Any]) -> list[str | None]:
        return [p["cache"] for p in report["partitions"]]

    first, _ = run()
    assert (first["cache"], states(first)) == ("stored", ["stored", None, "stored"])
    blobs = sorted(p.name for p in tmp_path.glob("smh.cache*"))
    assert blobs == ["smh.cache.p0", "smh.cache.p2"]  # none for the cpu partition
    second, err = run()
    assert (second["cache"], states(second)) == ("restored", ["restored", None, "restored"])
    assert err == ""
    corrupt(tmp_path / "smh.cache.p2")
    third, err = run()
    assert (third["cache"], states(third)) == ("rebuilt", ["restored", None, "rebuilt"])
    assert err == (
        f"mdla-engine: note: cache {cache}.p2 (partition 2): "
        "NeuronModel_restoreFromCompiledNetwork: BAD_DATA; compiling it again\n"
    )
    fourth, _ = run()
    assert states(fourth) == ["restored", None, "restored"]  # the recompiled blob was stored
    # --ops 4: partition 0 runs whole (its blob holds), partition 2 is another network
    cut, err = run("--ops", "4")
    assert (cut["cache"], states(cut)) == ("rebuilt", ["restored", None, "rebuilt"])
    assert err == ""  # a stale key is not an error: rebuilt silently, as for one model
    (tmp_path / "smh.cache.p0").write_bytes(b"MDLACACHE")  # short: stale
    again, _ = run("--ops", "4")
    assert states(again) == ["rebuilt", None, "restored"]


def test_a_refused_blob_of_one_model_is_compiled_again(tmp_path: Path, lib: str) -> None:
    """Without partitions the engine treats a network the adapter refuses as a partition's
    (restore_partition): a note on stderr, a rebuild that replaces the file, the same outputs;
    the next run restores the rebuilt blob."""
    module, x0 = softmax_over_height()
    graph = mdla_ir.from_torch(module, (x0,), name="one")
    target = mdla_legalize.load_target("mdla3.5")
    rng = np.random.default_rng(2)
    calib = [[rng.normal(size=x0.shape).astype(np.float32)] for _ in range(2)]
    qgraph = mdla_quant.quantize(mdla_legalize.legalize(graph, target), calib)
    path = save(qgraph, tmp_path / "one.mdla")
    assert len(load(path).partitions) == 1
    cache = tmp_path / "one.cache"
    x = rng.normal(size=x0.shape).astype(np.float32)
    (want,) = run_int8(qgraph, [x], raw=True)
    runs = []
    for damage in (False, False, True, False):
        if damage:
            corrupt(cache)
        code, report, err = engine(path, tmp_path, x, "--lib", lib, "--cache", str(cache))
        assert code == 0, err
        (got,) = outputs(tmp_path, report).values()
        np.testing.assert_array_equal(got, want)
        runs.append((report["cache"], err))
    note = (
        f"mdla-engine: note: cache {cache}: NeuronModel_restoreFromCompiledNetwork: BAD_DATA; "
        "compiling it again\n"
    )
    assert runs == [("stored", ""), ("restored", ""), ("rebuilt", note), ("restored", "")]


def test_cache_text_report(tmp_path: Path, lib: str, model: tuple[Graph, Path, np.ndarray]) -> None:
    _, path, x = model
    f = tmp_path / "in0.bin"
    f.write_bytes(quantize(x, load(path).inputs[0]).tobytes())
    args = [str(engine_path()), str(path), "--input", str(f), "--lib", lib]
    args += ["--cache", str(tmp_path / "c")]
    lines = subprocess.run(args, capture_output=True, text=True, check=True).stdout.splitlines()
    assert lines[0].endswith(", cache stored")
    assert lines[1].endswith(", cache stored")
    assert "cache" not in lines[2]  # the cpu partition
    lines = subprocess.run(args, capture_output=True, text=True, check=True).stdout.splitlines()
    assert lines[0].endswith(", cache restored")
    assert lines[3].startswith("  partition 2 on mtk-mdla: 3 operations, median ")
    assert lines[3].endswith(", cache restored")


@pytest.mark.parametrize("state", ["stored", "restored", "rebuilt"])
def test_cut_and_cached_runs_lose_no_memory_under_valgrind(
    tmp_path: Path, lib: str, model: tuple[Graph, Path, np.ndarray], state: str
) -> None:
    """--ops 5 (partition 2 cut after `add`) with --cache, storing, restoring, and recompiling
    after a refused blob: valgrind finds no error and nothing lost (the cut partition copies,
    the restored models and blobs are freed)."""
    _, path, x = model
    f = tmp_path / "in0.bin"
    f.write_bytes(quantize(x, load(path).inputs[0]).tobytes())
    cache = tmp_path / "c"
    args = [str(engine_path()), str(path), "--input", str(f), "--lib", lib, "--ops", "5"]
    args += ["--cache", str(cache), "--outdir", str(tmp_path), "--json"]
    if state != "stored":
        subprocess.run(args, check=True, capture_output=True, timeout=120)
    if state == "rebuilt":
        corrupt(tmp_path / "c.p0")
    env = {**os.environ, "MDLA_EMU_SYSFS": str(tmp_path / "apu")}
    proc = subprocess.run(
        ["valgrind", "--leak-check=full", "--error-exitcode=9", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    last = "stored" if state == "stored" else "restored"  # c.p2 is never corrupted
    assert [p["cache"] for p in report["partitions"]] == [state, None, last]
    assert report["ops"] == 5
    lost = dict(re.findall(r"(definitely|indirectly|possibly) lost: ([\d,]+) bytes", proc.stderr))
    if "All heap blocks were freed" not in proc.stderr:  # else valgrind prints no leak summary
        assert lost == {"definitely": "0", "indirectly": "0", "possibly": "0"}, proc.stderr
    assert "ERROR SUMMARY: 0 errors" in proc.stderr
