"""Import a torch module into the flat IR, by torch.fx (here) or torch.export (`exported.py`).

`path` chooses: "fx" traces symbolically, "export" captures with torch.export and maps ATen op
by op, "auto" (the default) uses fx's graph when fx traces the whole module, maps every node
and nothing makes that graph differ from eager (no in-place aliasing hazard: `aliasing.py`,
`tracing.py`), else torch.export; `Imported.note` says which and why. Both give the same graph
where fx qualifies (tests/ir/test_fast_path.py), and fx costs a fraction of export's time.

fx: trace a module, propagate shapes (fx ShapeProp, with zeros standing in for its convolutions'
values: `stand_in.py`), emit the flat IR.

Every fx node becomes one op, a constant, or a compile-time Python value (sizes, shapes). The
tables in `importer.tables` say which torch module / function / method becomes which op kind;
constructs not in them are collected and reported together in one `UnsupportedError` naming each
fx node, what it called and the model's source line.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import fx, nn
from torch.export import ExportedProgram
from torch.fx.passes.shape_prop import ShapeProp

from mdla_ir.errors import IRError, UnsupportedError
from mdla_ir.graph import Graph, Tensor
from mdla_ir.imported import DEFAULT_PATH, PATHS, Imported
from mdla_ir.importer import stand_in
from mdla_ir.importer.context import Ctx, Unsupported, target_name
from mdla_ir.importer.exported import (
    ExportRefused,
    ProgramModule,
    export_program,
    import_program,
    prepare,
)
from mdla_ir.importer.outputs import graph_outputs
from mdla_ir.importer.refusals import module_refusal, refusal
from mdla_ir.importer.stand_in import conv_stand_in, may_stand_in, reads_only_shapes
from mdla_ir.importer.subclasses import known_base
from mdla_ir.importer.tables import FUNCTIONS, METHODS, MODULES, identity
from mdla_ir.importer.tracing import fx_risk, trace
from mdla_ir.ops import OpKind
from mdla_ir.passes import eliminate_dead_ops, run_passes
from mdla_ir.provenance import Provenance, source_hash
from mdla_ir.verify import verify

EXPORTED = "imported via torch.export"
FX_SUFFICED = (
    "torch.fx traced the whole module with no in-place aliasing, so torch.export was not needed"
)


class _ValueProp(ShapeProp):
    """ShapeProp that also keeps the Python values (sizes, shapes) non-tensor nodes produce."""

    def __init__(self, gm: fx.GraphModule, stand_ins: bool = False) -> None:
        super().__init__(gm)
        self.values: dict[fx.Node, Any] = {}
        self.constant: set[fx.Node] = set()  # computed from parameters and buffers only
        self.folded: dict[fx.Node, torch.Tensor] = {}  # such calls' tensors: constants
        self.use_stand_ins = stand_ins  # convs give zeros of their shape (`stand_in.py`)
        self.stand_ins: set[fx.Node] = set()
        self._node: fx.Node | None = None

    def run_node(self, n: fx.Node) -> Any:
        self._node = n
        result = super().run_node(n)
        if not isinstance(result, torch.Tensor):
            self.values[n] = result
        if n.op == "get_attr" or (
            n.op in ("call_function", "call_method")
            and all(self._fixed(a) for a in n.all_input_nodes)
        ):
            self.constant.add(n)
            if n.op != "get_attr" and isinstance(result, torch.Tensor):
                self.folded[n] = result.detach().clone()
        return result

    def _fixed(self, a: fx.Node) -> bool:
        return a in self.constant or (a in self.values and not _holds_tensor(self.values[a]))

    def call_module(self, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self.use_stand_ins and self._node is not None:
            zeros = conv_stand_in(self.fetch_attr(str(target)), args, kwargs)
            if zeros is not None:
                self.stand_ins.add(self._node)
                return zeros
        return super().call_module(target, args, kwargs)


def _convert_node(c: Ctx, node: fx.Node) -> None:
    args = node.args
    kwargs = dict(node.kwargs)
    if node.op == "call_module":
        module = c.gm.get_submodule(str(node.target))
        base = known_base(module, MODULES)
        fn = MODULES[base] if base is not None else None
        if fn is None and type(module).__name__ == "StochasticDepth":
            fn = identity(OpKind.DROPOUT)
        if fn is None:
            raise module_refusal(module)
        fn(c, module, args, kwargs)
    elif node.op == "call_function":
        fn = FUNCTIONS.get(node.target)
        if fn is None:
            raise Unsupported(f"function {target_name(node)}")
        fn(c, None, args, kwargs)
    elif node.op == "call_method":
        fn = METHODS.get(str(node.target))
        if fn is None:
            raise Unsupported(f"method Tensor.{node.target}")
        fn(c, None, args, kwargs)
    else:
        raise Unsupported(f"fx node kind {node.op}")


def _example_list(example_inputs: Any) -> list[torch.Tensor]:
    if isinstance(example_inputs, torch.Tensor):
        return [example_inputs]
    items = list(example_inputs)
    if not all(isinstance(x, torch.Tensor) for x in items):
        raise IRError("example_inputs must be a tensor or a sequence of tensors")
    return items


def from_torch(
    module: nn.Module,
    example_inputs: Any,
    name: str | None = None,
    optimize: bool = True,
    path: str = DEFAULT_PATH,
) -> Graph:
    """Import `module` (in eval mode) into the flat IR; `optimize` runs the default passes.
    `path`: "fx" (symbolic tracing), "export" (torch.export, core ATen), or "auto" (fx where
    its graph is sure to be export's, else export)."""
    return import_torch(module, example_inputs, name, optimize, path).graph


def import_torch(
    module: nn.Module | ExportedProgram,
    example_inputs: Any,
    name: str | None = None,
    optimize: bool = True,
    path: str = DEFAULT_PATH,
) -> Imported:
    """`from_torch`, saying which path imported the module and why (`Imported`). A program
    (ExportedProgram, ProgramModule: a .pt2) imports its own ATen graph whatever `path` says."""
    if path not in PATHS:
        raise IRError(f"import path `{path}`: expected one of {', '.join(PATHS)}")
    if isinstance(module, ProgramModule):
        module = module.program
    if isinstance(module, ExportedProgram):
        graph = import_program(prepare(module), name or "exported", "ExportedProgram")
        return _imported(graph, optimize, "export", "")
    name = name or type(module).__name__
    if _is_exported(module):  # a program's module(): ATen calls, which only export imports
        graph = import_program(export_program(module, _example_list(example_inputs)), name)
        return _imported(graph, optimize, "export", "")
    if module.training:
        raise IRError(
            f"`{name}` is in training mode: call .eval() before importing it "
            "(BatchNorm and dropout trace differently in training)"
        )
    examples = _example_list(example_inputs)
    if path == "fx":
        return _imported(_from_fx(module, examples, name), optimize, "fx", "")
    if path == "export":
        graph = _from_export(module, examples, name, lambda: _untraced(module, name))
        return _imported(graph, optimize, "export", EXPORTED)
    return _auto(module, examples, name, optimize)


def _auto(module: nn.Module, examples: list[torch.Tensor], name: str, optimize: bool) -> Imported:
    """torch.fx when it traces the whole module, maps every node and nothing makes its graph
    differ from export's (`tracing.fx_risk`): the same graph as torch.export's, at a quarter to
    a half of its cost. Else torch.export, the front door; when that fails too, both reasons."""
    fx_failure: Exception | None = None  # what stopped fx (None: it traced and mapped)
    try:
        gm = trace(module, name)
        risk = fx_risk(gm)
        if not risk:
            graph = _from_fx(module, examples, name, gm, unaliased=True)
            return _imported(graph, optimize, "fx", FX_SUFFICED)
        fx_exc: Exception = UnsupportedError(risk, [risk])
        why_fx = f"torch.fx could not be used: {risk}"
    except Exception as exc:  # whatever stops fx, export is the way in, as without fx first
        fx_exc, why_fx, fx_failure = exc, _why_not_fx(exc), exc
    try:
        graph = _from_export(module, examples, name, lambda: fx_failure)
    except (ExportRefused, UnsupportedError) as exc:
        _check_runs(module, examples, name)
        if not isinstance(fx_exc, IRError):
            raise fx_exc from exc
        why_export = _why_not_export(exc)
        if why_fx.startswith("torch.fx could not be used"):  # fx mapped it: say both in one
            fx_exc = UnsupportedError(str(fx_exc), [f"{why_export}; torch.fx: {fx_exc}"])
        raise _both_failed(why_export, fx_exc) from fx_exc
    return _imported(graph, optimize, "export", f"{why_fx}; {EXPORTED}")


def _from_export(
    module: nn.Module,
    examples: list[torch.Tensor],
    name: str,
    fx_failure: Callable[[], Exception | None],
) -> Graph:
    """The export path; `fx_failure()` says what stops torch.fx on the module (None: nothing),
    asked only when an ATen op has no mapping, so its refusal names a way round that works."""
    program = export_program(module, examples)
    fix = functools.cache(lambda: _unmapped_fix(fx_failure()))
    return import_program(program, name, type(module).__qualname__, _layers(module), fix)


def _untraced(module: nn.Module, name: str) -> Exception | None:
    """Why torch.fx cannot trace `module` (None when it can): a symbolic trace, no shapes."""
    try:
        trace(module, name)
    except Exception as exc:  # any failure of the trace is the answer
        return exc
    return None


def _unmapped_fix(fx_failure: Exception | None) -> str:
    """The way round an ATen op the importer does not map: `--import fx` only when torch.fx
    gets through the model (`fx_failure` is None), else the model's line itself."""
    if fx_failure is None:
        return (
            "`--import fx` traces the Python model instead (torch.fx traces it), or compute "
            "that line with ops the importer maps"
        )
    if isinstance(fx_failure, UnsupportedError):
        why = "the fx importer does not map the model either"
    elif str(fx_failure).startswith("torch.fx cannot trace"):
        why = "torch.fx cannot trace the model"
    else:
        why = f"torch.fx fails on the model too ({type(fx_failure).__name__})"
    return f"compute that line with ops the importer maps ({why}, so `--import fx` is no way round)"


def _check_runs(module: nn.Module, examples: list[torch.Tensor], name: str) -> None:
    """A model torch itself cannot run on the example inputs is the user's to fix: say so
    (with torch's own words) instead of letting the fx tracer's shape propagation fail deep
    inside torch. Only on the fallback path, where export has already refused it."""
    try:
        with torch.no_grad():
            module(*examples)
    except Exception as exc:  # any exception of the user's forward is the answer
        shapes = ", ".join(str(tuple(x.shape)) for x in examples)
        first = (str(exc).strip().splitlines() or [""])[0]
        raise IRError(
            f"`{name}` raises on its example input {shapes} in torch itself: "
            f"{type(exc).__name__}: {first} (fix the model, or give the input shape it takes)"
        ) from exc


def _imported(graph: Graph, optimize: bool, path: str, note: str) -> Imported:
    """The finished graph, its provenance recording `path` (the manifest keeps it, so `run`
    re-imports the FP32 side the same way)."""
    prov = dataclasses.replace(graph.provenance, import_path=path)
    return Imported(_finish(graph.with_(provenance=prov), optimize), path, note)


def _layers(module: nn.Module) -> frozenset[str]:
    """Qualified names of the submodules that compute as a torch.nn layer they subclass."""
    return frozenset(
        path
        for path, m in module.named_modules()
        if path
        and not type(m).__module__.startswith("torch.nn.")
        and known_base(m, MODULES) is not None
    )


def _is_exported(module: nn.Module) -> bool:
    """True for an exported program's `module()`: its graph calls ATen overloads."""
    return isinstance(module, fx.GraphModule) and any(
        isinstance(n.target, torch._ops.OpOverload) for n in module.graph.nodes
    )


def _both_failed(why: str, fx_exc: IRError) -> IRError:
    """fx's error, its message led by why export did not import the module either."""
    message = f"{why}; torch.fx: {fx_exc}"
    if isinstance(fx_exc, UnsupportedError):
        return UnsupportedError(message, fx_exc.items, fx_exc.partial)
    return IRError(message)


def _why_not_fx(exc: Exception) -> str:
    if isinstance(exc, UnsupportedError):
        first = exc.items[0] if exc.items else str(exc)
        more = f" (and {len(exc.items) - 1} more)" if len(exc.items) > 1 else ""
        return f"torch.fx does not map {first}{more}"
    first = (str(exc).strip().splitlines() or [""])[0]
    if isinstance(exc, IRError):  # the fx path's own words ("torch.fx cannot trace ...")
        return first
    return f"torch.fx failed: {type(exc).__name__}: {first}"


def _why_not_export(exc: IRError) -> str:
    if isinstance(exc, ExportRefused):
        return f"torch.export refused: {exc}"
    assert isinstance(exc, UnsupportedError)
    first = exc.items[0] if exc.items else str(exc)
    more = f" (and {len(exc.items) - 1} more)" if len(exc.items) > 1 else ""
    return f"torch.export captured it, but the ATen importer does not map {first}{more}"


def _finish(graph: Graph, optimize: bool) -> Graph:
    graph = eliminate_dead_ops(graph).graph  # a result forward computes but never uses
    verify(graph)
    return run_passes(graph) if optimize else graph


def _from_fx(
    module: nn.Module,
    examples: list[torch.Tensor],
    name: str,
    gm: fx.GraphModule | None = None,
    unaliased: bool = False,
) -> Graph:
    """The fx path: symbolic trace (or `gm`, the module's), ShapeProp, one converter per node
    (the raw graph). `unaliased`: `gm` is known to have no in-place hazard (`fx_risk`)."""
    gm = gm if gm is not None else trace(module, name)
    prop = _propagated(gm, examples, unaliased)
    c = Ctx(gm, prop.values)
    inputs: list[str] = []
    outputs: list[str] = []
    failed: set[fx.Node] = set()
    for node in gm.graph.nodes:
        c.node = node
        if node.op == "placeholder":
            meta = node.meta["tensor_meta"]
            c.tensors[node.name] = Tensor(node.name, tuple(int(d) for d in meta.shape))
            c.refs[node] = node.name
            inputs.append(node.name)
        elif node.op == "get_attr":
            value = _attr(gm, str(node.target))
            c.refs[node] = c.const(str(node.target), value.detach().numpy().astype(np.float32))
        elif node.op == "output":
            outputs += graph_outputs(c, node.args[0], inputs)
        elif node in prop.folded:  # computed from constants only: folded to a constant
            c.refs[node] = c.const(node.name, prop.folded[node].numpy().astype(np.float32))
        elif node in prop.values and not _holds_tensor(prop.values[node]):
            continue  # a compile-time value (x.size(0), shape arithmetic): no op
        elif node in prop.constant and node.users and all(u in prop.folded for u in node.users):
            continue  # constants only, read only by folded calls (meshgrid's getitems): no op
        elif node.target is operator.getitem and node.args[0] in failed:
            failed.add(node)  # its producer is already reported
            _placeholder_for(c, node)
        else:
            try:
                _convert_node(c, node)
            except Unsupported as exc:
                missing = [a for a in node.all_input_nodes if a in failed and a not in c.refs]
                if not missing:  # else only a consequence of an earlier, reported failure
                    c.unsupported.append(refusal(gm, node, exc, type(module)))
                failed.add(node)
                _placeholder_for(c, node)
    if c.unsupported:
        partial = _partial(c, name, inputs, outputs, failed)
        raise UnsupportedError.of_model(name, c.unsupported, partial)
    return Graph(
        name,
        c.tensors,
        tuple(c.ops),
        tuple(inputs),
        tuple(outputs),
        provenance=Provenance(
            module=type(module).__qualname__, source_hash=fx_source_hash(gm, module)
        ),
    )


def _propagated(gm: fx.GraphModule, examples: list[torch.Tensor], unaliased: bool) -> _ValueProp:
    """`gm` run on (copies of) `examples` for its shapes and values, with stand-ins for its
    convolutions where nothing computed reads their values (`stand_in.py`), else for real.
    (Run twice when that is found out only afterwards: so only when the forward writes into
    no parameter or buffer and runs no module code but torch.nn's.)"""
    prop = _ValueProp(gm, stand_in.STAND_INS and may_stand_in(gm, unaliased))
    rng = torch.random.get_rng_state() if prop.use_stand_ins else None
    try:
        with torch.no_grad():  # on copies: a forward may write into its input in place
            prop.propagate(*(x.clone() for x in examples))
    except Exception:
        if not prop.stand_ins:  # it failed on real values: so would the run below
            raise
    else:
        if reads_only_shapes(gm, prop.stand_ins, prop.values):
            return prop
    if rng is not None:  # the run below draws what the first drew (a forward's torch.rand)
        torch.random.set_rng_state(rng)
    prop = _ValueProp(gm)
    with torch.no_grad():
        prop.propagate(*(x.clone() for x in examples))
    return prop


def _partial(
    c: Ctx, name: str, inputs: list[str], outputs: list[str], failed: set[fx.Node]
) -> Graph | None:
    """What did import, as a graph: each refused construct's result becomes a graph input and
    its operands graph outputs, so the later stages can report on the rest at once (None if
    even that is not sound)."""
    cut = [c.refs[n] for n in failed if n in c.refs and c.refs[n] not in inputs]
    fed = {
        c.refs[a]
        for n in failed
        for a in n.all_input_nodes
        if a not in failed and a in c.refs and not c.tensors[c.refs[a]].is_const
    }
    ends = [*outputs, *sorted(fed - set(outputs) - set(inputs) - set(cut))]
    graph = Graph(name, c.tensors, tuple(c.ops), (*inputs, *cut), tuple(ends))
    try:
        graph = eliminate_dead_ops(graph).graph
        return run_passes(verify(graph))
    except IRError:
        return None


def fx_source_hash(gm: fx.GraphModule, module: nn.Module) -> str:
    """sha256 of the traced structure (the fx graph's Python code) and the state dict."""
    state = module.state_dict()
    tensors = ((k, _raw(v)) for k, v in state.items() if isinstance(v, torch.Tensor))
    return source_hash(gm.code, tensors)


def _raw(t: torch.Tensor) -> np.ndarray[Any, Any]:
    t = t.detach().cpu().contiguous()
    return t.view(torch.int16).numpy() if t.dtype == torch.bfloat16 else t.numpy()


def _holds_tensor(value: Any) -> bool:
    if isinstance(value, list | tuple):
        return any(_holds_tensor(v) for v in value)
    return isinstance(value, torch.Tensor)


def _attr(gm: fx.GraphModule, target: str) -> Any:
    """The tensor a get_attr node reads: an attribute of the root, a parameter or a buffer."""
    if "." not in target:
        return getattr(gm, target)
    if target in dict(gm.named_parameters()):
        return gm.get_parameter(target)
    return gm.get_buffer(target)


def _placeholder_for(c: Ctx, node: fx.Node) -> None:
    """Keep converting after an unsupported node, so every problem is reported at once."""
    meta = node.meta.get("tensor_meta")
    if meta is not None and hasattr(meta, "shape"):
        c.tensors[node.name] = Tensor(node.name, tuple(int(d) for d in meta.shape))
        c.refs[node] = node.name
