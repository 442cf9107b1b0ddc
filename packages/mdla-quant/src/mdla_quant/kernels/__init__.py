"""The int8 reference kernels: one module per op, registered in `INT8_KERNELS` by OpKind."""

from __future__ import annotations

from mdla_quant.kernels import (  # noqa: F401  (register kernels)
    a16_act,
    a16_conv,
    a16_ops,
    a16_softmax,
    adaptive_pool,
    add,
    argmax,
    batch_matmul,
    conv,
    depth_to_space,
    depthwise_conv,
    float_ops,
    fully_connected,
    functions,
    group_norm,
    hard_swish,
    lut,
    max_pool_3d,
    mean,
    movement,
    mul,
    pooling,
    prelu,
    relu,
    resize_bilinear,
    resize_nearest,
    select,
    softmax,
    strided_slice,
    transpose,
    transpose_conv,
)
from mdla_quant.kernels.registry import A16_KERNELS, INT8_KERNELS, Kernel

__all__ = ["A16_KERNELS", "INT8_KERNELS", "Kernel"]
