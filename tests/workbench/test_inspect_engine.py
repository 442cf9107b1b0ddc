"""`workbench inspect` (tables and --json, torch-free), `workbench engine` and `--version`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import mdla_runtime
from workbench.cli import app


def test_inspect_json_holds_the_contract_and_the_record(
    runner: CliRunner, artifacts: dict[str, Path]
) -> None:
    result = runner.invoke(app, ["inspect", str(artifacts["images"]), "--json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    m = mdla_runtime.load(artifacts["images"])
    assert info["operations"] == len(m.operations)
    assert sum(info["ops"].values()) == len(m.operations)
    (inp,) = info["inputs"]
    assert inp["model_shape"] == list(m.inputs[0].model_shape)
    assert inp["scale"] == m.inputs[0].scale
    assert inp["type"] == "TENSOR_QUANT8_ASYMM_SIGNED"
    assert info["quant"]["method"] == "percentile"
    assert info["preprocess"]["mode"] == "imagenet"
    assert info["bytes"]["file"] == artifacts["images"].stat().st_size
    assert info["compiled_from"]["import_path"] == m.provenance.import_path == "fx"  # auto's


def test_inspect_text_names_what_a_user_asks_first(
    runner: CliRunner, artifacts: dict[str, Path]
) -> None:
    result = runner.invoke(app, ["inspect", str(artifacts["tiny"])])
    assert result.exit_code == 0, result.output
    for row in ("size", "ops", "input", "output", "quantization", "rules fired", "preprocess"):
        assert row in result.stdout
    assert "none (raw tensors in)" in result.stdout  # the tiny model takes raw tensors
    assert "imported via torch.fx" in result.stdout  # the path the file records


def test_inspect_a_bad_file_is_one_line_exit_1(runner: CliRunner, tmp_path: Path) -> None:
    bad = tmp_path / "bad.mdla"
    bad.write_bytes(b"not a manifest")
    result = runner.invoke(app, ["inspect", str(bad)])
    assert result.exit_code == 1
    assert "BadMagic" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_inspect_needs_no_torch(artifacts: dict[str, Path]) -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from workbench.commands.inspect import describe\n"
        f"print(describe(__import__('pathlib').Path({str(artifacts['tiny'])!r}))['name'])"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_engine_paths_are_runnable(runner: CliRunner) -> None:
    engine = runner.invoke(app, ["engine", "--path"])
    lib = runner.invoke(app, ["engine", "--emulator"])
    assert engine.exit_code == 0
    assert lib.exit_code == 0
    proc = subprocess.run(
        [engine.stdout.strip(), "--devices", "--lib", lib.stdout.strip()],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "mtk-mdla" in proc.stdout.split()
    both = runner.invoke(app, ["engine"])
    assert engine.stdout.strip() in both.stdout


def test_version(runner: CliRunner) -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.startswith("workbench (mdla-workbench) 0.")


def test_run_warmup_and_latency_percentiles(runner: CliRunner, artifacts: dict[str, Path]) -> None:
    args = ["run", str(artifacts["tiny"]), "--warmup", "2", "--repeat", "7", "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["runs"]
    lat = entry["latency_ms"]
    assert entry["warmup"] == 2
    assert lat["runs"] == 7  # the warm-up runs are not timed
    assert lat["min"] <= lat["median"] <= lat["p90"] <= lat["p99"] <= lat["max"]
    assert lat["std"] >= 0
    table = runner.invoke(app, args[:-1])
    assert "ms median p90 p99 min ±std" in table.stdout


def test_engine_reports_every_timed_run_sorted(artifacts: dict[str, Path]) -> None:
    target = mdla_runtime.open_target("emu")
    m = mdla_runtime.load(artifacts["tiny"])
    x = np.zeros(m.inputs[0].model_shape, np.float32)
    r = target.run(m, [x], repeat=5, warmup=3)
    assert len(r.latencies_ms) == 5
    assert list(r.latencies_ms) == sorted(r.latencies_ms)
    assert r.latencies_ms[0] == r.latency_ms[1]  # the min
    stats = r.latency_stats()
    assert stats["p99"] == r.latencies_ms[-1]  # nearest rank: the slowest of 5
    assert stats["p90"] == r.latencies_ms[-1]


def _fake_sysfs(root: Path) -> Path:
    """root/bus/platform/drivers/apu_top_3/<dev> -> root/devices/platform/<dev>, as a phone."""
    dev = root / "devices" / "platform" / "190f0000.apu_top"
    (dev / "power").mkdir(parents=True)
    driver = root / "bus" / "platform" / "drivers" / "apu_top_3"
    driver.mkdir(parents=True)
    (driver / dev.name).symlink_to(dev)
    return dev


@pytest.mark.parametrize("aim", ["node", "sysfs"])
def test_witness_can_be_aimed_and_fed_an_image(
    runner: CliRunner,
    artifacts: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    aim: str,
) -> None:
    dev = _fake_sysfs(tmp_path / "sys")
    monkeypatch.setenv("MDLA_EMU_SYSFS", str(dev))  # the emulator keeps this node's counter
    lib = runner.invoke(app, ["engine", "--emulator"]).stdout.strip()
    runner.invoke(app, ["devices", "--on", f"lib:{lib}"])  # an engine process makes the node
    assert (dev / "power" / "runtime_active_time").is_file()
    where = ["--node", str(dev)] if aim == "node" else ["--sysfs", str(tmp_path / "sys")]
    args = ["witness", str(artifacts["images"]), "chelsea", "--on", f"lib:{lib}", *where]
    result = runner.invoke(app, [*args, "--idle", "0.2", "--runs", "300"])
    assert result.exit_code == 0, result.output
    assert "verdict: witnessed" in result.output
    assert str(dev) in result.output


def test_witness_without_a_node_says_to_give_one(
    runner: CliRunner, artifacts: dict[str, Path], tmp_path: Path
) -> None:
    lib = runner.invoke(app, ["engine", "--emulator"]).stdout.strip()
    args = ["witness", str(artifacts["tiny"]), "--on", f"lib:{lib}", "--sysfs", str(tmp_path)]
    result = runner.invoke(app, [*args, "--idle", "0"])
    assert result.exit_code == 4
    assert "give the node path" in result.output


def test_devices_and_witness_speak_json(runner: CliRunner, artifacts: dict[str, Path]) -> None:
    devices = runner.invoke(app, ["devices", "--json"])
    assert devices.exit_code == 0, devices.output
    info = json.loads(devices.stdout)
    assert info["target"] == "emu"
    assert "mtk-mdla" in info["devices"]
    result = runner.invoke(
        app, ["witness", str(artifacts["tiny"]), "--idle", "0.2", "--runs", "300", "--json"]
    )
    assert result.exit_code == 0, result.output
    w = json.loads(result.stdout)  # nothing but the JSON object on stdout
    assert w["verdict"] == "witnessed"
    assert w["control_ms"] == 0
    assert w["run_ms"] > 0
    assert w["latency_ms"]["runs"] == 300


def test_engine_refuses_a_bad_warmup_count(artifacts: dict[str, Path], runner: CliRunner) -> None:
    engine = runner.invoke(app, ["engine", "--path"]).stdout.strip()
    for bad in ("x", "-1"):
        proc = subprocess.run(
            [engine, str(artifacts["tiny"]), "--warmup", bad, "--json"],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 2, proc.stdout
        assert "--warmup" in json.loads(proc.stdout)["error"]["message"]
