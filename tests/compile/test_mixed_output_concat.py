"""A model output that joins a fixed-range op's values with others (a detector's boxes in
pixels beside its class probabilities, YOLO's `cat((dbox, cls.sigmoid()), 1)`): the
concatenation maps on the MDLA, but one int8 scale cannot hold [0, 1) at 1/256 and 0-480 px.
`--cpu auto` places it on the CPU, where it joins them in float32, and says so."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import mdla_compile
from mdla_compile import CompileOptions, Placed
from mdla_quant import QuantError, run_int8
from mdla_zoo import Model
from tests.zoo.emulated import compile_module_auto


class Detector(nn.Module):
    """Boxes in pixels and class probabilities, concatenated as the model's one output."""

    def __init__(self) -> None:
        super().__init__()
        self.box = nn.Conv2d(3, 4, 1)
        self.cls = nn.Conv2d(3, 5, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        boxes = self.box(x).flatten(2).relu() * 480.0
        probs = self.cls(x).flatten(2).sigmoid()
        return torch.cat((boxes, probs), 1)


def _detector() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return Detector().eval(), (torch.rand(1, 3, 8, 8),)


def test_cpu_auto_joins_the_output_in_float32_on_the_cpu_bit_exact() -> None:
    module, example = _detector()
    compiled, (got,) = compile_module_auto("detector", module, example)  # emulator == run_int8
    cat = next(op for op in compiled.qgraph.ops if op.kind.name.startswith("CONCATENATION"))
    assert cat.kind.name == "CONCATENATION_F32"
    assert cat.name in compiled.qgraph.provenance.cpu_ops
    assert got.dtype == np.float32  # each side dequantized at its own scale
    assert got.shape == (1, 9, 64)


def test_the_placement_says_why_the_concatenation_left_the_npu() -> None:
    module, example = _detector()
    events: list[object] = []
    calib = [
        [np.random.default_rng(i).uniform(0, 1, (1, 3, 8, 8)).astype(np.float32)] for i in range(2)
    ]
    model = Model("detector", module, example, preprocess=None)
    mdla_compile.compile(
        CompileOptions(model, calib=calib, count=2, cpu=("auto",)), on_event=events.append
    )
    (placed,) = [e.placement for e in events if isinstance(e, Placed)]
    note = " ".join(placed.notes)
    assert "output concatenation(s) on the CPU" in note
    assert "float32" in note


def test_probabilities_keep_their_resolution() -> None:
    """Shared with the pixels, a probability would step by about 480/255; on the CPU each
    input keeps its own scale, so the probabilities stay within a few 1/256 steps."""
    module, example = _detector()
    compiled, _ = compile_module_auto("detector", module, example)
    x = np.random.default_rng(7).uniform(0, 1, (1, 3, 8, 8)).astype(np.float32)
    (got,) = run_int8(compiled.qgraph, [x])
    with torch.no_grad():
        want = module(torch.from_numpy(x)).numpy()
    assert np.abs(got[:, 4:] - want[:, 4:]).max() < 4 / 256
    assert np.abs(got[:, :4] - want[:, :4]).max() < 0.02 * want[:, :4].max() + 4


def test_placed_by_kind_only_the_refusal_names_the_way_out() -> None:
    """`--cpu TRANSPOSE` (what `check` names by kind) leaves the concatenation on the NPU."""
    module, example = _detector()
    calib = [
        [np.random.default_rng(i).uniform(0, 1, (1, 3, 8, 8)).astype(np.float32)] for i in range(2)
    ]
    model = Model("detector", module, example, preprocess=None)
    with pytest.raises(QuantError, match="--cpu auto"):
        mdla_compile.compile(CompileOptions(model, calib=calib, count=2, cpu=("TRANSPOSE",)))
