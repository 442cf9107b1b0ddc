"""Converters for adaptive max pooling (`nn.AdaptiveMaxPool2d`, `F.adaptive_max_pool2d`,
`aten.adaptive_max_pool2d`): to an output size that divides the input, the windows are fixed
(kernel = stride = input / output, no padding), so it is one MAX_POOL_2D, which the MDLA maps;
to any other size it is ADAPTIVE_MAX_POOL_2D (torch's uneven bins), which runs on the CPU.
"""

from __future__ import annotations

from typing import Any

from mdla_ir.importer.context import Ctx, Unsupported, pair
from mdla_ir.importer.shaped import emit_shaped
from mdla_ir.ops import OpKind


def _size(c: Ctx, x: Any, output_size: Any) -> tuple[tuple[int, int], tuple[int, int]]:
    """(input (h, w), output (h, w)); a None output size keeps that input size."""
    shape = c.tensors[c.ref(x)].shape
    if len(shape) != 4:
        raise Unsupported(f"adaptive max pool of a rank-{len(shape)} tensor (only 2-D maps)")
    h, w = shape[2], shape[3]
    size = output_size if isinstance(output_size, list | tuple) else (output_size,) * 2
    oh = h if size[0] is None else int(size[0])
    ow = w if size[1] is None else int(size[1])
    return (h, w), (oh, ow)


def _emit(c: Ctx, x: Any, output_size: Any, shaped: bool) -> str | None:
    (h, w), (oh, ow) = _size(c, x, output_size)
    k = (h // oh, w // ow)
    kind = OpKind.MAX_POOL_2D
    attrs: dict[str, Any] = {"kernel": k, "stride": k, "padding": (0, 0, 0, 0), "fuse": "NONE"}
    if h % oh or w % ow:  # uneven bins: no fixed window
        kind, attrs = OpKind.ADAPTIVE_MAX_POOL_2D, {"output_size": (oh, ow)}
    if shaped:  # aten's form: (values, indices), the values picked by getitem 0
        n, ch = c.tensors[c.ref(x)].shape[:2]
        return emit_shaped(c, kind, [c.ref(x)], (n, ch, oh, ow), "pool", **attrs)
    c.emit(kind, [c.ref(x)], **attrs)
    return None


def m_adaptive_maxpool(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    if m.return_indices:
        raise Unsupported("AdaptiveMaxPool2d(return_indices=True)", "drop return_indices")
    _emit(c, args[0], m.output_size, shaped=False)


def f_adaptive_maxpool(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    a = dict(zip(("input", "output_size", "return_indices"), args, strict=False)) | kw
    if c.value(a.get("return_indices", False)):
        raise Unsupported("adaptive_max_pool2d(return_indices=True)", "drop return_indices")
    _emit(c, a["input"], c.value(a["output_size"]), shaped=False)


def aten_adaptive_maxpool(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    from mdla_ir.importer.aten import pieces  # the export path's multi-output table

    assert c.node is not None
    out = _emit(c, args[0], pair(c.value(args[1])), shaped=True)
    pieces(c)[c.node] = [out]
