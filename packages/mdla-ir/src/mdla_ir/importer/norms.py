"""Converters for GroupNorm and InstanceNorm: one GROUP_NORM (groups of channels normalized over
their channels and every non-batch axis, then scaled by a per-channel weight and bias). The MDLA
has no RSQRT (silicon fact 2): it is a CPU float op, like LAYER_NORM (`--cpu GROUP_NORM`).

    nn.GroupNorm(G, C), F.group_norm, aten.group_norm / native_group_norm  -> GROUP_NORM(G)
    nn.InstanceNorm1d/2d, F.instance_norm, aten.instance_norm (input statistics) -> GROUP_NORM(C)
    InstanceNorm in eval with track_running_stats (running statistics)    -> BATCH_NORM

An absent weight is a constant 1, an absent bias a constant 0 (the CPU kernel always reads
both).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mdla_ir.importer.context import Ctx, Unsupported
from mdla_ir.ops import OpKind


def _affine(c: Ctx, x: Any, weight: Any, bias: Any) -> list[str]:
    """x, weight and bias as tensor names; absent ones become constants 1 and 0."""
    n = c.tensors[c.ref(x)].shape[1]
    node = c.node
    assert node is not None
    out = [c.ref(x)]
    for t, fill, tag in ((weight, 1.0, "weight"), (bias, 0.0, "bias")):
        if t is None:
            out.append(c.const(f"{node.name}.{tag}", np.full(n, fill, np.float32)))
        elif isinstance(t, str):  # a module's parameter, already a constant (Ctx.param)
            out.append(t)
        elif c.is_tensor(t) and c.tensors[c.ref(t)].is_const:
            out.append(c.ref(t))
        else:
            raise Unsupported(f"a norm {tag} computed at run time (only constants import)")
    return out


def group_norm(c: Ctx, x: Any, groups: int, weight: Any, bias: Any, eps: float) -> None:
    channels = c.tensors[c.ref(x)].shape[1]
    if groups < 1 or channels % groups:
        raise Unsupported(f"GroupNorm of {channels} channels in {groups} groups")
    c.emit(OpKind.GROUP_NORM, _affine(c, x, weight, bias), groups=groups, eps=eps, axis=1)


def m_group_norm(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    q = str(c.node.target) if c.node else ""
    x = args[0] if args else kw["input"]
    w, b = c.param(m, "weight", q), c.param(m, "bias", q)
    group_norm(c, x, int(m.num_groups), w, b, float(m.eps))


def f_group_norm(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """F.group_norm / aten.group_norm(x, num_groups, weight, bias, eps[, cudnn_enabled])."""
    names = ("input", "num_groups", "weight", "bias", "eps")
    a = dict(zip(names, args, strict=False)) | kw
    eps = float(c.value(a.get("eps", 1e-5)))
    group_norm(c, a["input"], int(c.value(a["num_groups"])), a.get("weight"), a.get("bias"), eps)


def aten_native_group_norm(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """native_group_norm(x, weight, bias, N, C, HxW, group, eps) -> (y, mean, rstd): y is the
    piece `getitem(·, 0)` picks."""
    from mdla_ir.importer.aten import AtenCtx, pieces  # the export path's context

    x, weight, bias = args[:3]
    groups, eps = int(c.value(args[6])), float(c.value(args[7]))
    assert isinstance(c, AtenCtx)
    shape = c.tensors[c.ref(x)].shape
    if shape[1] % groups:
        raise Unsupported(f"GroupNorm of {shape[1]} channels in {groups} groups")
    ins = _affine(c, x, weight, bias)
    y = c.emit_as(OpKind.GROUP_NORM, ins, shape, groups=groups, eps=eps, axis=1)
    node = c.node
    assert node is not None
    pieces(c)[node] = [y]


def instance_norm(
    c: Ctx, x: Any, stats: tuple[Any, Any] | None, affine: tuple[Any, Any], eps: float
) -> None:
    """Input statistics (`stats` None): GROUP_NORM with a group per channel; running ones: the
    BATCH_NORM they are."""
    if stats is None:
        channels = c.tensors[c.ref(x)].shape[1]
        c.emit(OpKind.GROUP_NORM, _affine(c, x, *affine), groups=channels, eps=eps, axis=1)
        return
    mean, var = (s if isinstance(s, str) else c.ref(s) for s in stats)
    ins = _affine(c, x, *affine)
    c.emit(OpKind.BATCH_NORM, [ins[0], mean, var, ins[1], ins[2]], eps=eps)


def m_instance_norm(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    q = str(c.node.target) if c.node else ""
    x = args[0] if args else kw["input"]
    running = m.track_running_stats and m.running_mean is not None
    stats = (c.param(m, "running_mean", q), c.param(m, "running_var", q)) if running else None
    instance_norm(c, x, stats, (c.param(m, "weight", q), c.param(m, "bias", q)), float(m.eps))


def f_instance_norm(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """F.instance_norm / aten.instance_norm(x, running_mean, running_var, weight, bias,
    use_input_stats, momentum, eps[, cudnn_enabled]) (F.instance_norm's order; aten puts
    weight and bias first)."""
    names = ("input", "running_mean", "running_var", "weight", "bias", "use_input_stats")
    a = dict(zip((*names, "momentum", "eps"), args, strict=False)) | kw
    use_input = bool(c.value(a.get("use_input_stats", True)))
    if not use_input and (a.get("running_mean") is None or a.get("running_var") is None):
        raise Unsupported("instance_norm without input statistics or running ones")
    stats = None if use_input else (a["running_mean"], a["running_var"])
    eps = float(c.value(a.get("eps", 1e-5)))
    instance_norm(c, a["input"], stats, (a.get("weight"), a.get("bias")), eps)


def aten_instance_norm(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """aten.instance_norm(x, weight, bias, running_mean, running_var, use_input_stats, ...)."""
    x, w, b, mean, var, use_input = args[:6]
    f_instance_norm(c, m, (x, mean, var, w, b, use_input, None, args[7]), {})
