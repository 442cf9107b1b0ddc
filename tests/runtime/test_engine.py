"""mdla-engine against a fake Neuron Adapter (tests/runtime/fake_adapter.c): it builds every op
of a saved manifest operand by operand in NNAPI order, compiles on the named devices only,
names Neuron results, missing symbols and ops, cuts with --ops, caches, and repeats."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mdla_ir.builders import random_qgraph
from mdla_ir.ops import OpKind
from mdla_runtime import load, save
from mdla_runtime.build import CSRC, compile_c, engine_path
from mdla_runtime.testing import chain_qgraph

FAKE = Path(__file__).parent / "fake_adapter.c"
KINDS = [
    OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D, OpKind.FULLY_CONNECTED, OpKind.AVERAGE_POOL_2D,
    OpKind.MAX_POOL_2D, OpKind.ADD, OpKind.SUB, OpKind.MUL, OpKind.RELU, OpKind.RELU6,
    OpKind.LOGISTIC, OpKind.TANH, OpKind.HARD_SWISH, OpKind.SOFTMAX, OpKind.CONCATENATION,
    OpKind.PAD, OpKind.RESHAPE, OpKind.MEAN, OpKind.RESIZE_BILINEAR,
]  # fmt: skip


def fake_adapter(omit_compute: bool = False) -> Path:
    flags = (f"-I{CSRC}", "-DFAKE_OMIT_COMPUTE") if omit_compute else (f"-I{CSRC}",)
    return compile_c([FAKE], "libfake_neuron.so", shared=True, flags=flags)


def engine(*args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    cmd = [str(engine_path()), *args, "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    return proc.returncode, json.loads(proc.stdout)


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls.log"
    monkeypatch.setenv("FAKE_NEURON_LOG", str(path))
    return path


def inputs_for(m_path: Path, tmp: Path, fill: int = 5) -> list[str]:
    m, args = load(m_path), []
    for k, spec in enumerate(m.inputs):
        f = tmp / f"in{k}.bin"
        f.write_bytes(np.full(int(np.prod(spec.shape)), fill, np.int8).tobytes())
        args += ["--input", str(f)]
    return args


def test_devices_lists_the_adapters_devices() -> None:
    code, out = engine("--devices", "--lib", str(fake_adapter()))
    assert code == 0
    assert out["devices"] == ["mtk-mdla", "mtk-gpu", "mtk-dsp"]
    assert out["version"] == "8.2.0"


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_engine_builds_and_runs_every_op(tmp_path: Path, log: Path, kind: OpKind) -> None:
    graph = random_qgraph(kind, np.random.default_rng(5))
    path = save(graph, tmp_path / "g.mdla")
    m = load(path)
    args = [str(path), "--lib", str(fake_adapter()), "--outdir", str(tmp_path)]
    code, out = engine(*args, *inputs_for(path, tmp_path))
    assert code == 0, out
    lines = log.read_text().splitlines()
    assert sum(line.startswith("operand ") for line in lines) == len(m.operands)
    (op_line,) = [line for line in lines if line.startswith("operation ")]
    ins = ",".join(str(i) for i in m.operations[0].inputs)
    assert op_line == f"operation code={kind.value} in=[{ins}] out=[{m.operations[0].outputs[0]}]"
    n_channel = sum(o.channel_dim is not None for o in m.operands)
    assert sum(line.startswith("perchannel ") for line in lines) == n_channel
    assert "compile devices=mtk-mdla" in lines
    raw = np.fromfile(tmp_path / "output_0.bin", np.int8)
    assert raw.size == int(np.prod(graph.tensors["out"].shape))
    assert (raw == 6).all()  # the fake writes input byte + 1 to output 0


def test_conv_scalars_reach_the_adapter_in_nnapi_order(tmp_path: Path, log: Path) -> None:
    graph = random_qgraph(OpKind.CONV_2D, np.random.default_rng(2))
    path = save(graph, tmp_path / "g.mdla")
    engine(str(path), "--lib", str(fake_adapter()), "--supported")
    values = dict(re.findall(r"^value (\d+) len=4 i32=(-?\d+)$", log.read_text(), re.M))
    m = load(path)
    scalars = [int(values[str(i)]) for i in m.operations[0].inputs[3:] if str(i) in values]
    a = dataclasses.asdict(graph.ops[0].attrs)
    t, b, left, r = a["padding"]
    (sh, sw), (dh, dw) = a["stride"], a["dilation"]
    assert scalars[:6] == [left, r, t, b, sw, sh]
    assert scalars[-2:] == [dw, dh]


def test_supported_reports_per_device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NEURON_UNSUPPORTED", str(OpKind.ADD.value))
    path = save(chain_qgraph(), tmp_path / "chain.mdla")
    lib = str(fake_adapter())
    code, out = engine(str(path), "--lib", lib, "--supported", "--device", "mtk-mdla,mtk-gpu")
    assert code == 0
    assert out["supported"] == {"mtk-mdla": [False] * 4, "mtk-gpu": [True] * 4}
    assert [o["name"] for o in out["ops"]] == ["conv0", "relu0", "add0", "pool0"]


def test_unmappable_is_named_and_never_falls_back(
    tmp_path: Path, log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NEURON_UNSUPPORTED", str(OpKind.ADD.value))
    path = save(chain_qgraph(), tmp_path / "chain.mdla")
    args = [str(path), "--lib", str(fake_adapter()), *inputs_for(path, tmp_path)]
    code, out = engine(*args)
    assert code == 3
    assert out["error"]["result"] == "UNMAPPABLE"
    assert (out["error"]["op_index"], out["error"]["op_name"]) == (2, "add0")
    assert "operation 2 `add0` (ADD)" in out["error"]["message"]
    assert [ln for ln in log.read_text().splitlines() if ln.startswith("compile")] == [
        "compile devices=mtk-mdla"
    ]
    # bisection: 2 ops map, 3 do not, so op 2 (add0) is the culprit
    assert engine(*args, "--ops", "2")[0] == 0
    code, out = engine(*args, "--ops", "3")
    assert code == 3
    assert out["error"]["result"] == "UNMAPPABLE"


@pytest.mark.parametrize(("ops", "live"), [(1, ["c"]), (2, ["c", "r"]), (3, ["a"]), (4, ["p"])])
def test_ops_cut_outputs_the_live_tensors(tmp_path: Path, log: Path, ops: int,
                                          live: list[str]) -> None:  # fmt: skip
    path = save(chain_qgraph(), tmp_path / "chain.mdla")
    args = [str(path), "--lib", str(fake_adapter()), "--ops", str(ops), "--outdir", str(tmp_path)]
    code, out = engine(*args, *inputs_for(path, tmp_path))
    assert code == 0, out
    assert [o["name"] for o in out["outputs"]] == live
    assert sum(ln.startswith("operation ") for ln in log.read_text().splitlines()) == ops
    assert out["ops"] == ops
    assert out["total_ops"] == 4


def test_missing_symbol_is_named(tmp_path: Path) -> None:
    path = save(chain_qgraph(), tmp_path / "chain.mdla")
    lib = fake_adapter(omit_compute=True)
    code, out = engine(str(path), "--lib", str(lib), *inputs_for(path, tmp_path))
    assert code == 4
    assert "missing symbol(s)" in out["error"]["message"]
    assert "NeuronExecution_compute" in out["error"]["message"]


def test_no_adapter_names_every_library_tried(tmp_path: Path) -> None:
    code, out = engine("--devices", env={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": str(tmp_path)})
    assert code == 4
    msg = out["error"]["message"]
    names = ["libneuronusdk_adapter.mtk.so", "libneuron_adapter_mgvi.so", "libneuron_adapter.so"]
    assert all(n in msg for n in names)
    assert msg.index(names[0]) < msg.index(names[1]) < msg.index(names[2])


def test_unknown_device_lists_the_real_ones(tmp_path: Path) -> None:
    path = save(chain_qgraph(), tmp_path / "chain.mdla")
    code, out = engine(str(path), "--lib", str(fake_adapter()), "--device", "mtk-npu")
    assert code == 4
    assert out["error"]["result"] == "UNAVAILABLE_DEVICE"
    assert "mtk-mdla, mtk-gpu, mtk-dsp" in out["error"]["message"]


def test_cache_stores_then_restores(tmp_path: Path, log: Path) -> None:
    path = save(chain_qgraph(), tmp_path / "chain.mdla")
    cache = tmp_path / "chain.cache"
    args = [
        str(path),
        "--lib",
        str(fake_adapter()),
        "--cache",
        str(cache),
        "--outdir",
        str(tmp_path),
    ]
    args += inputs_for(path, tmp_path)
    assert engine(*args)[1]["cache"] == "stored"
    first = (tmp_path / "output_0.bin").read_bytes()
    log.unlink()
    code, out = engine(*args)
    assert code == 0
    assert out["cache"] == "restored"
    calls = log.read_text().splitlines()
    assert any(c.startswith("restore ") for c in calls)
    assert not any(c.startswith(("operation ", "compile ")) for c in calls)
    assert (tmp_path / "output_0.bin").read_bytes() == first
    assert engine(*args, "--ops", "2")[1]["cache"] == "rebuilt"  # a different network


def test_cache_writer_never_opens_a_planted_name(tmp_path: Path) -> None:
    """The engine writes its cache through a fresh exclusive name: a symlink planted at the name
    a writer keyed by pid would use (FILE.tmp<pid>) is left alone, and so is what it points to."""
    path = save(chain_qgraph(), tmp_path / "chain.mdla")
    cache, victim, go = tmp_path / "chain.cache", tmp_path / "victim", tmp_path / "go"
    victim.write_bytes(b"precious")
    args = [str(path), "--lib", str(fake_adapter()), "--cache", str(cache), "--outdir",
            str(tmp_path), *inputs_for(path, tmp_path), "--json"]  # fmt: skip
    wait = f'while [ ! -e "{go}" ]; do sleep 0.01; done; exec "$0" "$@"'
    proc = subprocess.Popen(["sh", "-c", wait, str(engine_path()), *args], stdout=subprocess.PIPE)
    (tmp_path / f"chain.cache.tmp{proc.pid}").symlink_to(victim)  # the pid survives exec
    go.touch()
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0
    assert json.loads(out)["cache"] == "stored"
    assert victim.read_bytes() == b"precious"
    assert cache.read_bytes().startswith(b"MDLACACHE")
    assert not cache.is_symlink()
    assert sorted(p.name for p in tmp_path.glob("chain.cache*")) == [
        "chain.cache", f"chain.cache.tmp{proc.pid}"]  # fmt: skip


def test_repeat_reports_median_and_min(tmp_path: Path) -> None:
    path = save(chain_qgraph(), tmp_path / "chain.mdla")
    code, out = engine(str(path), "--lib", str(fake_adapter()), "--repeat", "7",
                       *inputs_for(path, tmp_path))  # fmt: skip
    lat = out["latency_ms"]
    assert code == 0
    assert lat["runs"] == 7
    assert 0 <= lat["min"] <= lat["median"]


def test_compilation_asks_high_priority_and_a_fast_single_answer(tmp_path: Path, log: Path) -> None:
    """NEURON_PRIORITY_HIGH (110) and NEURON_PREFER_FAST_SINGLE_ANSWER (1), once each, after
    the compilation is created for the device."""
    path = save(chain_qgraph(), tmp_path / "chain.mdla")
    code, out = engine(str(path), "--lib", str(fake_adapter()), *inputs_for(path, tmp_path))
    assert code == 0, out
    calls = log.read_text().splitlines()
    settings = [c for c in calls if c.startswith(("priority", "preference"))]
    assert settings == ["priority 110", "preference 1"]
    assert calls.index("compile devices=mtk-mdla") < calls.index("priority 110")


@pytest.mark.parametrize(
    ("extra", "code", "needle"),
    [
        (["--repeat", "0"], 2, "positive integer"),
        (["--bogus"], 2, "unknown option"),
        (["--device", "mtk-mdla,mtk-mdla"], 2, "named twice"),
    ],
)
def test_usage_errors(tmp_path: Path, extra: list[str], code: int, needle: str) -> None:
    path = save(chain_qgraph(), tmp_path / "chain.mdla")
    got, out = engine(str(path), "--lib", str(fake_adapter()), *extra)
    assert got == code
    assert needle in out["error"]["message"]


def test_wrong_input_size_is_rejected(tmp_path: Path) -> None:
    path = save(chain_qgraph(), tmp_path / "chain.mdla")
    bad = tmp_path / "short.bin"
    bad.write_bytes(bytes(10))
    code, out = engine(str(path), "--lib", str(fake_adapter()), "--input", str(bad))
    assert code == 1
    assert "108" in out["error"]["message"]


def test_help_lists_every_option() -> None:
    proc = subprocess.run([str(engine_path()), "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    for flag in ("--lib", "--device", "--supported", "--ops", "--cache", "--repeat", "--json"):
        assert flag in proc.stdout


def test_compile_c_caches_by_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MDLA_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "hello.c"
    src.write_text("int main(void) { return 7; }\n")
    first = compile_c([src], "hello")
    assert first.is_relative_to(tmp_path / "cache")
    assert subprocess.run([str(first)]).returncode == 7
    assert compile_c([src], "hello") == first  # cached
    assert compile_c([src], "hello", flags=("-O0",)) != first  # flags are part of the key
    src.write_text("int main(void) { return 8; }\n")
    second = compile_c([src], "hello")
    assert second != first
    assert subprocess.run([str(second)]).returncode == 8


def test_compile_c_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mdla_runtime import BuildError

    monkeypatch.setenv("MDLA_CACHE_DIR", str(tmp_path / "cache"))
    bad = tmp_path / "bad.c"
    bad.write_text("int main(void) { return undeclared; }\n")
    with pytest.raises(BuildError, match="undeclared"):
        compile_c([bad], "bad")
    assert not list((tmp_path / "cache").rglob("bad"))  # nothing half-written
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BuildError, match=r"no C compiler found.*apt-get install gcc"):
        compile_c([bad], "bad")
    monkeypatch.setenv("CC", "no-such-cc")
    with pytest.raises(BuildError, match="no-such-cc"):
        compile_c([bad], "bad")
