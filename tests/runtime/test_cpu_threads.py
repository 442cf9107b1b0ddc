"""mdla-engine's cpu partitions on several threads (cpu/cpu_split.h): MDLA_CPU_THREADS=n cuts
LAYER_NORM by rows, the table group (GELU) by element ranges and the emulator's int8 kernels
(FULLY_CONNECTED's token rows, the depthwise conv, ADD) as libneuron_emu.so does, and the bytes
are run_int8's for every n. MDLA_EMU_MIN_WORK=1 makes every op with two rows split."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

import mdla_ir
from mdla_emu import build_emulator
from mdla_quant import run_int8
from mdla_runtime import load, save
from mdla_runtime.build import engine_path
from tests.runtime.test_engine_partitions import CPU, engine, outputs, placed_qgraph
from tests.workbench.unmappable_models import ConvNeXtBlock


@pytest.mark.parametrize("min_work", ["1", ""], ids=["split_all", "default"])
def test_cpu_partition_bytes_do_not_depend_on_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, min_work: str
) -> None:
    import torch

    torch.manual_seed(0)
    x = torch.zeros(1, 8, 8, 8)
    graph = mdla_ir.from_torch(ConvNeXtBlock().eval(), (x,), name="block")
    qgraph = placed_qgraph(graph, [*CPU, "DEPTHWISE_CONV_2D,ADD"])
    path = save(qgraph, tmp_path / "block.mdla")
    assert [p.device for p in load(path).partitions] == ["cpu"]
    lib = str(build_emulator())
    monkeypatch.setenv("MDLA_EMU_MIN_WORK", min_work)
    rng = np.random.default_rng(7)
    xs = [rng.uniform(-1.5, 1.5, s.model_shape).astype(np.float32) for s in load(path).inputs]
    want = run_int8(qgraph, xs, raw=True)
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("MDLA_CPU_THREADS", threads)
        code, out, err = engine(path, tmp_path, xs, "--lib", lib, "--json")
        assert code == 0, out + err
        assert [p["device"] for p in json.loads(out)["partitions"]] == ["cpu"]
        for got, w in zip(outputs(path, tmp_path, want), want, strict=True):
            assert got.tobytes() == np.asarray(w).tobytes(), f"{threads} threads"


def block_on_cpu(tmp_path: Path) -> tuple[Path, list[np.ndarray]]:
    """The ConvNeXt block of the test above, wholly on a cpu partition, and one input."""
    import torch

    torch.manual_seed(0)
    graph = mdla_ir.from_torch(ConvNeXtBlock().eval(), (torch.zeros(1, 8, 8, 8),), name="block")
    path = save(placed_qgraph(graph, [*CPU, "DEPTHWISE_CONV_2D,ADD"]), tmp_path / "block.mdla")
    rng = np.random.default_rng(7)
    return path, [
        rng.uniform(-1.5, 1.5, s.model_shape).astype(np.float32) for s in load(path).inputs
    ]


def most_tasks(args: list[str]) -> int:
    """The most threads (/proc/PID/task) the engine process had while it ran; it must exit 0."""
    with subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
        most = 0
        while proc.poll() is None:
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                most = max(most, len(os.listdir(f"/proc/{proc.pid}/task")))
            time.sleep(0.002)
        _, err = proc.communicate()
    assert proc.returncode == 0, err.decode()
    return most


def test_the_threads_flag_sizes_the_cpu_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mdla-engine --threads N overrides MDLA_CPU_THREADS: the process runs N threads (the
    pool's N - 1 workers, counted while it runs) and writes the same bytes; a count outside
    1..64 is a usage error (exit 2) naming the flag."""
    path, xs = block_on_cpu(tmp_path)
    monkeypatch.setenv("MDLA_CPU_THREADS", "1")
    monkeypatch.setenv("MDLA_EMU_MIN_WORK", "1")
    code, _, err = engine(path, tmp_path, xs, "--lib", str(build_emulator()))
    assert code == 0, err
    want = [np.fromfile(tmp_path / "output_0.bin", np.int8)]
    base = [str(engine_path()), str(path), "--lib", str(build_emulator()), "--repeat", "100"]
    base += [a for k in range(len(xs)) for a in ("--input", str(tmp_path / f"in{k}.bin"))]
    assert most_tasks([*base, "--outdir", str(tmp_path)]) == 1
    assert most_tasks([*base, "--outdir", str(tmp_path), "--threads", "3"]) == 3
    assert np.fromfile(tmp_path / "output_0.bin", np.int8).tobytes() == want[0].tobytes()
    for bad in ("0", "65", "two"):
        code, out, err = engine(path, tmp_path, xs, "--threads", bad, "--json")
        assert code == 2, out + err
        assert "--threads" in json.loads(out)["error"]["message"]
