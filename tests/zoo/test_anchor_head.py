"""A YOLOv5-style anchor head written by hand (the classic `Detect`: per level a 1x1 conv, a
view to (N, anchors, outputs, H, W), a permute to (N, anchors, H, W, outputs), sigmoid, the
grid and anchor decode, one (N, boxes, outputs) result): its rank-5 decode runs on the CPU as
one partition after the convolutions, `check` names it by pattern, and the emulator equals
run_int8 bit for bit."""

from __future__ import annotations

import torch
from torch import nn

import mdla_ir
import mdla_legalize
from mdla_ir.partitions import CPU, partitions
from mdla_legalize.suggest import suggest
from tests.zoo.emulated import compile_module_auto

ANCHORS = ((10, 13, 16, 30, 33, 23), (30, 61, 62, 45, 59, 119))
TARGET = mdla_legalize.load_target("mdla3.5")


class Detect(nn.Module):
    def __init__(self, nc: int = 3, ch: tuple[int, ...] = (16, 32)) -> None:
        super().__init__()
        self.nc, self.no, self.nl, self.na = nc, nc + 5, len(ANCHORS), len(ANCHORS[0]) // 2
        self.m = nn.ModuleList(nn.Conv2d(c, self.no * self.na, 1) for c in ch)
        self.register_buffer("anchors", torch.tensor(ANCHORS).float().view(self.nl, -1, 2))
        self.stride = (8, 16)

    def forward(self, xs: list[torch.Tensor]) -> torch.Tensor:
        z = []
        for i in range(self.nl):
            x = self.m[i](xs[i])
            bs, _, ny, nx = x.shape
            x = x.view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            yv, xv = torch.meshgrid(torch.arange(ny), torch.arange(nx), indexing="ij")
            grid = torch.stack((xv, yv), 2).expand(1, self.na, ny, nx, 2).float() - 0.5
            size = (self.anchors[i] * self.stride[i]).view(1, self.na, 1, 1, 2)
            xy, wh, conf = x.sigmoid().split((2, 2, self.nc + 1), 4)
            xy = (xy * 2 + grid) * self.stride[i]
            wh = (wh * 2) ** 2 * size.expand(1, self.na, ny, nx, 2)
            z.append(torch.cat((xy, wh, conf), 4).view(bs, self.na * nx * ny, self.no))
        return torch.cat(z, 1)


class TinyYolo(nn.Module):
    """A backbone deeper than its head (as any detector's is), two levels, the head."""

    def __init__(self) -> None:
        super().__init__()
        blocks = [m for _ in range(60) for m in (nn.Conv2d(16, 16, 3, 1, 1), nn.ReLU())]
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 4, 1), nn.ReLU(), nn.Conv2d(16, 16, 3, 2, 1))
        self.body = nn.Sequential(*blocks)
        self.down = nn.Sequential(nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU())
        self.detect = Detect()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.body(self.stem(x))
        return self.detect([a, self.down(a)])


def _model() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return TinyYolo().eval(), (torch.rand(1, 3, 64, 64),)


def test_the_rank5_decode_runs_on_the_cpu_and_bit_exact() -> None:
    module, example = _model()
    compiled, outputs = compile_module_auto("tiny_yolo", module, example)
    assert outputs[0].shape == (1, 3 * (8 * 8 + 4 * 4), 8)
    graph = compiled.device_graph
    cpu = set(graph.provenance.cpu_ops)
    rank5 = [o for o in graph.ops if any(len(graph.tensors[n].shape) == 5 for n in o.outputs)]
    assert rank5
    assert all(o.name in cpu for o in rank5)
    assert [p.device for p in partitions(graph)].count(CPU) == 1


def test_check_suggests_the_head_by_pattern() -> None:
    """By kind the decode's ops leave the final concatenation (rank 3, it maps) on the MDLA
    after the CPU's decode (two switches); the advice names it by pattern: one switch, the
    convolutions on the MDLA, the whole decode one CPU partition."""
    module, example = _model()
    graph = mdla_ir.from_torch(module, example, path="export")
    device = mdla_legalize.rewrite(graph, TARGET)
    advice = suggest(device, mdla_legalize.explain(device, TARGET))
    assert advice is not None
    assert advice.patterns.startswith("'detect.")
    assert (advice.kind_switches, advice.pattern_switches) == (2, 1)
    placed = mdla_legalize.place(graph, TARGET, "mtk-mdla", [advice.patterns.replace("'", "")])
    assert [p.device for p in placed.partitions] == ["mtk-mdla", CPU]
