"""`F.scaled_dot_product_attention` (and `aten.scaled_dot_product_attention`, kept whole by the
export path's decomposition) as the ops it computes:

    BATCH_MATMUL(q, k, adj_y) -> MUL by the scale -> ADD the mask -> SOFTMAX -> BATCH_MATMUL(., v)

Kept whole because ATen's decomposition adds a guard for rows that are masked out entirely
(`eq(scores, -inf)`, `any`, `where`: boolean ops no target runs) that a graph without a mask,
or with a finite one, never needs. The scale is torch's (1/sqrt(E) unless given); the mask is a
float tensor added to the scores; a boolean or causal mask is refused (it adds -inf, which an
int8 scale cannot hold), and dropout must be off (eval mode).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from torch import fx

from mdla_ir.importer.context import Ctx, Unsupported
from mdla_ir.importer.shaped import emit_shaped
from mdla_ir.ops import OpKind

_NAMES = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
_MASK_FIX = "give a float mask of finite values to add to the scores (e.g. -1e4 where masked)"


def _arguments(c: Ctx, args: tuple[Any, ...], kw: dict[str, Any]) -> dict[str, Any]:
    a = dict(zip(_NAMES, args, strict=False)) | kw
    if float(c.value(a.get("dropout_p", 0.0))) != 0.0:
        raise Unsupported("attention dropout (dropout_p > 0)", "put the model in eval mode")
    if bool(c.value(a.get("is_causal", False))):
        raise Unsupported("a causal attention mask (is_causal=True)", _MASK_FIX)
    mask = a.get("attn_mask")
    if mask is not None and not (c.is_tensor(mask) and _floating(mask)):
        raise Unsupported("an attention mask that is not a float tensor", _MASK_FIX)
    return a


def _floating(a: Any) -> bool:
    """Whether the tensor node `a` holds floats (a boolean mask selects; it is not added)."""
    meta = a.meta.get("tensor_meta", a.meta.get("val")) if isinstance(a, fx.Node) else None
    return bool(getattr(getattr(meta, "dtype", None), "is_floating_point", False))


def scaled_dot_product_attention(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """softmax(q @ k^T * scale + mask) @ v over the last two axes."""
    a = _arguments(c, args, kw)
    q, k, v = (c.ref(a[n]) for n in ("query", "key", "value"))
    qs, ks, vs = (c.tensors[n].shape for n in (q, k, v))
    if qs[:-2] != ks[:-2] or ks[:-2] != vs[:-2]:
        raise Unsupported(
            f"attention over different head counts (query {qs}, key {ks}, value {vs})",
            "repeat the key and value heads to the query's count",
        )
    given = c.value(a.get("scale"))
    scale = 1.0 / math.sqrt(qs[-1]) if given is None else float(given)
    scores = (*qs[:-1], ks[-2])
    s = emit_shaped(c, OpKind.BATCH_MATMUL, [q, k], scores, "scores", adj_x=False, adj_y=True)
    node = c.node
    assert node is not None
    factor = c.const(f"{node.name}.scale", np.asarray(scale, np.float32))
    s = emit_shaped(c, OpKind.MUL, [s, factor], scores, "scaled", fuse="NONE")
    if a.get("attn_mask") is not None:
        s = emit_shaped(c, OpKind.ADD, [s, c.ref(a["attn_mask"])], scores, "masked", fuse="NONE")
    p = emit_shaped(c, OpKind.SOFTMAX, [s], scores, "softmax", axis=len(scores) - 1, beta=1.0)
    c.emit(OpKind.BATCH_MATMUL, [p, v], adj_x=False, adj_y=False)
