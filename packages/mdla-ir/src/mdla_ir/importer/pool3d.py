"""3-D average pools (AvgPool3d, F.avg_pool3d, AdaptiveAvgPool3d to sizes that divide) as
AVERAGE_POOL_3D; legalization makes 2-D pools over frames of it (`pool3d_to_pool2d`).

An adaptive pool to (T', H', W') that divides the input (T, H, W) is the plain pool with kernel
and stride (T/T', H/H', W/W'): PyTorch's bins are then those windows. One that does not divide
has no pool form and is refused with the sizes that would divide."""

from __future__ import annotations

from typing import Any

from mdla_ir.importer.context import Ctx, Unsupported, triple
from mdla_ir.ops import OpKind


def avg_pool3d(c: Ctx, x: Any, a: dict[str, Any]) -> None:
    """`a`: kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override."""
    if a.get("divisor_override") is not None:
        raise Unsupported("avg_pool3d with divisor_override (no Neuron pool divides so)")
    if a.get("ceil_mode"):
        raise Unsupported("avg_pool3d with ceil_mode=True (fix: ceil_mode=False, or pad first)")
    k = triple(a["kernel_size"])
    stride = a.get("stride")
    c.emit(
        OpKind.AVERAGE_POOL_3D,
        [c.ref(x)],
        kernel=k,
        stride=triple(stride) if stride not in (None, [], ()) else k,
        padding=triple(a.get("padding", 0)),
        count_include_pad=bool(a.get("count_include_pad", True)),
    )


def adaptive_avg_pool3d(c: Ctx, x: Any, output_size: Any) -> None:
    name = c.ref(x)
    sizes = c.tensors[name].shape[2:]
    wanted = (output_size,) * 3 if isinstance(output_size, int) else tuple(output_size)
    outs = tuple(int(s if o is None else o) for o, s in zip(wanted, sizes, strict=True))
    if any(s % o for s, o in zip(sizes, outs, strict=True)):
        divisors = [[d for d in range(1, s + 1) if s % d == 0] for s in sizes]
        raise Unsupported(
            f"adaptive_avg_pool3d to {outs} from (T, H, W) = {tuple(sizes)}: a size that does "
            f"not divide has no pool form (fix: output sizes dividing each axis, {divisors})"
        )
    k = tuple(s // o for s, o in zip(sizes, outs, strict=True))
    c.emit(OpKind.AVERAGE_POOL_3D, [name], kernel=k, stride=k, padding=(0, 0, 0))


_NAMES = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override")


def m_avgpool3d(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    avg_pool3d(c, args[0], {n: getattr(m, n) for n in _NAMES})


def f_avgpool3d(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """F.avg_pool3d and aten.avg_pool3d: (x, kernel, stride, padding, ceil, include, divisor)."""
    given = dict(zip(("input", *_NAMES), args, strict=False)) | kw
    avg_pool3d(c, given.pop("input"), {k: c.value(v) for k, v in given.items()})


def f_adaptive_avgpool3d(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    adaptive_avg_pool3d(c, args[0], c.value(args[1] if len(args) > 1 else kw["output_size"]))


def m_adaptive_avgpool3d(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    adaptive_avg_pool3d(c, args[0], m.output_size)
