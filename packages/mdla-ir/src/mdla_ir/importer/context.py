"""The importer's conversion context: tensors and ops emitted so far, fx node -> tensor name."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import fx, nn

from mdla_ir.graph import Op, Source, Tensor
from mdla_ir.ops import OpKind


def source_line(node: fx.Node) -> str:
    frames = [
        (path, line)
        for path, line in re.findall(r'File "([^"]+)", line (\d+)', node.stack_trace or "")
        if f"{os.sep}torch{os.sep}" not in path
    ]
    if not frames:
        return ""
    path, line = frames[-1]
    return f"{os.path.basename(path)}:{line}"


def pair(v: Any) -> tuple[int, int]:
    return (int(v), int(v)) if isinstance(v, int) else (int(v[0]), int(v[1]))


def triple(v: Any) -> tuple[int, int, int]:
    return (int(v),) * 3 if isinstance(v, int) else (int(v[0]), int(v[1]), int(v[2]))


def same_pads(k: Sequence[int], d: Sequence[int]) -> list[tuple[int, int]]:
    """PyTorch padding='same': total = d*(k-1), left = total // 2, the extra one after."""
    return [
        (di * (ki - 1) // 2, di * (ki - 1) - di * (ki - 1) // 2)
        for ki, di in zip(k, d, strict=True)
    ]


@dataclass
class Ctx:
    gm: fx.GraphModule
    values: dict[fx.Node, Any]
    tensors: dict[str, Tensor] = field(default_factory=dict)
    ops: list[Op] = field(default_factory=list)
    refs: dict[fx.Node, str] = field(default_factory=dict)  # node -> tensor name
    names: dict[str, int] = field(default_factory=dict)
    unsupported: list[str] = field(default_factory=list)
    node: fx.Node | None = None
    # a comparison, no op: (tensor, gt|ge|lt|le|eq|ne, a number or the other tensor)
    predicates: dict[fx.Node, tuple[fx.Node, str, float | fx.Node]] = field(default_factory=dict)

    # -- values ------------------------------------------------------------------------------
    def is_tensor(self, a: Any) -> bool:
        return isinstance(a, fx.Node) and a in self.refs

    def ref(self, a: Any) -> str:
        """Tensor name for an argument: a traced tensor, or a scalar turned into a constant."""
        if self.is_tensor(a):
            return self.refs[a]
        if a in self.predicates:
            raise Unsupported(
                "a comparison used as a tensor",
                "use it as the condition of torch.where or masked_fill on the compared tensor "
                "(`(x > t).float() * x` is `torch.where(x > t, x, 0.0)`)",
            )
        value = self.value(a)
        if isinstance(value, torch.Tensor):
            value = value.detach().numpy()
        if isinstance(value, bool | int | float | np.ndarray):
            assert self.node is not None
            return self.const(f"{self.node.name}.const", np.asarray(value, dtype=np.float32))
        raise Unsupported(f"argument {a!r} is neither a tensor nor a number")

    def value(self, a: Any) -> Any:
        """The compile-time value of a non-tensor argument (sizes, ints, tuples of them)."""
        if isinstance(a, fx.Node):
            if a not in self.values:
                raise Unsupported(f"`{a.name}` has no compile-time value")
            return self.values[a]
        if isinstance(a, list | tuple):
            return type(a)(self.value(x) for x in a)
        return a

    def const(self, name: str, data: np.ndarray[Any, Any]) -> str:
        name = self.fresh(name, self.tensors)
        self.tensors[name] = Tensor(name, tuple(data.shape), str(data.dtype), data=data)
        return name

    def param(self, module: nn.Module, attr: str, qualname: str) -> str | None:
        p = getattr(module, attr, None)
        if p is None:
            return None
        return self.const(f"{qualname}.{attr}", p.detach().cpu().numpy().astype(np.float32))

    @staticmethod
    def fresh(name: str, taken: dict[str, Any]) -> str:
        base, i = name, 1
        while name in taken:
            name, i = f"{base}.{i}", i + 1
        return name

    # -- ops ---------------------------------------------------------------------------------
    def out_meta(self) -> Any:
        """The current node's one output tensor's metadata (shape, dtype)."""
        node = self.node
        assert node is not None
        meta = node.meta.get("tensor_meta")
        if meta is None or not hasattr(meta, "shape"):
            raise Unsupported("produces something other than one tensor")
        return meta

    def out_shape(self) -> tuple[int, ...]:
        """The current node's one output tensor's shape."""
        return tuple(int(d) for d in self.out_meta().shape)

    def emit(self, kind: OpKind, inputs: Sequence[str | None], **attrs: Any) -> None:
        node = self.node
        assert node is not None
        meta = self.out_meta()
        # ARGMAX's int64 indices are held as float32 class numbers (exact below 2^24)
        index = kind is OpKind.ARGMAX and meta.dtype == torch.int64
        if meta.dtype != torch.float32 and not index:
            raise Unsupported(f"produces a {meta.dtype} tensor (only float32 is imported)")
        out = self.fresh(node.name, self.tensors)
        self.tensors[out] = Tensor(out, self.out_shape())
        op_names = {o.name for o in self.ops}
        self.ops.append(
            Op(
                kind,
                self.fresh(self.op_name(node), dict.fromkeys(op_names)),
                tuple(i for i in inputs if i is not None),
                (out,),
                attrs,
                Source(node.name, target_name(node), source_line(node)),
            )
        )
        self.refs[node] = out

    def op_name(self, node: fx.Node) -> str:
        if node.op == "call_module":
            return str(node.target)
        stack = node.meta.get("nn_module_stack") or {}
        scope = next(reversed(stack.values()))[0] if stack else ""
        base = re.sub(r"_\d+$", "", node.name)
        return f"{scope}.{base}" if scope else base


class Unsupported(Exception):  # noqa: N818  (internal signal, not a user-facing error)
    """Raised by a converter: this node cannot be represented (collected, reported at the end);
    `fix` says what to change when the construct has a known way through."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.fix = fix


def target_name(node: fx.Node) -> str:
    t = node.target
    if node.op == "call_module":
        return str(t)
    if node.op == "call_method":
        return f"Tensor.{t}"
    if isinstance(t, torch._ops.OpOverload):
        return str(t)  # aten.conv2d.default
    module = getattr(t, "__module__", None) or ""
    name = getattr(t, "__name__", None) or str(t)
    module = {"_operator": "operator"}.get(module, module)
    return f"{module}.{name}" if module else name


Converter = Callable[[Ctx, Any, tuple[Any, ...], dict[str, Any]], None]


def bound(
    c: Ctx, names: tuple[str, ...], args: tuple[Any, ...], kw: dict[str, Any]
) -> dict[str, Any]:
    """A functional call's arguments by parameter name (positional ones named by `names`), each
    but the first (the tensor) read as a Python value."""
    return {
        k: v if k == names[0] else c.value(v)
        for k, v in (dict(zip(names, args, strict=False)) | kw).items()
    }
