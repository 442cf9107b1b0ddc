"""Float32 regions of CPU partitions: what the quantizer leaves in float32 (issue 17).

A GRU (`partitions.CPU_FLOAT32`) computes in float32 and writes a float32 tensor; a
FULLY_CONNECTED reading a float32 tensor does too, as FULLY_CONNECTED_F32 (the CPU's float
kernel: the int8 FC would need its input quantized again). Such ops form a float region:

    before (calibrated)                       after
    pool3 (int8) -> GRU -> FC -> logits      pool3 (int8) -> DEQUANTIZE -> pool3.f32 (float32)
                                              -> GRU -> gru (float32) -> FULLY_CONNECTED_F32
                                              -> logits (float32 model output)

Every int8 tensor a region op reads gets one DEQUANTIZE (`<tensor>.dequantize`, placed on the
CPU with its reader), the region's constants stay float32, and its outputs float32 with no
quantization. Exact by construction: DEQUANTIZE is the one affine map every int8 consumer
already applies, and the float ops read the values the float graph's ops would, up to it.
A float32 tensor read by an int8 op (it would need a QUANTIZE) is refused, as is a region op
the graph does not place on the CPU (no NPU computes in float32 here).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from mdla_ir import Graph, Op, OpKind, Tensor
from mdla_ir.partitions import CPU_FLOAT32
from mdla_quant.errors import QuantError

STARTS = CPU_FLOAT32 - {OpKind.DEQUANTIZE, OpKind.FULLY_CONNECTED_F32}  # GRU
FOLLOWS = {OpKind.FULLY_CONNECTED: OpKind.FULLY_CONNECTED_F32}  # float32 input -> float kernel


def float_tensors(graph: Graph) -> set[str]:
    """The activations a float region makes (op order is topological: one pass)."""
    floats: set[str] = set()
    for op in graph.ops:
        acts = [n for n in op.inputs if not graph.tensors[n].is_const]
        if op.kind in STARTS or (op.kind in FOLLOWS and acts and acts[0] in floats):
            floats.update(op.outputs)
    return floats


def _region_op(fgraph: Graph, op: Op, floats: set[str]) -> bool:
    acts = [n for n in op.inputs if not fgraph.tensors[n].is_const]
    return op.kind in STARTS or (op.kind in FOLLOWS and bool(acts) and acts[0] in floats)


def with_float_regions(fgraph: Graph, qgraph: Graph) -> Graph:
    """`qgraph` (the int8 graph of the float `fgraph`) with its float regions in float32."""
    floats = float_tensors(fgraph)
    if not floats:
        return qgraph
    cpu = set(qgraph.provenance.cpu_ops)
    tensors = dict(qgraph.tensors)
    ops: list[Op] = []
    dequantized: dict[str, str] = {}
    for op in qgraph.ops:
        if not _region_op(fgraph, op, floats):
            for name in op.inputs:
                if name in floats:
                    raise QuantError(
                        f"op `{op.name}` ({op.kind.name}) reads `{name}`, a float32 tensor of a "
                        "CPU float region: an int8 op after a float region needs a QUANTIZE, "
                        "which the CPU partitions do not have yet"
                    )
            ops.append(op)
            continue
        if op.name not in cpu:
            raise QuantError(
                f"op `{op.name}` ({op.kind.name}) computes in float32: only the CPU runs it; "
                f"place it there (--cpu {op.kind.name})"
            )
        if op.kind in FOLLOWS and op.fuse != "NONE":
            raise QuantError(f"op `{op.name}`: a float32 FULLY_CONNECTED fuses no activation")
        inputs = []
        for name in op.inputs:
            t = fgraph.tensors[name]
            if t.is_const:
                data = np.asarray(t.data, np.float32)
                tensors[name] = Tensor(name, t.shape, "float32", data=data)
            elif name not in floats and name not in dequantized:
                dq = f"{name}.dequantize"
                dequantized[name] = f"{name}.f32"
                tensors[dequantized[name]] = Tensor(dequantized[name], t.shape, "float32")
                ops.append(Op(OpKind.DEQUANTIZE, dq, (name,), (dequantized[name],)))
                cpu.add(dq)
            inputs.append(dequantized.get(name, name))
        for name in op.outputs:
            tensors[name] = Tensor(name, fgraph.tensors[name].shape, "float32")
        ops.append(op.with_(kind=FOLLOWS.get(op.kind, op.kind), inputs=tuple(inputs), attrs={}
                            if op.kind in FOLLOWS else op.attrs))  # fmt: skip
    used = {n for op in ops for n in op.inputs} | set(qgraph.outputs) | set(qgraph.inputs)
    tensors = {n: t for n, t in tensors.items() if n in used or any(n in o.outputs for o in ops)}
    prov = dataclasses.replace(
        qgraph.provenance, cpu_ops=tuple(o.name for o in ops if o.name in cpu)
    )
    return qgraph.with_(tensors=tensors, ops=tuple(ops), provenance=prov)
