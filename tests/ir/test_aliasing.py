"""`importer.aliasing.hazard`: which in-place ops the fx importer may map out of place, and
`auto`'s choice that follows from it (export for a hazard, fx for the safe shapes)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn
from torchvision.models import mobilenet_v2, resnet18

import mdla_ir
from mdla_ir.importer import import_torch
from mdla_ir.importer.aliasing import hazard
from mdla_ir.importer.tracing import trace

X = torch.randn(1, 4, 6, 6, generator=torch.Generator().manual_seed(3))


class Fn(nn.Module):
    def __init__(self, fn: Callable[[nn.Module, torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.fn = fn
        self.conv = nn.Conv2d(4, 4, 1)
        self.bn = nn.BatchNorm2d(4)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(self, x)


def _setitem(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
    y = m.conv(x)
    z = y * 2.0
    y.__setitem__((slice(None), 0), 0.0)  # `y[:, 0] = 0.0`, as fx can record it
    return y + z


def _view_base(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
    y = m.conv(x)
    v = y.view(1, 4, 36)
    v.relu_()
    return y + 1.0  # reads the base after its view was overwritten


def _base_view(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
    y = m.conv(x)
    v = y.flatten(1)
    y.mul_(2.0)
    return v + 1.0  # reads a view taken before its base was overwritten


HAZARDS: dict[str, Callable[[nn.Module, torch.Tensor], torch.Tensor]] = {
    "iadd_then_reread": lambda m, x: (lambda y: (y.__iadd__(x), y * 0.5 + m.conv(x))[1])(m.conv(x)),
    "method_then_reread": lambda m, x: (lambda y: y.add_(1.0) * y.sigmoid())(m.conv(x)),
    "unassigned_clamp_": lambda m, x: (lambda y: (y.clamp_(min=0.0), y)[1])(m.conv(x)),
    "inplace_module_used_twice": lambda m, x: (lambda y: m.act(y) + y)(m.conv(x)),
    "inplace_function_used_twice": lambda m, x: (lambda y: F.relu(y, inplace=True) * y)(m.conv(x)),
    "hardtanh_positional_inplace": lambda m, x: (lambda y: F.hardtanh(y, 0.0, 6.0, True) + y)(
        m.conv(x)
    ),
    "setitem": _setitem,
    "view_then_inplace_then_base": _view_base,
    "inplace_then_stale_view": _base_view,
}


def _scale_input(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
    x *= 2.0
    return m.conv(x)


def _resnet_tail(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
    identity = x
    out = m.bn(m.conv(x))
    out += identity
    return m.act(out)


SAFE: dict[str, Callable[[nn.Module, torch.Tensor], torch.Tensor]] = {
    "resnet_iadd": _resnet_tail,
    "inplace_act_after_bn": lambda m, x: m.act(m.bn(m.conv(x))) + x,
    "reassigned_method": lambda m, x: m.conv(x).clamp_(min=0.0) * 2.0 + 1.0,
    "inplace_on_a_fresh_sum": lambda m, x: F.relu(m.conv(x) + x, inplace=True) * 2.0,
    "writes_the_input": _scale_input,
}


def _trace(fn: Callable[[nn.Module, torch.Tensor], torch.Tensor]) -> torch.fx.GraphModule:
    return trace(Fn(fn).eval(), "m")


@pytest.mark.parametrize("case", sorted(HAZARDS))
def test_each_hazard_is_found_and_auto_imports_through_export(case: str) -> None:
    module = Fn(HAZARDS[case]).eval()
    found = hazard(trace(module, case))
    assert found is not None
    imported = import_torch(module, (X.clone(),), name=case)
    assert imported.path == "export"
    assert imported.note.startswith("torch.fx could not be used: in-place op: `")
    with torch.no_grad():
        want = module(X.clone()).numpy()
    (got,) = mdla_ir.run_float(imported.graph, [X.numpy()])
    assert abs(got - want).max() <= 1e-5


def test_a_write_into_a_parameter_is_a_hazard() -> None:
    """Each call would see the weight of the call before; fx's shape propagation would
    overwrite the module's own parameter."""
    gm = _trace(lambda m, x: m.conv(x) + m.bn.weight.add_(1.0).view(1, 4, 1, 1))
    found = hazard(gm)
    assert found is not None
    assert str(found) == "`add_` writes in place into `bn.weight`"


def test_the_hazards_are_real_the_fx_graph_of_one_differs_from_torch() -> None:
    module = Fn(HAZARDS["unassigned_clamp_"]).eval()
    graph = mdla_ir.from_torch(module, (X.clone(),), path="fx")
    (got,) = mdla_ir.run_float(graph, [X.numpy()])
    with torch.no_grad():
        want = module(X.clone()).numpy()
    assert abs(got - want).max() > 0.01  # fx's graph lost the clamp: why auto avoids it


@pytest.mark.parametrize("case", sorted(SAFE))
def test_safe_in_place_shapes_take_fx(case: str) -> None:
    module = Fn(SAFE[case]).eval()
    assert hazard(trace(module, case)) is None
    imported = import_torch(module, (X.clone(),), name=case)
    assert imported.path == "fx", imported.note
    with torch.no_grad():
        want = module(X.clone()).numpy()
    (got,) = mdla_ir.run_float(imported.graph, [X.numpy()])
    assert abs(got - want).max() <= 1e-5


def test_the_fx_import_leaves_the_example_input_as_it_was() -> None:
    x = X.clone()
    import_torch(Fn(SAFE["writes_the_input"]).eval(), (x,))
    assert torch.equal(x, X)


@pytest.mark.parametrize("build", [resnet18, mobilenet_v2])
def test_torchvision_in_place_blocks_have_no_hazard(build: Callable[[], nn.Module]) -> None:
    """resnet's `out += identity` and mobilenet's ReLU6(inplace=True) are safe."""
    gm = trace(build().eval(), build.__name__)
    assert any(n.target is __import__("operator").iadd for n in gm.graph.nodes) or any(
        getattr(gm.get_submodule(str(n.target)), "inplace", False)
        for n in gm.graph.nodes
        if n.op == "call_module"
    )
    assert hazard(gm) is None


class _ShyWriter(nn.Module):
    """Export refuses it, and fx's graph would drop its unassigned `relu_`."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.compiler.is_exporting():
            raise RuntimeError("no export here")
        y = self.conv(x)
        y.relu_()
        return y


def test_a_hazard_export_refuses_is_refused_naming_both() -> None:
    with pytest.raises(mdla_ir.UnsupportedError) as err:
        import_torch(_ShyWriter().eval(), (X.clone(),))
    text = str(err.value)
    assert text.startswith("torch.export refused: RuntimeError: no export here at ")
    assert "; torch.fx: in-place op: `relu_` writes in place into `conv`" in text
    assert "`y = y.relu()` for `y.relu_()`" in text
