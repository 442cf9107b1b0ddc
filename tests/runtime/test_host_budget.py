"""The host side of a run is budgeted (engine/host.py): `workbench run` refuses a manifest whose
inputs and outputs would hold more than the total budget in this process, before making any
input, with the figure and the flag that raises it; within the budget, `Target.run` holds no
more than `host_bytes` says (one float32 input, quantized in chunks, int8 moved between
layouts, dequantized in place), where it held ~40 bytes per input element before."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from mdla_ir.affine import dequantize_output, quantize_input
from mdla_ir.builders import act, qp, single_op_qgraph
from mdla_ir.ops import OpKind
from mdla_runtime import host_bytes, load, open_target, save
from mdla_runtime.engine import host
from mdla_runtime.engine.target import dequantize, quantize
from mdla_runtime.testing import chain_qgraph
from workbench.commands.run import random_input

N = 16 << 20  # elements of the one input and the one output: 16 MiB each on the device
MIB = 1 << 20


def relu(tmp: Path, shape: tuple[int, ...] = (1, 1024, 1024, N >> 20)) -> Path:
    q = qp(0.05, 0)
    return save(single_op_qgraph(OpKind.RELU, [act("x", shape, q)], shape, q), tmp / "big.mdla")


def test_host_bytes_counts_each_copy(tmp_path: Path) -> None:
    m = load(relu(tmp_path))
    assert host_bytes(m) == N * (4 + 1) + N * (1 + 4)  # NHWC in and out: no perm
    c = load(save(chain_qgraph(), tmp_path / "c.mdla"))  # an NCHW input, an NHWC output
    assert c.inputs[0].perm
    assert not c.outputs[0].perm
    assert host_bytes(c) == 108 * (4 + 1 + 1) + 36 * (1 + 4)


SCRIPT = """
import resource, sys
from typer.testing import CliRunner
from workbench.cli import app
runner = CliRunner()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = runner.invoke(app, ["run", sys.argv[1], "--max-total-mb", "64"])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(result.exit_code, (after - before) * 1024)
print(" ".join(result.output.split()))
"""


def test_run_refuses_what_the_host_cannot_hold_before_making_inputs(tmp_path: Path) -> None:
    """64 MiB hold the device's 32 MiB but not the host's 160 MiB: refused, RSS unchanged."""
    path = relu(tmp_path)
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(SCRIPT))
    done = subprocess.run(
        [sys.executable, str(script), str(path)], capture_output=True, text=True, timeout=300
    )
    code, grown = map(int, done.stdout.splitlines()[0].split())
    message = done.stdout.splitlines()[1]
    assert code == 1, done.stdout + done.stderr
    assert f"OverBudget: `inputs`: a run holds {10 * N} bytes on the host" in message
    assert "> the total limit of 64 MiB (raise it with --max-total-mb)" in message
    assert grown < 4 * N  # the float32 input (64 MiB) was never made


def test_a_run_holds_what_host_bytes_says(tmp_path: Path) -> None:
    m = load(relu(tmp_path))
    x = random_input(m.inputs[0].model_shape)
    target = open_target("emu")
    tracemalloc.start()
    try:
        out = target.run(m, [x]).outputs[0]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    q = quantize_input(x, np.float32(0.05), 0)
    np.testing.assert_array_equal(out, dequantize_output(np.maximum(q, 0), 0.05, 0))
    inside = host_bytes(m) - 4 * N  # the caller's float32 input is made before the run
    assert peak < inside + 16 * MIB, (peak, inside)


@pytest.mark.parametrize("shape", [(3,), (1, 3, 5, 7), (2, 700_001)])
def test_chunked_conversions_are_bit_exact(shape: tuple[int, ...], tmp_path: Path) -> None:
    """quantize in chunks then the perm on int8 == the perm then quantize of the whole array;
    the in-place dequantization == dequantize_output."""
    m = load(save(chain_qgraph(), tmp_path / "c.mdla"))
    spec = m.inputs[0]
    x = random_input(spec.model_shape) * 9
    want = quantize_input(np.ascontiguousarray(x.transpose(spec.perm)), spec.scale, spec.zero_point)
    np.testing.assert_array_equal(quantize(x, spec), want.reshape(spec.shape))
    rng = np.random.default_rng(1)
    v = rng.uniform(-300, 300, shape).astype(np.float32)
    np.testing.assert_array_equal(
        host.quantize_chunked(v, np.float32(0.37), -5), quantize_input(v, np.float32(0.37), -5)
    )
    q = rng.integers(-128, 128, shape, dtype=np.int8)
    got = dequantize(q, None, 0.0713, 9)
    assert got.tobytes() == dequantize_output(q, 0.0713, 9).tobytes()
