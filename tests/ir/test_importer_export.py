"""The torch.export path: core ATen ops mapped one by one (float parity with torch), in-place
variants, a model torch.fx cannot trace, the fallback note, and the bar models' graphs."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

import mdla_ir
from mdla_ir.errors import IRError
from mdla_ir.importer import import_torch
from mdla_ir.testing import relative_error
from tests.models import MODELS, load


class Fn(nn.Module):
    """A module whose forward is `fn` (with the given layers as attributes)."""

    def __init__(self, fn: Callable[..., torch.Tensor], **layers: nn.Module) -> None:
        super().__init__()
        self.fn = fn
        for name, layer in layers.items():
            self.add_module(name, layer)

    def forward(self, x: torch.Tensor) -> Any:
        return self.fn(self, x)


def _bn(n: int) -> nn.BatchNorm2d:
    bn = nn.BatchNorm2d(n)
    with torch.no_grad():
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.2, 0.2)
    return bn


# name -> (module, input shape, op kinds the unoptimized graph holds)
CASES: dict[str, tuple[Callable[[], nn.Module], tuple[int, ...], set[str]]] = {
    "conv2d": (lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1), (1, 3, 8, 8), {"CONV_2D"}),
    "conv2d_same": (lambda: nn.Conv2d(3, 4, 3, padding="same"), (1, 3, 8, 8), {"CONV_2D"}),
    "conv1d": (lambda: nn.Conv1d(3, 4, 3, padding=1), (1, 3, 12), {"CONV_2D", "RESHAPE"}),
    "conv3d": (lambda: nn.Conv3d(2, 4, 3, padding=1), (1, 2, 3, 6, 6), {"CONV_3D"}),
    "conv_transpose2d": (
        lambda: nn.ConvTranspose2d(3, 2, 2, stride=2),
        (1, 3, 4, 4),
        {"TRANSPOSE_CONV_2D"},
    ),
    "batch_norm": (lambda: _bn(3), (1, 3, 5, 5), {"BATCH_NORM"}),
    "batch_norm1d": (
        lambda: Fn(lambda m, x: m.bn(x), bn=nn.BatchNorm1d(3)),
        (2, 3, 7),
        {"BATCH_NORM", "RESHAPE"},
    ),
    "linear": (lambda: nn.Linear(6, 3), (2, 6), {"FULLY_CONNECTED"}),
    "layer_norm": (lambda: nn.LayerNorm(6), (2, 4, 6), {"LAYER_NORM"}),
    "relu_hardtanh": (lambda: nn.Sequential(nn.ReLU(), nn.ReLU6()), (1, 4), {"RELU", "RELU6"}),
    "smooth": (
        lambda: nn.Sequential(nn.SiLU(), nn.Hardswish(), nn.Hardsigmoid(), nn.Sigmoid(), nn.Tanh()),
        (1, 6),
        {"SILU", "HARD_SWISH", "HARD_SIGMOID", "LOGISTIC", "TANH"},
    ),
    "gelu_leaky_prelu": (
        lambda: nn.Sequential(nn.GELU(), nn.LeakyReLU(0.1), nn.PReLU(3)),
        (1, 3, 4, 4),
        {"GELU", "PRELU"},
    ),
    "scalars": (
        lambda: Fn(lambda m, x: (x + 1.5) * 2.0 - 0.25 / (x * x + 1.0)),
        (1, 3, 4),
        {"ADD", "MUL", "SUB", "RECIPROCAL"},  # `0.25 / y`: reciprocal(y) * 0.25
    ),
    "rsub": (lambda: Fn(lambda m, x: 1.0 - x), (1, 5), {"SUB"}),
    "tensors": (lambda: Fn(lambda m, x: x * x + x - x / (x * x + 1)), (1, 5), {"ADD", "MUL"}),
    "chunk_cat": (
        lambda: Fn(lambda m, x: torch.cat(list(reversed(x.chunk(2, 1))), 1)),
        (1, 4, 3, 3),
        {"SLICE", "CONCATENATION"},
    ),
    "split_sizes": (
        lambda: Fn(lambda m, x: sum(p.mean((1, 2, 3)) for p in x.split([1, 3], 1))),
        (1, 4, 3, 3),
        {"SLICE", "MEAN", "ADD"},
    ),
    "views": (
        lambda: Fn(lambda m, x: x.unsqueeze(0).view(2, 6).reshape(3, 4).permute(1, 0).squeeze()),
        (3, 4),
        {"RESHAPE", "TRANSPOSE"},
    ),
    "slice_select": (
        lambda: Fn(lambda m, x: x[:, 1:3] + x[:, 0:2, 1][:, :, None]),
        (1, 4, 3),
        {"SLICE", "RESHAPE"},
    ),
    "mean": (
        lambda: Fn(lambda m, x: x.mean((2, 3), keepdim=True) + x.mean()),
        (1, 3, 4, 4),
        {"MEAN"},
    ),
    "pools": (
        lambda: nn.Sequential(
            nn.MaxPool2d(3, 2, 1, ceil_mode=True), nn.AvgPool2d(2), nn.AdaptiveAvgPool2d(1)
        ),
        (1, 2, 9, 9),
        {"MAX_POOL_2D", "AVERAGE_POOL_2D", "ADAPTIVE_AVG_POOL_2D"},
    ),
    "pools1d": (
        lambda: nn.Sequential(nn.MaxPool1d(2), nn.AvgPool1d(2), nn.AdaptiveAvgPool1d(1)),
        (1, 2, 12),
        {"MAX_POOL_2D", "AVERAGE_POOL_2D", "ADAPTIVE_AVG_POOL_2D"},
    ),
    "max_pool3d": (lambda: nn.MaxPool3d((1, 2, 2)), (1, 2, 3, 4, 4), {"MAX_POOL_3D"}),
    "pad": (lambda: Fn(lambda m, x: F.pad(x, (1, 2, 0, 1), value=0.5)), (1, 2, 3, 3), {"PAD"}),
    "upsample": (
        lambda: Fn(
            lambda m, x: (
                F.interpolate(x, scale_factor=2.0)
                + F.interpolate(x, size=(8, 8), mode="bilinear", align_corners=False)
            )
        ),
        (1, 2, 4, 4),
        {"RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"},
    ),
    "pixel_shuffle": (
        lambda: Fn(lambda m, x: F.pixel_shuffle(m.c(x), 2), c=nn.Conv2d(2, 8, 1)),
        (1, 2, 3, 3),
        {"DEPTH_TO_SPACE"},
    ),
    "softmax_matmul": (
        lambda: Fn(lambda m, x: torch.softmax(x @ x.transpose(1, 2), -1)),
        (1, 3, 4),
        {"SOFTMAX", "BATCH_MATMUL", "TRANSPOSE"},
    ),
    "unary_math": (
        lambda: Fn(
            lambda m, x: torch.sqrt(torch.exp(x)) + torch.log(x * x + 1) * torch.rsqrt(x * x + 1)
        ),
        (1, 5),
        {"SQRT", "EXP", "LOG", "RSQRT"},
    ),
}

# In-place variants: export functionalizes them into the out-of-place op.
INPLACE: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], str]] = {
    "relu_": (lambda x: F.relu(x, inplace=True), "RELU"),
    "hardswish_": (lambda x: F.hardswish(x, inplace=True), "HARD_SWISH"),
    "silu_": (lambda x: F.silu(x, inplace=True), "SILU"),
    "hardtanh_": (lambda x: F.hardtanh(x, 0.0, 6.0, inplace=True), "RELU6"),
    "add_": (lambda x: x.add_(1.0), "ADD"),
    "mul_": (lambda x: x.mul_(x), "MUL"),
}


def _check(module: nn.Module, shape: tuple[int, ...]) -> mdla_ir.Graph:
    """Import through export (unoptimized), compare run_float with the module."""
    torch.manual_seed(0)
    module = module.eval()
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1))
    imported = import_torch(module, (x,), optimize=False, path="export")
    assert imported.path == "export"
    assert imported.note == "imported via torch.export"
    with torch.no_grad():
        want = module(x.clone()).numpy()
    (got,) = mdla_ir.run_float(imported.graph, [x.numpy()])
    assert got.shape == want.shape
    assert relative_error(got, want) <= 1e-5
    return imported.graph


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_aten_op_maps_with_float_parity(case: str) -> None:
    make, shape, kinds = CASES[case]
    torch.manual_seed(0)
    graph = _check(make(), shape)
    assert kinds <= set(graph.count())


@pytest.mark.parametrize("case", sorted(INPLACE))
def test_in_place_variants_are_functionalized(case: str) -> None:
    fn, kind = INPLACE[case]
    conv = nn.Conv2d(2, 2, 1)
    graph = _check(Fn(lambda m, x: fn(m.c(x)) + 0.0, c=conv), (1, 2, 3, 3))
    assert kind in graph.count()


class _Untraceable(nn.Module):
    """Python on static shapes that torch.fx cannot follow: a shape check and a list of the
    pieces of a chunk (ultralytics' C2f: `list(self.cv1(x).chunk(2, 1))`)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 1)
        self.out = nn.Conv2d(12, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] % 8:
            raise ValueError("the width must be a multiple of 8")
        y = list(self.conv(x).chunk(2, 1))
        y.append(y[-1] * torch.sigmoid(y[-1]))
        return self.out(torch.cat(y, 1))


def test_a_model_fx_cannot_trace_imports_through_export() -> None:
    module = _Untraceable().eval()
    x = torch.randn(1, 3, 8, 16)
    with pytest.raises(mdla_ir.IRError, match=r"torch\.fx cannot trace"):
        mdla_ir.from_torch(module, (x,), path="fx")
    imported = import_torch(module, (x,), path="auto")
    assert imported.path == "export"
    assert imported.note.startswith("torch.fx cannot trace `_Untraceable` at test_importer_export")
    assert imported.note.endswith("; imported via torch.export")
    with torch.no_grad():
        want = module(x).numpy()
    (got,) = mdla_ir.run_float(imported.graph, [x.numpy()])
    assert relative_error(got, want) <= 1e-5


class _ExportShy(nn.Module):
    """Refuses to be exported (as modules that check `torch.compiler.is_exporting()` do)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.compiler.is_exporting():
            raise RuntimeError("no export here\nsecond line")
        return torch.relu(self.conv(x))


def test_auto_takes_fx_where_it_suffices_and_says_so() -> None:
    """fx traces and maps it with no in-place op: auto never tries export (which refuses it)."""
    x = torch.randn(1, 3, 4, 4)
    imported = import_torch(_ExportShy().eval(), (x,), path="auto")
    assert imported.path == "fx"
    assert imported.note == (
        "torch.fx traced the whole module with no in-place aliasing, so torch.export was not needed"
    )
    with pytest.raises(mdla_ir.IRError, match="no export here"):
        import_torch(_ExportShy().eval(), (x,), path="export")


def test_the_graph_records_the_path_that_imported_it() -> None:
    """The provenance says which path imported the module (the manifest keeps it), whether
    asked for or chosen by auto."""
    x = torch.randn(1, 3, 4, 4)
    shy = _ExportShy().eval()
    assert import_torch(shy, (x,), path="auto").graph.provenance.import_path == "fx"
    assert import_torch(shy, (x,), path="fx").graph.provenance.import_path == "fx"
    plain = nn.Sequential(nn.Conv2d(3, 4, 1), nn.ReLU()).eval()
    assert mdla_ir.from_torch(plain, (x,), path="export").provenance.import_path == "export"
    assert mdla_ir.from_torch(plain, (x,), path="fx").provenance.import_path == "fx"
    assert import_torch(_Untraceable().eval(), (torch.randn(1, 3, 8, 16),)).path == "export"
    assert (
        import_torch(
            _Untraceable().eval(), (torch.randn(1, 3, 8, 16),)
        ).graph.provenance.import_path
        == "export"
    )


class _Neither(_ExportShy):
    """Refused by export, and the fx importer has no cumsum."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(super().forward(x), 1)


def test_when_both_paths_fail_the_error_says_why_for_each() -> None:
    with pytest.raises(mdla_ir.UnsupportedError) as err:
        import_torch(_Neither().eval(), (torch.randn(1, 3, 4, 4),), path="auto")
    text = str(err.value)
    assert text.startswith("torch.export refused: RuntimeError: no export here at ")
    assert "; torch.fx: cannot import `_Neither`" in text
    (item,) = err.value.items
    assert "cumsum" in item


def test_an_unmapped_aten_op_names_its_module_and_line() -> None:
    module = Fn(lambda m, x: torch.cumsum(m.c(x), 1), c=nn.Conv2d(2, 2, 1)).eval()
    with pytest.raises(mdla_ir.UnsupportedError) as err:
        mdla_ir.from_torch(module, (torch.randn(1, 2, 3, 3),), path="export")
    (item,) = err.value.items
    assert "aten.cumsum.default" in item
    assert item.count("aten.cumsum.default") == 1
    assert "in `c` (Conv2d)" not in item  # cumsum ran at the top level, not in the conv
    assert "test_importer_export.py:" in item
    assert item.endswith(
        "; fix: `--import fx` traces the Python model instead (torch.fx traces it), or "
        "compute that line with ops the importer maps"
    )


class _ShapeBranch(nn.Module):
    """A branch on a shape: torch.export specializes it, torch.fx cannot trace it (as
    ultralytics' heads); and cumsum, which no importer maps."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] > 2:
            x = x * 2
        return torch.cumsum(x, 1)


@pytest.mark.parametrize("path", ["auto", "export"])
def test_an_unmapped_aten_op_offers_fx_only_where_fx_gets_through(path: str) -> None:
    x = (torch.randn(1, 2, 3, 3),)
    with pytest.raises(mdla_ir.IRError) as err:
        import_torch(_ShapeBranch().eval(), x, path=path)
    text = str(err.value)
    assert "aten.cumsum.default" in text
    assert "`--import fx` traces" not in text
    assert (
        "fix: compute that line with ops the importer maps (torch.fx cannot trace the model, "
        "so `--import fx` is no way round)"
    ) in text
    # fx traces this one but its importer has no cumsum either: auto has tried it
    traced = Fn(lambda m, x: torch.cumsum(m.c(x), 1), c=nn.Conv2d(2, 2, 1)).eval()
    with pytest.raises(mdla_ir.IRError) as err:
        import_torch(traced, x, path="auto")
    assert "(the fx importer does not map the model either, so `--import fx` is no way" in str(
        err.value
    )


def test_an_unknown_path_is_refused() -> None:
    with pytest.raises(mdla_ir.IRError, match="expected one of fx, export, auto"):
        mdla_ir.from_torch(nn.ReLU(), (torch.zeros(1),), path="jit")


@pytest.mark.parametrize("spec", MODELS)
def test_bar_models_import_through_export_into_the_fx_graph(spec: str) -> None:
    """Same ops (kinds, names, attributes, input shapes, constant values) as the fx path, so
    they compile as before; and the float outputs match torch."""
    model = load(spec, frames=5)
    fx = mdla_ir.from_torch(model.module, model.example_inputs, name=spec, path="fx")
    ex = import_torch(model.module, model.example_inputs, name=spec, path="export")
    assert ex.path == "export"
    assert (ex.graph.inputs, ex.graph.outputs) == (fx.inputs, fx.outputs)
    assert [o.name for o in ex.graph.ops] == [o.name for o in fx.ops]
    for a, b in zip(fx.ops, ex.graph.ops, strict=True):
        assert (a.kind, a.attrs) == (b.kind, b.attrs), a.name
        for i, j in zip(a.inputs, b.inputs, strict=True):
            ta, tb = fx.tensors[i], ex.graph.tensors[j]
            assert ta.shape == tb.shape, a.name
            if ta.data is not None:
                assert tb.data is not None
                np.testing.assert_array_equal(ta.data, tb.data)
    x = torch.randn(fx.model_shape(fx.inputs[0]), generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        want = model.module(x).numpy()
    (got,) = mdla_ir.run_float(ex.graph, [x.numpy()])
    assert relative_error(got, want) <= 1e-4


def test_ops_record_the_module_and_line_they_came_from() -> None:
    inner = Fn(lambda m, x: m.act(x), act=nn.ReLU6())
    module = Fn(lambda m, x: m.inner(m.c(x)), c=nn.Conv2d(3, 4, 1), inner=inner).eval()
    graph = mdla_ir.from_torch(module, (torch.randn(1, 3, 4, 4),), optimize=False, path="export")
    conv, relu6 = graph.ops
    assert conv.source is not None
    assert relu6.source is not None
    assert (conv.source.module, relu6.source.module) == ("c (Conv2d)", "inner.act (ReLU6)")
    assert relu6.source.line.startswith("test_importer_export.py:")  # the lambda's line
    assert "in inner.act (ReLU6) at test_importer_export.py:" in str(relu6.source)


def test_export_records_torchs_source_lines_without_a_traceback_per_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`export_program` gives every node the source line torch's own stack traces give
    (`context.source_line`), from one frame walk per node instead of a captured, symbolized and
    formatted stack, and compiles the graph module's Python once, not after each of its passes."""
    from torch.fx import graph_module
    from torch.utils._traceback import CapturedTraceback

    from mdla_ir.importer.context import source_line
    from mdla_ir.importer.exported import export_program

    model = load("mobilenet_v2", frames=4)
    (x,) = model.example_inputs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = torch.export.export(model.module, (x,))
    want = [(n.name, source_line(n)) for n in plain.graph_module.graph.nodes]
    assert sum(1 for _, line in want if line.startswith("mobilenetv2.py:")) > 50
    calls = {"traceback": 0, "compile": 0}
    extract, compile_source = CapturedTraceback.extract, graph_module._exec_with_source

    def counted(key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            calls[key] += 1
            return fn(*args, **kwargs)

        return run

    monkeypatch.setattr(CapturedTraceback, "extract", staticmethod(counted("traceback", extract)))
    monkeypatch.setattr(graph_module, "_exec_with_source", counted("compile", compile_source))
    program = export_program(model.module, [x])
    assert calls["compile"] <= 1  # not once per pass of export's (six)
    # a few (torch captures one per export stage; how many varies with what ran before in the
    # process), never one per node (several hundred)
    assert calls["traceback"] < 10
    assert [(n.name, source_line(n)) for n in program.graph_module.graph.nodes] == want
    assert program.graph_module.code
    assert calls["compile"] <= 2


class _Constants(nn.Module):
    """A layer-scale parameter reshaped to broadcast (convnext), a bias table indexed by a
    constant index buffer (efficientformer's attention biases), an arange grid."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)
        self.gamma = nn.Parameter(torch.rand(4))
        self.table = nn.Parameter(torch.rand(4, 6))
        self.register_buffer("idx", torch.tensor([[0, 5, 2], [1, 1, 4], [3, 0, 2]]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x) * self.gamma.reshape(1, -1, 1, 1)
        grid = torch.arange(3, dtype=torch.float32).view(1, 1, 1, 3)
        return y + self.table[:, self.idx].unsqueeze(0) + grid


def test_ops_on_constants_fold_to_constants() -> None:
    graph = _check(_Constants(), (1, 3, 3, 3))
    assert set(graph.count()) == {"CONV_2D", "MUL", "ADD"}


class _RaisesInTorch(nn.Module):
    """A pool whose padding torch refuses at run time: no importer can make it run."""

    def __init__(self) -> None:
        super().__init__()
        self.pool = nn.MaxPool2d(3, 1, padding=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.pool(x)
        return out


def test_a_model_torch_cannot_run_is_named_as_such_not_an_internal_error() -> None:
    """Export refuses it, and the fx fallback would fail inside torch's shape propagation
    with a RuntimeError (an internal error to the user); the importer says torch itself
    cannot run the model on its example input, in torch's words, as an IRError (exit 1)."""
    with pytest.raises(IRError, match=r"raises on its example input \(1, 3, 8, 8\) in torch"):
        mdla_ir.from_torch(_RaisesInTorch().eval(), (torch.zeros(1, 3, 8, 8),))
