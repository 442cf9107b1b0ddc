"""`torch.nn.functional.batch_norm` in eval mode: the BATCH_NORM op the BatchNorm modules give.

Libraries that fuse BatchNorm with its activation (a BatchNorm2d subclass whose forward calls
`F.batch_norm` and then an activation module) reach the importer as this call, with the running
statistics, weight and bias read from the module's buffers (constants):

    y = (x - running_mean) / sqrt(running_var + eps) * weight + bias

which is what BatchNorm2d computes in eval mode, so it folds into the convolution before it the
same way (`passes.fold_batchnorm`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mdla_ir.importer.context import Ctx, Unsupported
from mdla_ir.importer.conv1d import _finish, _image
from mdla_ir.importer.layers import is_const
from mdla_ir.ops import OpKind

NAMES = ("input", "running_mean", "running_var", "weight", "bias", "training", "momentum", "eps")


def f_batch_norm(c: Ctx, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """F.batch_norm(x, mean, var, weight, bias, training=False, momentum, eps) -> BATCH_NORM."""
    a = dict(zip(NAMES, args, strict=False)) | kw
    if c.value(a.get("training", False)):
        raise Unsupported(
            "batch_norm with training=True (batch statistics)",
            "call .eval() on the model, and keep track_running_stats=True so eval mode uses "
            "the running statistics",
        )
    for key in ("running_mean", "running_var"):
        if a.get(key) is None:
            raise Unsupported(
                f"batch_norm without {key} (track_running_stats=False)",
                "build the BatchNorm with track_running_stats=True and set its statistics",
            )
    for key in ("running_mean", "running_var", "weight", "bias"):
        if a.get(key) is not None and not is_const(c, a[key]):
            raise Unsupported(f"batch_norm {key} is computed at run time (only constants import)")
    mean, var = c.ref(a["running_mean"]), c.ref(a["running_var"])
    n = c.tensors[mean].shape[0]
    assert c.node is not None
    q = c.node.name
    gamma = (
        c.ref(a["weight"])
        if a.get("weight") is not None
        else c.const(f"{q}.weight", np.ones(n, np.float32))
    )
    beta = (
        c.ref(a["bias"])
        if a.get("bias") is not None
        else c.const(f"{q}.bias", np.zeros(n, np.float32))
    )
    eps = float(c.value(a.get("eps", 1e-5)))
    x = a["input"]
    if len(c.tensors[c.ref(x)].shape) == 3:  # (N, C, L): as BatchNorm1d, on the H = 1 image
        x4, _ = _image(c, x)
        _finish(c, OpKind.BATCH_NORM, [x4, mean, var, gamma, beta], eps=eps)
        return
    c.emit(OpKind.BATCH_NORM, [c.ref(x), mean, var, gamma, beta], eps=eps)
