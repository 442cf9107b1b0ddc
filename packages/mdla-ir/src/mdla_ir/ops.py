"""The op vocabulary: one enum (`mdla_ir.kinds.OpKind`, members named as in the Neuron ABI where
Neuron has the op) and its named groups, derived from the op schema (`mdla_ir.schema`).

Ops that only exist before legalization (PyTorch-level constructs with no Neuron operation, such
as SILU or CONV_3D) use descriptive UPPER_CASE names and negative values, so a reader sees at a
glance which kinds a device graph may still contain.
"""

from __future__ import annotations

from mdla_ir.kinds import OpKind
from mdla_ir.schema import group

__all__ = ["ACTIVATIONS", "BINARY", "CONVS", "FUSABLE", "FUSE_CODES", "POOLS", "SPATIAL", "OpKind"]

# The op groups, derived from the schema's `groups` (mdla_ir/schema.py).
CONVS = group("conv")
POOLS = group("pool")
ACTIVATIONS = group("activation")
BINARY = group("binary")
# Ops whose kernel cares where the channel axis is (everything else takes explicit axes).
SPATIAL = group("spatial")
# Ops a fused activation (Neuron FuseCode) may be folded into.
FUSABLE = group("fusable")
# Fuse codes as the Neuron ABI numbers them.
FUSE_CODES = {"NONE": 0, "RELU": 1, "RELU1": 2, "RELU6": 3}
