"""The issue-15 new ops at the IR level: import of PReLU/LeakyReLU, the torch upsampling family,
PixelShuffle and ConvTranspose2d; their shape rules; their float kernels against torch (<= 1e-4
relative, in the imported NCHW graph and in the legalized NHWC one); refusals with reasons."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

import mdla_ir
import mdla_legalize
from mdla_ir import OpKind
from mdla_ir.errors import UnsupportedError
from mdla_ir.importer.shuffle import torch_order
from mdla_ir.selection import is_selection
from mdla_ir.shapes import infer

Array = np.ndarray[Any, Any]


class Fn(nn.Module):
    def __init__(self, fn: Any) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)  # type: ignore[no-any-return]


def parity(module: nn.Module, shape: tuple[int, ...], legalize: bool = True) -> mdla_ir.Graph:
    """Import `module`, check float parity with torch (and after legalization); the graph."""
    torch.manual_seed(1)
    x = torch.rand(*shape) - 0.3
    module = module.eval()
    graph = mdla_ir.from_torch(module, (x,))
    with torch.no_grad():
        want = module(x).numpy()
    graphs = [graph]
    if legalize:
        graphs.append(mdla_legalize.legalize(graph, mdla_legalize.load_target("mdla3.5")))
    for g in graphs:
        (got,) = mdla_ir.run_float(g, [x.numpy()])
        err = float(np.abs(got - want).max() / np.abs(want).max())
        assert err <= 1e-4, (g.layout, err)
    return graph


def kinds(graph: mdla_ir.Graph) -> list[str]:
    return [op.kind.name for op in graph.ops]


# ---- PRELU ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "module",
    [
        nn.PReLU(6, init=0.2),
        nn.PReLU(),
        nn.LeakyReLU(0.1),
        nn.LeakyReLU(),
        Fn(lambda x: F.leaky_relu(x, 0.3)),
        Fn(lambda x: F.leaky_relu(x)),
    ],
    ids=["prelu_per_channel", "prelu_one", "leaky_0.1", "leaky_default", "f_leaky", "f_leaky_def"],
)
def test_prelu_and_leaky_relu_import_as_prelu(module: nn.Module) -> None:
    if isinstance(module, nn.PReLU):
        with torch.no_grad():
            module.weight.copy_(torch.linspace(-0.5, 0.6, module.weight.numel()))
    graph = parity(module, (1, 6, 5, 4))
    assert kinds(graph) == ["PRELU"]
    alpha = graph.const(graph.ops[0].inputs[1])
    assert alpha.shape in ((1,), (6, 1, 1))


def test_functional_prelu_takes_the_module_weight() -> None:
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.tensor([0.1, -0.2, 0.3]))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return F.prelu(x, self.w)

    assert kinds(parity(M(), (2, 3, 4, 4))) == ["PRELU"]


# ---- resizes -----------------------------------------------------------------------------------
RESIZES = [
    ({"scale_factor": 2, "mode": "nearest"}, "RESIZE_NEAREST_NEIGHBOR", (False, False)),
    ({"size": (7, 11), "mode": "nearest"}, "RESIZE_NEAREST_NEIGHBOR", (False, False)),
    ({"size": (3, 2), "mode": "nearest-exact"}, "RESIZE_NEAREST_NEIGHBOR", (False, True)),
    ({"scale_factor": (2, 0.5), "mode": "nearest-exact"}, "RESIZE_NEAREST_NEIGHBOR", (False, True)),
    ({"scale_factor": 2, "mode": "bilinear", "align_corners": False}, "RESIZE_BILINEAR", (0, 1)),
    ({"size": (7, 11), "mode": "bilinear"}, "RESIZE_BILINEAR", (False, True)),
    ({"scale_factor": 3, "mode": "bilinear", "align_corners": True}, "RESIZE_BILINEAR", (1, 0)),
    ({"size": (3, 2), "mode": "bilinear", "align_corners": True}, "RESIZE_BILINEAR", (1, 0)),
    (
        {"scale_factor": 1.5, "mode": "bilinear", "recompute_scale_factor": True},
        "RESIZE_BILINEAR",
        (False, True),
    ),
]


@pytest.mark.parametrize(("kw", "kind", "flags"), RESIZES)
def test_interpolate_maps_onto_the_resize_ops(kw: dict[str, Any], kind: str, flags: Any) -> None:
    graph = parity(Fn(lambda x: F.interpolate(x, **kw)), (1, 3, 5, 6))
    assert kinds(graph) == [kind]
    a = graph.ops[0].attrs
    assert (a.align_corners, a.half_pixel_centers) == tuple(map(bool, flags))


@pytest.mark.parametrize(
    ("module", "kind"),
    [
        (nn.Upsample(scale_factor=2), "RESIZE_NEAREST_NEIGHBOR"),
        (nn.UpsamplingNearest2d(scale_factor=2), "RESIZE_NEAREST_NEIGHBOR"),
        (nn.UpsamplingBilinear2d(size=(9, 4)), "RESIZE_BILINEAR"),
        (nn.Upsample(scale_factor=2, mode="bilinear"), "RESIZE_BILINEAR"),
    ],
)
def test_upsampling_modules(module: nn.Module, kind: str) -> None:
    graph = parity(module, (1, 2, 5, 6))
    assert kinds(graph) == [kind]
    if isinstance(module, nn.UpsamplingBilinear2d):  # torch's align_corners=True
        assert graph.ops[0].attrs.align_corners


@pytest.mark.parametrize(
    ("kw", "why"),
    [
        ({"scale_factor": 1.3, "mode": "nearest"}, "samples at 1/1.3"),
        ({"scale_factor": 2, "mode": "bicubic"}, "mode='bicubic'"),
        ({"scale_factor": 0.5, "mode": "bilinear", "antialias": True}, "antialias"),
    ],
)
def test_interpolate_refusals_say_why(kw: dict[str, Any], why: str) -> None:
    with pytest.raises(UnsupportedError, match="unsupported construct") as info:
        mdla_ir.from_torch(Fn(lambda x: F.interpolate(x, **kw)).eval(), (torch.rand(1, 2, 5, 5),))
    assert why in str(info.value)


# ---- DEPTH_TO_SPACE -----------------------------------------------------------------------------
def test_torch_order_is_torch_pixel_shuffle_order() -> None:
    """DEPTH_TO_SPACE of the permuted channels equals torch's pixel_shuffle of the originals."""
    r, c = 3, 2
    x = torch.arange(c * r * r * 4, dtype=torch.float32).reshape(1, c * r * r, 2, 2)
    perm = torch_order(c * r * r, r)
    d2s = mdla_ir.interp.resample.depth_to_space_nhwc
    got = d2s(x[:, perm].permute(0, 2, 3, 1).numpy(), r).transpose(0, 3, 1, 2)
    np.testing.assert_array_equal(got, F.pixel_shuffle(x, r).numpy())
    # the orders differ: without the permutation the result is not torch's
    assert not np.array_equal(d2s(x.permute(0, 2, 3, 1).numpy(), r).transpose(0, 3, 1, 2), got)


