"""A float32 region of a cpu partition in mdla-engine (issue 17): DEQUANTIZE, GRU and
FULLY_CONNECTED_F32 run by csrc/cpu/cpu_part.c with csrc/cpu/gru.c, a float32 model output,
bit for bit mdla_quant.run_int8 (which runs mdla_quant/kernels/gru.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mdla_runtime
from mdla_quant import run_int8
from mdla_runtime.errors import TargetError
from mdla_runtime.format.manifest import to_bytes
from mdla_runtime.testing import _edit, split
from mdla_runtime.testing_float import FEATURES, STEPS, UNITS, float_region_qgraph


@pytest.fixture(scope="module")
def target() -> mdla_runtime.Target:
    return mdla_runtime.open_target("emu")


@pytest.mark.parametrize("bidirectional", [True, False], ids=["bidirectional", "forward"])
def test_engine_float_region_is_bit_exact_with_run_int8(
    bidirectional: bool, target: mdla_runtime.Target, tmp_path: Path
) -> None:
    graph = float_region_qgraph(bidirectional)
    path = mdla_runtime.save(graph, tmp_path / "tail.mdla")
    rng = np.random.default_rng(4)
    for _ in range(3):
        x = (rng.standard_normal((STEPS, FEATURES)) * 2).astype(np.float32)
        want = run_int8(graph, [x])[0]
        got = target.run(path, [x])
        assert got.device == "mtk-mdla+cpu"
        assert [(p.device, p.ops) for p in got.partitions] == [("mtk-mdla", 1), ("cpu", 3)]
        y = got.outputs[0]
        assert y.dtype == np.float32
        assert y.shape == want.shape == (STEPS, UNITS)
        assert np.array_equal(y.view(np.uint32), want.view(np.uint32))
        assert np.array_equal(got.raw_outputs[0], y)  # a float32 output comes back as it is


def test_engine_refuses_a_gru_whose_flag_contradicts_its_weights(
    target: mdla_runtime.Target, tmp_path: Path
) -> None:
    """Valid for both readers (types are the kernel's business, as for every op), refused by
    the cpu device when it prepares the GRU: bidirectional false with weights for 2 directions."""
    blob = to_bytes(float_region_qgraph(True))
    header, _ = split(blob)
    gru = next(op for op in header["operations"] if op["name"] == "gru0")
    flag = gru["inputs"][5]

    def forward(h: dict[str, object]) -> None:
        h["operands"][flag]["value"] = False  # type: ignore[index]

    path = tmp_path / "bad.mdla"
    path.write_bytes(_edit(blob, forward))
    mdla_runtime.load(path)  # the readers accept it
    with pytest.raises(TargetError, match=r"GRU's w_hh is not \[1, 3H, H\]"):
        target.run(path, [np.zeros((STEPS, FEATURES), np.float32)])
