"""Each torch construct the importer knows: the op it becomes, and float parity with PyTorch."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

import mdla_ir
from mdla_ir import IRError, UnsupportedError
from mdla_ir.testing import relative_error


class Fn(nn.Module):
    def __init__(self, fn: Callable[..., torch.Tensor], *mods: nn.Module) -> None:
        super().__init__()
        self.fn = fn
        self.mods = nn.ModuleList(mods)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x, *self.mods)


def _w(*shape: int) -> nn.Parameter:
    return nn.Parameter(torch.randn(*shape, generator=torch.Generator().manual_seed(3)))


class FConv(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight, self.bias = _w(8, 4, 3, 3), _w(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.conv2d(F.pad(x, (0, 1, 0, 1)), self.weight, self.bias, stride=2)


class FLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = _w(5, 4 * 8 * 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x.view(x.size(0), -1), self.weight)


X4 = (2, 4, 8, 8)
CASES: dict[str, tuple[nn.Module, tuple[int, ...], dict[str, int]]] = {
    "conv_padding_same_dilated": (
        nn.Conv2d(4, 6, 3, padding="same", dilation=2),
        X4,
        {"CONV_2D": 1},
    ),
    "conv_even_same": (nn.Conv2d(4, 6, 4, padding="same", bias=False), X4, {"CONV_2D": 1}),
    "conv_grouped_stride2": (nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=2), X4, {"CONV_2D": 1}),
    "conv_depthwise_multiplier": (
        nn.Conv2d(4, 8, 3, padding=1, groups=4),
        X4,
        {"DEPTHWISE_CONV_2D": 1},
    ),
    "functional_conv_and_pad": (FConv(), X4, {"PAD": 1, "CONV_2D": 1}),
    "conv_bn_relu6": (
        nn.Sequential(nn.Conv2d(4, 6, 1), nn.BatchNorm2d(6), nn.ReLU6()),
        X4,
        {"CONV_2D": 1},
    ),
    "bn_alone": (nn.BatchNorm2d(4), X4, {"BATCH_NORM": 1}),
    "relu": (nn.ReLU(), X4, {"RELU": 1}),
    "hardtanh_0_6": (nn.Hardtanh(0.0, 6.0), X4, {"RELU6": 1}),
    "silu": (nn.SiLU(), X4, {"SILU": 1}),
    "sigmoid": (Fn(lambda x: torch.sigmoid(x) * F.sigmoid(x)), X4, {"LOGISTIC": 2, "MUL": 1}),
    "tanh": (nn.Tanh(), X4, {"TANH": 1}),
    "hardswish": (nn.Hardswish(), X4, {"HARD_SWISH": 1}),
    "hardsigmoid": (Fn(lambda x: F.hardsigmoid(x)), X4, {"HARD_SIGMOID": 1}),
    "gelu": (nn.GELU(), X4, {"GELU": 1}),
    "softmax": (Fn(lambda x: x.softmax(1) + F.softmax(x, dim=-1)), X4, {"SOFTMAX": 2, "ADD": 1}),
    "layernorm": (nn.LayerNorm(8), X4, {"LAYER_NORM": 1}),
    "channel_shuffle": (nn.ChannelShuffle(2), X4, {"CHANNEL_SHUFFLE": 1}),
    "maxpool_ceil": (nn.MaxPool2d(3, 2, ceil_mode=True), (1, 4, 13, 13), {"MAX_POOL_2D": 1}),
    "maxpool_padded": (Fn(lambda x: F.max_pool2d(x, 3, 2, 1)), X4, {"MAX_POOL_2D": 1}),
    "avgpool_include_pad": (nn.AvgPool2d(3, 2, 1), X4, {"AVERAGE_POOL_2D": 1}),
    "avgpool_exclude_pad": (
        Fn(lambda x: F.avg_pool2d(x, 3, 1, 1, count_include_pad=False)),
        X4,
        {"AVERAGE_POOL_2D": 1},
    ),
    "adaptive_2x3": (nn.AdaptiveAvgPool2d((2, 3)), (1, 4, 7, 8), {"ADAPTIVE_AVG_POOL_2D": 1}),
    "adaptive_1x1_is_mean": (nn.AdaptiveAvgPool2d(1), X4, {"MEAN": 1}),
    "mean_method": (
        Fn(lambda x: x.mean((2, 3), keepdim=True) + torch.mean(x, dim=-1, keepdim=True)),
        X4,
        {"MEAN": 2, "ADD": 1},
    ),
    "linear_flatten": (
        nn.Sequential(nn.Flatten(), nn.Linear(256, 10)),
        X4,
        {"RESHAPE": 1, "FULLY_CONNECTED": 1},
    ),
    "functional_linear_view": (FLinear(), X4, {"RESHAPE": 1, "FULLY_CONNECTED": 1}),
    "reshape_chain": (
        Fn(lambda x: torch.flatten(x, 1).reshape(2, 16, 16).unsqueeze(1)),
        X4,
        {"RESHAPE": 1},
    ),
    "permute_transpose": (
        Fn(lambda x: x.permute(0, 2, 3, 1).transpose(1, 2).contiguous()),
        X4,
        {"TRANSPOSE": 2},
    ),
    "cat": (Fn(lambda x: torch.cat([x, x * 2.0], dim=1)), X4, {"MUL": 1, "CONCATENATION": 1}),
    "scalar_arith": (
        Fn(lambda x: (x + 3.0) * 0.5 - 1.0 / (x * x + 1.0)),
        X4,
        {"ADD": 2, "MUL": 2, "SUB": 1, "RECIPROCAL": 1},  # torch: `1.0 / y` is reciprocal(y)
    ),
    "dropout_identity": (nn.Sequential(nn.Dropout(0.3), nn.Identity(), nn.Dropout2d()), X4, {}),
    "matmul": (
        Fn(lambda x: torch.matmul(x, x.transpose(2, 3))),
        X4,
        {"TRANSPOSE": 1, "BATCH_MATMUL": 1},
    ),
    "rsqrt_exp_log": (
        Fn(lambda x: torch.rsqrt(torch.exp(x)) + torch.log(torch.sqrt(x * x + 1))),
        X4,
        {"EXP": 1, "RSQRT": 1, "MUL": 1, "ADD": 2, "SQRT": 1, "LOG": 1},
    ),
    "conv3d_maxpool3d": (
        nn.Sequential(
            nn.Conv3d(3, 4, (3, 5, 5), (1, 2, 2), (1, 2, 2)), nn.MaxPool3d((1, 2, 2), (1, 2, 2))
        ),
        (1, 3, 4, 16, 16),
        {"CONV_3D": 1, "MAX_POOL_3D": 1},
    ),
}


@pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")
@pytest.mark.parametrize("case", sorted(CASES))
def test_construct(case: str) -> None:
    module, shape, counts = CASES[case]
    module = module.eval()
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1))
    graph = mdla_ir.from_torch(module, (x,), name=case)
    assert graph.count() == counts
    with torch.no_grad():
        want = module(x).numpy()
    (got,) = mdla_ir.run_float(graph, [x.numpy()])
    assert got.shape == want.shape
    assert relative_error(got, want) <= 1e-5


@pytest.mark.parametrize("path", ["fx", "export"])
def test_stochastic_depth_is_dropped(path: str) -> None:
    """fx keeps it as a leaf (DROPOUT until the passes); torch.export traces it away."""
    from torchvision.ops import StochasticDepth

    module = nn.Sequential(nn.Conv2d(4, 4, 1), StochasticDepth(0.2, "row")).eval()
    graph = mdla_ir.from_torch(module, (torch.zeros(X4),), optimize=False, path=path)
    dropout = {"DROPOUT": 1} if path == "fx" else {}
    assert graph.count() == {"CONV_2D": 1, **dropout}
    assert mdla_ir.run_passes(graph).count() == {"CONV_2D": 1}


def test_ops_carry_their_source() -> None:
    graph = mdla_ir.from_torch(CASES["cat"][0].eval(), (torch.zeros(X4),))
    cat = graph.ops[-1]
    assert cat.source is not None
    assert cat.source.target == "torch.cat"
    assert cat.source.line.startswith("test_importer.py:")
    assert cat.name == "fn.cat" or cat.name.endswith("cat")


def test_unsupported_constructs_are_all_listed() -> None:
    class Bad(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up = nn.Upsample(scale_factor=2, mode="bicubic")
            self.lstm_like = nn.LPPool2d(3, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            a = self.lstm_like(self.up(x))
            return a + torch.tril(torch.cumsum(a, 1))

    with pytest.raises(UnsupportedError) as info:
        mdla_ir.from_torch(Bad().eval(), (torch.zeros(1, 8, 4, 4),))
    text = str(info.value)
    assert "interpolate mode='bicubic'" in text
    assert "LPPool2d" in text
    assert "torch.tril" in text
    assert "cumsum" in text
    assert len(info.value.items) == 4
    assert all("test_importer.py:" in item for item in info.value.items)


def test_untraceable_control_flow_names_the_line() -> None:
    class Branchy(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if x.sum() > 0:
                return x
            return -x

    with pytest.raises(IRError, match=r"cannot trace `Branchy` at test_importer.py:\d+"):
        mdla_ir.from_torch(Branchy().eval(), (torch.zeros(1, 3),))


def test_training_mode_is_refused() -> None:
    with pytest.raises(IRError, match=r"training mode: call \.eval\(\)"):
        mdla_ir.from_torch(nn.Conv2d(3, 3, 1), (torch.zeros(1, 3, 4, 4),))


def test_a_padding_mode_fx_cannot_map_is_named_and_export_imports_it() -> None:
    conv = nn.Conv2d(3, 3, 3, padding=1, padding_mode="reflect").eval()
    x = torch.randn(1, 3, 4, 4)
    with pytest.raises(UnsupportedError, match="padding_mode='reflect'"):
        mdla_ir.from_torch(conv, (x,), path="fx")
    imported = mdla_ir.import_torch(conv, (x,))  # export: a reflection pad, then the conv
    assert imported.path == "export"
    (got,) = mdla_ir.run_float(imported.graph, [x.numpy()])
    assert relative_error(got, conv(x).detach().numpy()) < 1e-5


def test_wrong_input_shape_is_reported() -> None:
    graph = mdla_ir.from_torch(nn.ReLU().eval(), (torch.zeros(1, 3, 4, 4),))
    with pytest.raises(IRError, match=r"expected shape \(1, 3, 4, 4\).*got \(1, 3, 5, 4\)"):
        mdla_ir.run_float(graph, [torch.zeros(1, 3, 5, 4).numpy()])
    with pytest.raises(IRError, match="takes 1 input"):
        mdla_ir.run_float(graph, [])


def test_the_source_hash_is_of_each_tensors_bytes_read_in_place() -> None:
    """source_hash's digest is sha256 over the code, then each tensor's name, dtype, shape and
    C-order bytes (any layout, a 0-d, an empty and a bool tensor among them), and it reads
    those bytes where they are: no copy of a model's weights (2 MB here) is allocated."""
    import hashlib
    import tracemalloc

    import numpy as np

    from mdla_ir.provenance import source_hash

    rng = np.random.default_rng(0)
    big = rng.standard_normal((512, 1024)).astype(np.float32)
    tensors = [
        ("w", big),
        ("t", big[:64, :32].T),  # not contiguous: hashed in C order
        ("s", np.array(2.5)),
        ("e", np.zeros((0, 3), np.int64)),
        ("b", np.array([True, False])),
    ]
    want = hashlib.sha256(b"code")
    for name, value in sorted(tensors):
        arr = np.ascontiguousarray(value)
        want.update(f"\0{name}\0{arr.dtype.str}\0{arr.shape}\0".encode())
        want.update(arr.tobytes())
    assert source_hash("code", tensors) == want.hexdigest()
    tracemalloc.start()
    try:
        source_hash("code", [("w", big)])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < big.nbytes // 4


def test_the_source_hash_covers_structure_and_weights() -> None:
    """sha256 of the fx code and the state dict: stable, and moved by any weight or op change."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()).eval()
    x = torch.randn(1, 3, 8, 8)
    first = mdla_ir.from_torch(net, x).provenance
    assert len(first.source_hash) == 64
    assert first.module == "Sequential"
    assert mdla_ir.from_torch(net, x).provenance.source_hash == first.source_hash
    with torch.no_grad():
        net[0].weight[0, 0, 0, 0] += 1e-3
    assert mdla_ir.from_torch(net, x).provenance.source_hash != first.source_hash
    other = nn.Sequential(net[0], nn.ReLU6()).eval()
    assert mdla_ir.from_torch(other, x).provenance.source_hash != first.source_hash