def test_pixel_shuffle_after_a_conv_folds_the_order_into_its_filter() -> None:
    m = nn.Sequential(nn.Conv2d(3, 12, 3, padding=1), nn.ReLU(), nn.PixelShuffle(2))
    graph = parity(m, (1, 3, 5, 4))
    assert kinds(graph) == ["CONV_2D", "DEPTH_TO_SPACE"]


def test_pixel_shuffle_of_another_tensor_inserts_a_selection_conv() -> None:
    graph = parity(Fn(lambda x: F.pixel_shuffle(x * 2.0, 3)), (1, 18, 3, 2))
    assert kinds(graph) == ["MUL", "CONV_2D", "DEPTH_TO_SPACE"]
    assert is_selection(graph, graph.ops[1])


# ---- TRANSPOSE_CONV_2D --------------------------------------------------------------------------
TCONVS = [
    {"kernel_size": 2, "stride": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1, "output_padding": 1},
    {"kernel_size": 4, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 1, "padding": 1, "bias": False},
    {"kernel_size": (3, 2), "stride": (2, 3), "padding": (1, 0)},
    {"kernel_size": 3, "stride": 3, "padding": 2, "output_padding": 2},
]


@pytest.mark.parametrize("kw", TCONVS)
def test_conv_transpose_imports_as_transpose_conv(kw: dict[str, Any]) -> None:
    graph = parity(nn.ConvTranspose2d(4, 5, **kw), (2, 4, 5, 6))
    assert kinds(graph) == ["TRANSPOSE_CONV_2D"]


