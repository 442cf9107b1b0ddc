"""Average pools with ceil_mode's partial last window, as explicit end padding (exact).

PyTorch (aten AvgPool2d, per axis): a window starts at o*s - p and its divisor is

    count_include_pad:      min(start + k, H + p) - start        (clipped to input + padding)
    not count_include_pad:  min(start + k, H) - max(start, 0)    (the in-bounds taps)

ceil_mode adds a last window that may run past H + p. Neuron/TFLite AVERAGE_POOL_2D divides by
the in-bounds taps of the (implicitly padded) input, i.e. the second rule. So a partial window
is exact as the pads (p, p + extra) with the in-bounds divisor, where extra makes the floor-mode
window count equal the ceil-mode one:

- count_include_pad False, or p = 0 (nothing to include): pads (p, p + extra); the divisors
  agree window by window.
- count_include_pad True with p > 0: an explicit zero PAD of p on both sides first, then pads
  (0, extra): the in-bounds taps of the padded input are exactly the window clipped to
  [-p, H + p), PyTorch's divisor.

`divisor_override` matches neither and is refused. Without a partial window the op keeps
PyTorch's count_include_pad (legalize's avgpool rules handle it). Whether the device takes the
end padding is the device's padding rule (on the MDLA: VALID or TF-SAME pads only).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mdla_ir.importer.context import Converter, Ctx, Unsupported, bound, pair
from mdla_ir.importer.layers import _pool_pads
from mdla_ir.importer.shaped import emit_shaped
from mdla_ir.ops import OpKind


def max_pool_attrs(
    size: Sequence[int], k: Sequence[int], s: Sequence[int], p: Sequence[int], ceil: bool
) -> dict[str, Any]:
    pads = _pool_pads(size, k, s, p, bool(ceil))
    return {"kernel": tuple(k), "stride": tuple(s), "padding": pads, "fuse": "NONE"}


def avg_pool_attrs(
    size: Sequence[int],
    k: Sequence[int],
    s: Sequence[int],
    p: Sequence[int],
    ceil: bool,
    count_include_pad: bool,
) -> tuple[tuple[int, int] | None, dict[str, Any]]:
    """(explicit zero pre-pad (ph, pw) or None, the AVERAGE_POOL_2D attributes)."""
    t, b, left, r = _pool_pads(size, k, s, p, bool(ceil))
    attrs: dict[str, Any] = {"kernel": tuple(k), "stride": tuple(s), "fuse": "NONE"}
    extra = (b - t, r - left)
    if extra == (0, 0):
        return None, attrs | {"padding": (t, b, left, r), "count_include_pad": count_include_pad}
    if count_include_pad and any(p):
        return (t, left), attrs | {
            "padding": (0, extra[0], 0, extra[1]),
            "count_include_pad": False,
        }
    return None, attrs | {"padding": (t, b, left, r), "count_include_pad": False}


def _avg_pool2d(
    c: Ctx,
    x: Any,
    kernel: Any,
    stride: Any,
    padding: Any,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Any,
) -> None:
    if divisor_override is not None:
        raise Unsupported("avg_pool2d with divisor_override (no Neuron pool divides so)")
    k = pair(kernel)
    s = pair(stride) if stride not in (None, [], ()) else k
    name = c.ref(x)
    shape = c.tensors[name].shape
    pre, attrs = avg_pool_attrs(
        shape[2:], k, s, pair(padding), bool(ceil_mode), bool(count_include_pad)
    )
    if pre is not None:
        ph, pw = pre
        n, ch, h, w = shape
        pads = ((0, 0), (0, 0), (ph, ph), (pw, pw))
        name = emit_shaped(
            c, OpKind.PAD, [name], (n, ch, h + 2 * ph, w + 2 * pw), "pad", pads=pads, value=0.0
        )
    c.emit(OpKind.AVERAGE_POOL_2D, [name], **attrs)


def m_avgpool2d(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    _avg_pool2d(
        c,
        args[0],
        m.kernel_size,
        m.stride,
        m.padding,
        m.ceil_mode,
        m.count_include_pad,
        m.divisor_override,
    )


def _f_avgpool2d(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    names = (
        "input",
        "kernel_size",
        "stride",
        "padding",
        "ceil_mode",
        "count_include_pad",
        "divisor_override",
    )
    a = bound(c, names, args, kw)
    _avg_pool2d(
        c,
        a["input"],
        a["kernel_size"],
        a.get("stride"),
        a.get("padding", 0),
        a.get("ceil_mode", False),
        a.get("count_include_pad", True),
        a.get("divisor_override"),
    )


f_avgpool2d: Converter = _f_avgpool2d
