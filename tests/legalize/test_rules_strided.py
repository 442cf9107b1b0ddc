"""Strided slices, flip, roll and reflect / replicate / circular padding: imported on both paths
as slices and concatenations, legalized to selection convolutions where one picks the values
(rules/strided.py), and run int8 bit for bit: emulator == run_int8 == LiteRT BUILTIN_REF."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

import mdla_ir
import mdla_legalize
import mdla_quant
import mdla_runtime
from mdla_ir import OpKind
from mdla_ir.importer.context import Unsupported
from mdla_ir.importer.strided import _sources
from mdla_ir.partitions import CPU
from mdla_ir.selection import is_selection
from mdla_legalize import explain, legalize, load_target
from mdla_legalize.rules.strided import window
from mdla_quant.reference import quantize_inputs
from mdla_runtime.export.tflite import run_tflite_reference, tflite_bytes
from tests.models_rewrites import module_end_to_end

PATHS = ("fx", "export")


class Focus(nn.Module):
    """YOLOv5's stem: the four 2×2 phases of the image on channels, then a conv."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(12, 8, 3, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        phases = [x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]]
        return F.relu(self.conv(torch.cat(phases, 1)))


class Phases(nn.Module):
    """Other steps: every third row from 1, odd channels, a channel flip."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(6, 6, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        rows = y[:, :, 1::3, 2:9:2]
        odd = torch.flip(y[:, 1::2], [1])[:, :, 1::3, 2:9:2]
        return torch.cat([rows, odd], 1)


class ReflectConv(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pad = nn.ReflectionPad2d((2, 1, 1, 2))
        self.conv = nn.Conv2d(4, 8, 3)
        self.rep = nn.ReplicationPad2d(1)
        self.conv2 = nn.Conv2d(8, 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.conv(self.pad(x)))
        z = self.conv2(self.rep(y))
        return z + F.pad(y, (1, 1, 1, 1), mode="circular")[:, :4, 1:-1, 1:-1]


class Roll(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return torch.roll(y, (2, -3), (2, 3)) + y.roll(1, 1)


MODULES = {"focus": (Focus, (1, 3, 16, 16)), "phases": (Phases, (1, 6, 10, 10))}
MODULES |= {"reflect": (ReflectConv, (1, 4, 8, 8)), "roll": (Roll, (1, 4, 8, 8))}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", list(MODULES))
def test_it_runs_bit_exact_on_the_mdla(name: str, path: str, tmp_path: Path) -> None:
    make, shape = MODULES[name]
    torch.manual_seed(0)
    result = module_end_to_end(make().eval(), shape, name, tmp_path, path)
    assert result.float_error <= 1e-4
    assert result.ops > 1


@pytest.mark.parametrize("path", PATHS)
def test_focus_is_one_2x2_stride_2_selection_conv(path: str) -> None:
    graph = mdla_ir.from_torch(Focus().eval(), torch.zeros(1, 3, 16, 16), path=path)
    device = legalize(graph, load_target("mdla3.5"))
    assert [op.kind for op in device.ops] == [OpKind.CONV_2D, OpKind.CONV_2D]
    focus = device.ops[0]
    assert is_selection(device, focus)
    assert focus.attrs.stride == (2, 2)
    assert device.tensors[focus.inputs[1]].shape == (12, 2, 2, 3)  # (O, KH, KW, I)


@pytest.mark.parametrize(
    ("d", "b", "n", "s"), [(16, 1, 8, 2), (10, 1, 3, 3), (8, 7, 1, 1), (8, 0, 1, 1), (9, 2, 3, 2)]
)
def test_the_window_picks_exactly_the_rows(d: int, b: int, n: int, s: int) -> None:
    k, stride = window(d, b, n, s)
    starts = list(range(0, d - k + 1, stride))
    assert [i + b for i in starts] == [b + i * s for i in range(n)]


def test_a_flip_of_w_stays_a_strided_slice_the_mdla_does_not_map() -> None:
    class FlipW(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.flip(x, [3])

    graph = mdla_ir.from_torch(FlipW().eval(), torch.zeros(1, 2, 4, 4))
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(np.float32)
    np.testing.assert_array_equal(mdla_ir.run_float(graph, [x])[0], x[..., ::-1])
    report = explain(graph, load_target("mdla3.5"))
    assert not report.all_supported
    assert "STRIDED_SLICE" in str(report)


@pytest.mark.parametrize(
    ("mode", "numpy_mode"), [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")]
)
def test_the_pad_sources_are_numpys_pad_modes(mode: str, numpy_mode: str) -> None:
    before, after = _sources(mode, 5, 3, 2)
    want = np.pad(np.arange(5), (3, 2), mode=numpy_mode)  # type: ignore[call-overload]
    assert [*before, *range(5), *after] == list(want)


def test_reflect_padding_as_wide_as_the_axis_is_refused_with_the_limit() -> None:
    with pytest.raises(Unsupported, match=r"reflect padding 4 on an axis of 4 \(torch: < 4\)"):
        _sources("reflect", 4, 4, 0)


@pytest.mark.parametrize("path", PATHS)
def test_a_flip_of_w_runs_on_the_cpu_bit_exact(path: str, tmp_path: Path) -> None:
    """`--cpu STRIDED_SLICE`: the engine's cpu device (k_strided_slice.c) == run_int8 (numpy)
    == LiteRT BUILTIN_REF's STRIDED_SLICE, bit for bit."""

    class FlipW(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.post = nn.Conv2d(4, 4, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.conv(x)
            return self.post(torch.flip(y, [3]) + torch.flip(y, [2, 3]) + torch.flip(y, [1, 3]))

    torch.manual_seed(0)
    graph = mdla_ir.from_torch(FlipW().eval(), torch.zeros(1, 3, 6, 7), path=path)
    placed = mdla_legalize.place(graph, load_target("mdla3.5"), "mtk-mdla", ["STRIDED_SLICE"])
    assert {o.kind for o in placed.ops if o.device == CPU} == {"STRIDED_SLICE"}
    rng = np.random.default_rng(0)
    calib = [[rng.uniform(-1, 1, (1, 3, 6, 7)).astype(np.float32)] for _ in range(3)]
    qgraph = mdla_quant.quantize(placed.graph, calib)
    path_mdla = mdla_runtime.save(qgraph, tmp_path / "flip.mdla")
    x = rng.uniform(-1, 1, (1, 3, 6, 7)).astype(np.float32)
    r = mdla_runtime.open_target("emu").run(path_mdla, [x])
    (want,) = mdla_quant.run_int8(qgraph, [x], raw=True)
    np.testing.assert_array_equal(r.raw_outputs[0].reshape(want.shape), want)
    codes = list(quantize_inputs(qgraph, [x]).values())
    (lite,) = run_tflite_reference(tflite_bytes(qgraph), codes)
    np.testing.assert_array_equal(lite.reshape(want.shape), want)