def test_batchnorm_after_conv_transpose_folds_into_it() -> None:
    m = nn.Sequential(nn.ConvTranspose2d(4, 6, 3, 2, 1, 1), nn.BatchNorm2d(6), nn.ReLU())
    with torch.no_grad():
        m[1].running_mean.uniform_(-1, 1)
        m[1].running_var.uniform_(0.5, 2)
        m[1].weight.uniform_(0.5, 1.5)
    graph = parity(m, (1, 4, 5, 5))
    assert kinds(graph) == ["TRANSPOSE_CONV_2D"]  # BN folded, ReLU fused
    assert graph.ops[0].fuse == "RELU"


def test_functional_conv_transpose() -> None:
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.randn(3, 2, 3, 3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return F.conv_transpose2d(x, self.w, stride=2, padding=1)

    assert kinds(parity(M(), (1, 3, 4, 4))) == ["TRANSPOSE_CONV_2D"]


@pytest.mark.parametrize(
    ("kw", "why"),
    [
        ({"dilation": 2}, "dilation=(2, 2) (only dilation=1"),
        ({"groups": 2}, "groups=2 (only groups=1"),
        ({"stride": 2, "output_padding": 1}, "output_padding=(1, 1) > padding=(0, 0)"),
    ],
)
def test_conv_transpose_refusals_say_why(kw: dict[str, Any], why: str) -> None:
    m = nn.ConvTranspose2d(4, 4, 3, **kw).eval()
    with pytest.raises(UnsupportedError) as info:
        mdla_ir.from_torch(m, (torch.rand(1, 4, 5, 5),))
    assert why in str(info.value)


# ---- shape rules ---------------------------------------------------------------------------------
def test_shape_rules_in_both_layouts() -> None:
    tc = {"stride": (2, 3), "padding": (1, 0, 2, 1)}
    assert infer(OpKind.TRANSPOSE_CONV_2D, tc, [(1, 5, 6, 4), (7, 3, 4, 4)], "NHWC") == [
        (1, 4 * 2 + 3 - 1, 5 * 3 + 4 - 3, 7)
    ]
    assert infer(OpKind.TRANSPOSE_CONV_2D, tc, [(1, 4, 5, 6), (4, 7, 3, 4)], "NCHW") == [
        (1, 7, 10, 16)
    ]
    assert infer(OpKind.DEPTH_TO_SPACE, {"block_size": 3}, [(2, 4, 5, 18)], "NHWC") == [
        (2, 12, 15, 2)
    ]
    assert infer(OpKind.DEPTH_TO_SPACE, {"block_size": 2}, [(2, 8, 4, 5)], "NCHW") == [
        (2, 2, 8, 10)
    ]
    resize = {"size": (9, 2)}
    assert infer(OpKind.RESIZE_NEAREST_NEIGHBOR, resize, [(1, 3, 3, 5)], "NHWC") == [(1, 9, 2, 5)]
    assert infer(OpKind.PRELU, {}, [(1, 3, 3, 5), (5,)], "NHWC") == [(1, 3, 3, 5)]
    with pytest.raises(mdla_ir.IRError, match="multiple of 4"):
        infer(OpKind.DEPTH_TO_SPACE, {"block_size": 2}, [(1, 2, 2, 6)], "NHWC")


def test_shape_rules_refuse_what_leaves_no_output() -> None:
    tc = {"stride": (1, 1), "padding": (2, 2, 0, 0)}
    with pytest.raises(mdla_ir.IRError, match=r"pads .* leave no output"):
        infer(OpKind.TRANSPOSE_CONV_2D, tc, [(1, 1, 4, 4), (7, 3, 3, 4)], "NHWC")
    assert infer(OpKind.SLICE, {"begin": (0, 1), "size": (2, 3)}, [(2, 4)], "NHWC") == [(2, 3)]
    with pytest.raises(mdla_ir.IRError, match="do not fit a"):
        infer(OpKind.SLICE, {"begin": (0,), "size": (2, 3)}, [(2, 4)], "NHWC")
    with pytest.raises(mdla_ir.IRError, match="leaves"):
        infer(OpKind.SLICE, {"begin": (0, 2), "size": (2, 3)}, [(2, 4)], "NHWC")
