"""The compute budget (format/compute.py, C format/manifest_compute.c): both readers count the same
work for every op kind, refuse a small manifest that asks for hours (the 960-byte MAX_POOL with a
384x384 window on 1x768x768x32) with the figure and the flag that raises the limit, and accept
it once raised; `workbench run` refuses it at load."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from mdla_ir.builders import random_qgraph
from mdla_ir.ops import OpKind
from mdla_runtime import Budget, errors, load
from mdla_runtime.build import ENGINE_SOURCES, compile_c, engine_path
from mdla_runtime.format.compute import op_work
from mdla_runtime.format.manifest import to_bytes
from mdla_runtime.testing import chain_qgraph, pack, split
from mdla_runtime.testing_float import float_region_qgraph
from tests.runtime.fuzzing import NOT_IN_HARNESS
from tests.runtime.test_manifest_semantic import both
from workbench.cli import app

SIDE, WINDOW, CHANNELS = 768, 384, 32
OUT = SIDE - WINDOW + 1
# 385 x 385 x 32 outputs of 384 x 384 compares each, plus the tensors read and written
POOL_WORK = OUT * OUT * CHANNELS * WINDOW * WINDOW + SIDE * SIDE * CHANNELS + OUT * OUT * CHANNELS
KINDS = [
    OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D, OpKind.FULLY_CONNECTED, OpKind.AVERAGE_POOL_2D,
    OpKind.MAX_POOL_2D, OpKind.ADD, OpKind.SOFTMAX, OpKind.CONCATENATION, OpKind.PAD,
    OpKind.MEAN, OpKind.RESIZE_BILINEAR, OpKind.PRELU, OpKind.DEPTH_TO_SPACE,
    OpKind.TRANSPOSE_CONV_2D,
]  # fmt: skip


def hostile_pool(tmp: Path) -> Path:
    """One MAX_POOL_2D: 1x768x768x32 in, a 384x384 window at stride 1, no padding."""
    header, data = split(to_bytes(random_qgraph(OpKind.MAX_POOL_2D, np.random.default_rng(0))))
    ops = header["operands"]
    ops[0]["dims"], ops[11]["dims"] = [1, SIDE, SIDE, CHANNELS], [1, OUT, OUT, CHANNELS]
    for k, v in zip(range(1, 10), [0, 0, 0, 0, 1, 1, WINDOW, WINDOW, 0], strict=True):
        ops[k]["value"] = v
    for io, dims in (
        (header["inputs"][0], ops[0]["dims"]),
        (header["outputs"][0], ops[11]["dims"]),
    ):
        io["shape"] = io["model_shape"] = dims
    path = tmp / "pool.mdla"
    path.write_bytes(pack(header, data))
    return path


def test_the_pool_repro_is_refused_by_both_readers_with_the_figure(tmp_path: Path) -> None:
    path = hostile_pool(tmp_path)
    assert path.stat().st_size < 1024
    py, c = both(path, Budget())
    assert py == c
    assert py[:2] == ("OverBudget", "operations[0]")  # type: ignore[index]
    with pytest.raises(errors.OverBudgetError) as info:
        load(path)
    assert f"{POOL_WORK} multiply-adds or compares > the per-operation limit of 16 G" in str(
        info.value
    )
    assert "(raise it with --max-op-gops)" in str(info.value)
    # raised per operation, the total (256 G by default) still holds; raised both, it reads
    py, c = both(path, Budget.of(max_op_gops=800), "--max-op-gops", "800")
    assert py == c
    with pytest.raises(errors.OverBudgetError, match="--max-total-gops"):
        load(path, Budget.of(max_op_gops=800))
    flags = ("--max-op-gops", "800", "--max-total-gops", "800")
    assert both(path, Budget.of(max_op_gops=800, max_total_gops=800), *flags) == ("ok", "ok")


def test_workbench_run_refuses_it_at_load_and_names_the_flag(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["run", str(hostile_pool(tmp_path))])
    assert result.exit_code == 1
    assert "OverBudget: `operations[0]`" in result.output
    assert "--max-op-gops" in result.output


def _verdicts(paths: list[Path], limit: int) -> list[str]:
    sources = [Path(__file__).with_name("manifest_verdicts.c")]
    sources += [f for f in ENGINE_SOURCES if f.name not in {*NOT_IN_HARNESS, "model.c"}]
    exe = compile_c(sources, "manifest_verdicts")
    stdin = "".join(f"{p}\n" for p in paths)
    proc = subprocess.run([str(exe), str(limit)], input=stdin, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split("\n")[: len(paths)]


def test_both_readers_count_the_same_work_for_every_kind(tmp_path: Path) -> None:
    """Each single-op manifest read with the per-op limit at its work (ok) and one below
    (refused at operations[0]) by both readers: the two counts are equal, kind by kind."""
    graphs = [random_qgraph(k, np.random.default_rng(s)) for k in KINDS for s in range(3)]
    paths, works = [], []
    for i, g in enumerate(graphs):
        blob = to_bytes(g)
        header, _ = split(blob)
        path = tmp_path / f"k{i}.mdla"
        path.write_bytes(blob)
        paths.append(path)
        works.append(op_work(header, header["operations"][0]))
        for limit, want in ((works[-1], "ok"), (works[-1] - 1, "OverBudget")):
            budget = Budget(max_op_ops=limit)
            try:
                load(path, budget)
                got = "ok"
            except errors.OverBudgetError as exc:
                got = exc.kind
            assert got == want, (g.ops[0].kind, limit)
    for limit_of, want in ((lambda w: w, "ok"), (lambda w: w - 1, "err OverBudget")):
        for path, work in zip(paths, works, strict=True):
            (verdict,) = _verdicts([path], limit_of(work))
            assert verdict.startswith(want), (path, work, verdict)


def test_convolution_work_is_the_multiply_adds() -> None:
    g = random_qgraph(OpKind.CONV_2D, np.random.default_rng(0))
    header, _ = split(to_bytes(g))
    op = header["operations"][0]
    x, w, b = (header["operands"][i] for i in op["inputs"][:3])
    y = header["operands"][op["outputs"][0]]
    n = lambda o: int(np.prod(o["dims"]))  # noqa: E731
    kh, kw, cin = w["dims"][1:]
    assert op_work(header, op) == n(y) * kh * kw * cin + n(x) + n(w) + n(b) + n(y)


def test_the_float_region_and_partitions_pass_and_count_the_gru() -> None:
    header, _ = split(to_bytes(float_region_qgraph()))
    gru = next(op for op in header["operations"] if op["code"] == 0x10003)
    x, w_ih, w_hh = (header["operands"][i] for i in gru["inputs"][:3])
    steps = x["dims"][0]
    assert op_work(header, gru) > steps * (np.prod(w_ih["dims"]) + np.prod(w_hh["dims"]))
    for g in (float_region_qgraph(), chain_qgraph()):
        header, _ = split(to_bytes(g))
        assert all(op_work(header, op) < 10**6 for op in header["operations"])


def test_raised_limits_reach_the_engine_and_timeout_stops_it(tmp_path: Path) -> None:
    """With both limits raised the file loads and runs; --timeout stops the engine (exit 4)."""
    path = hostile_pool(tmp_path)
    args = ["run", str(path), "--max-op-gops", "800", "--max-total-gops", "800", "--timeout", "2"]
    start = time.monotonic()
    result = CliRunner().invoke(app, args)
    assert time.monotonic() - start < 60
    assert result.exit_code == 4, result.output
    text = " ".join(result.output.split())
    assert "mdla-engine did not finish within 2 s and was stopped (raise it with --timeout)" in text


@pytest.mark.parametrize("flag", ["--max-op-gops", "--max-total-gops"])
def test_the_engine_takes_the_work_limits_as_billions(flag: str, tmp_path: Path) -> None:
    path = hostile_pool(tmp_path)
    helptext = subprocess.run([str(engine_path()), "--help"], capture_output=True, text=True)
    assert flag in helptext.stdout
    for bad, why in (("0", "wants a positive integer"), ("4294967297", "at most 4294967296")):
        proc = subprocess.run(
            [str(engine_path()), str(path), "--check", flag, bad], capture_output=True, text=True
        )
        assert proc.returncode == 2, proc.stderr
        assert why in proc.stderr
