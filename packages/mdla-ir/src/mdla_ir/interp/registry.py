"""The float kernel table: one function per op kind, registered with `@kernel(KIND, ...)`.

A kernel takes the op, its input arrays (constants included, in op input order) and the graph
layout, and returns its output arrays. Spatial kernels compute in NHWC; `to_nhwc`/`from_nhwc`
adapt NCHW graphs (and their PyTorch-layout filters) at the kernel boundary.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mdla_ir.graph import Op
from mdla_ir.ops import OpKind

Array = np.ndarray[Any, Any]
Kernel = Callable[[Op, Sequence[Array], str], list[Array]]
KERNELS: dict[OpKind, Kernel] = {}


def kernel(*kinds: OpKind) -> Callable[[Kernel], Kernel]:
    def register(fn: Kernel) -> Kernel:
        for kind in kinds:
            KERNELS[kind] = fn
        return fn

    return register


def to_nhwc(x: Array, layout: str) -> Array:
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)) if layout == "NCHW" else x


def from_nhwc(x: Array, layout: str) -> Array:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if layout == "NCHW" else x


def apply_fuse(x: Array, fuse: str, in_place: bool = False) -> Array:
    """Neuron fused activations: NONE, RELU (max(x,0)), RELU1 (clip -1..1), RELU6 (clip 0..6).

    `in_place` (for an x the kernel just made and owns) writes the same values into x."""
    out = x if in_place else None
    if fuse == "RELU":
        return np.maximum(x, 0, out=out)
    if fuse == "RELU6":
        return np.clip(x, 0, 6, out=out)
    if fuse == "RELU1":
        return np.clip(x, -1, 1, out=out)
    return x
