"""Mapping by what a module computes, not its class: F.batch_norm in eval mode, subclasses of
known modules, the `@` operator, constants computed in forward, results forward never uses."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

import mdla_ir
from mdla_ir import Graph, Op, OpKind, Tensor, UnsupportedError
from mdla_ir.importer.subclasses import known_base
from mdla_ir.importer.tables import MODULES
from mdla_ir.passes import eliminate_dead_ops
from mdla_ir.testing import check_pass, relative_error


class BatchNormAct(nn.BatchNorm2d):
    """The fused BatchNorm + activation shape third-party libraries use: a BatchNorm2d subclass
    whose own forward calls F.batch_norm on its buffers, then a dropout and an activation."""

    def __init__(self, n: int, act: type[nn.Module] = nn.ReLU) -> None:
        super().__init__(n)
        self.drop = nn.Identity()
        self.act = act()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        use_batch = self.training or self.running_mean is None
        x = F.batch_norm(
            x,
            self.running_mean if not self.training or self.track_running_stats else None,
            self.running_var if not self.training or self.track_running_stats else None,
            self.weight,
            self.bias,
            use_batch,
            0.0 if self.momentum is None else self.momentum,
            self.eps,
        )
        return self.act(self.drop(x))


class ConvAct(nn.Conv2d):
    """A Conv2d subclass whose forward is the parent's plus an activation."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu6(super().forward(x))


class NamedBN(nn.BatchNorm2d):
    """A subclass that only adds an attribute: it computes exactly what BatchNorm2d does."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.note = "fused later"


class OwnConvForward(nn.Conv2d):
    def _conv_forward(
        self, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None
    ) -> torch.Tensor:
        return F.conv2d(x, w * 2, b, self.stride, self.padding, self.dilation, self.groups)


def _randomized(m: nn.Module) -> nn.Module:
    torch.manual_seed(0)
    for bn in m.modules():
        if isinstance(bn, nn.BatchNorm2d):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.data.uniform_(0.5, 1.5)
            bn.bias.data.uniform_(-0.2, 0.2)
    return m.eval()


def _imported(m: nn.Module, shape: tuple[int, ...] = (1, 3, 8, 8), **kw: bool) -> Graph:
    x = torch.rand(*shape, generator=torch.Generator().manual_seed(1))
    graph = mdla_ir.from_torch(m, (x,), **kw)
    with torch.no_grad():
        want = m(x).numpy()
    (got,) = mdla_ir.run_float(graph, [x.numpy()])
    assert relative_error(got, want) < 1e-5
    return graph


def test_f_batch_norm_in_eval_folds_into_the_conv_like_batchnorm2d() -> None:
    m = _randomized(nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), BatchNormAct(8)))
    graph = _imported(m)
    assert graph.count() == {"CONV_2D": 1}  # BATCH_NORM folded, RELU fused
    assert graph.ops[0].fuse == "RELU"


@pytest.mark.parametrize("path", ["fx", "export"])
def test_f_batch_norm_keeps_its_op_before_passes(path: str) -> None:
    """fx keeps the nn.Identity as an op (a leaf module); torch.export never sees it."""
    m = _randomized(nn.Sequential(nn.Conv2d(3, 8, 3), BatchNormAct(8, nn.Hardswish)))
    graph = mdla_ir.from_torch(m, (torch.rand(1, 3, 8, 8),), optimize=False, path=path)
    identity = [OpKind.IDENTITY] if path == "fx" else []
    assert [op.kind for op in graph.ops] == [
        OpKind.CONV_2D,
        OpKind.BATCH_NORM,
        *identity,
        OpKind.HARD_SWISH,
    ]


def test_f_batch_norm_with_batch_statistics_names_the_fix() -> None:
    class TrainingBN(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return F.batch_norm(x, None, None, training=True)

    with pytest.raises(UnsupportedError, match=r"training=True.*call \.eval\(\)"):
        mdla_ir.from_torch(TrainingBN().eval(), (torch.rand(1, 3, 4, 4),))


def test_a_subclass_with_the_parents_forward_imports_as_the_parent() -> None:
    m = _randomized(nn.Sequential(nn.Conv2d(3, 4, 1), NamedBN(4)))
    graph = _imported(m, optimize=False)
    assert [(op.kind, op.name) for op in graph.ops] == [
        (OpKind.CONV_2D, "0"),
        (OpKind.BATCH_NORM, "1"),  # one op, named by the module
    ]


def test_a_subclass_with_parent_plus_activation_maps() -> None:
    graph = _imported(_randomized(nn.Sequential(ConvAct(3, 4, 3))))
    assert graph.count() == {"CONV_2D": 1}
    assert graph.ops[0].fuse == "RELU6"


def test_known_base_refuses_a_subclass_that_overrides_a_method() -> None:
    assert known_base(NamedBN(2), MODULES) is nn.BatchNorm2d
    assert known_base(nn.ReLU(), MODULES) is nn.ReLU
    assert known_base(BatchNormAct(2), MODULES) is None  # its own forward: traced into
    assert known_base(OwnConvForward(3, 4, 1), MODULES) is None  # same forward, own helper
    graph = _imported(_randomized(nn.Sequential(OwnConvForward(3, 4, 1))))
    assert graph.count() == {"CONV_2D": 1}  # the doubled weight is a folded constant


class Attention(nn.Module):
    """Scores with the `@` operator, plus a bias table indexed by a constant index buffer."""

    def __init__(self, tokens: int) -> None:
        super().__init__()
        self.biases = nn.Parameter(torch.randn(2, 5))
        idx = torch.arange(tokens)[:, None] % 5 + torch.zeros(1, tokens, dtype=torch.long)
        self.register_buffer("idx", idx)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = x.flatten(2)  # (N, C, T)
        return (q.transpose(1, 2) @ q).unsqueeze(1) + self.biases[:, self.idx]


def test_matmul_operator_and_an_indexed_buffer_fold_to_a_constant() -> None:
    graph = _imported(Attention(16).eval(), (1, 2, 4, 4))
    assert graph.count()["BATCH_MATMUL"] == 1
    assert "GATHER" not in graph.count()
    add = next(op for op in graph.ops if op.kind is OpKind.ADD)
    bias = graph.tensors[add.inputs[1]]
    assert bias.is_const
    assert bias.shape == (2, 16, 16)  # biases[:, idx], folded


class DeadBranch(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body, self.project = nn.Conv2d(3, 4, 1), nn.Conv2d(3, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        unused = self.project(x)  # noqa: F841  (the pattern: a result never returned)
        return self.body(x)


def test_an_unused_result_is_dropped_not_called_malformed() -> None:
    graph = _imported(DeadBranch().eval())
    assert [op.name for op in graph.ops] == ["body"]
    assert not any("project" in n for n in graph.tensors)


def test_eliminate_dead_ops_contract() -> None:
    t = {
        "x": Tensor("x", (1, 2)),
        "a": Tensor("a", (1, 2)),
        "b": Tensor("b", (1, 2)),
        "c": Tensor("c", (1, 2)),
        "k": Tensor("k", (2,), data=np.ones(2, np.float32)),
    }
    ops = (
        Op(OpKind.RELU, "keep", ("x",), ("a",), {}),
        Op(OpKind.ADD, "dead", ("x", "k"), ("b",), {"fuse": "NONE"}),
        Op(OpKind.RELU, "dead_too", ("b",), ("c",), {}),
    )
    new = check_pass(
        eliminate_dead_ops, Graph("g", t, ops, ("x",), ("a",)), {"ADD": -1, "RELU": -1}
    )
    assert set(new.tensors) == {"x", "a"}
