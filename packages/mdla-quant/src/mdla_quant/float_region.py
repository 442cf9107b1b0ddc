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

A CONCATENATION on the CPU that makes a model output from a fixed-range op's values (LOGISTIC,
SOFTMAX, TANH: [0, 1) at scale 1/256) and other values (a detector's boxes in pixels beside its
class probabilities, YOLO's `cat((dbox, cls.sigmoid()), 1)`) is one too, CONCATENATION_F32: in
int8 its inputs would share one scale, the probabilities the pixels' (a step of 2 at 480 px),
or not fit the fixed one. Each input keeps its own int8 scale up to the DEQUANTIZE.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from mdla_ir import Graph, Op, OpKind, Tensor
from mdla_ir.partitions import CPU_FLOAT32
from mdla_quant.errors import QuantError

STARTS = CPU_FLOAT32 - {OpKind.DEQUANTIZE, OpKind.FULLY_CONNECTED_F32, OpKind.CONCATENATION_F32}
FOLLOWS = {OpKind.FULLY_CONNECTED: OpKind.FULLY_CONNECTED_F32}  # float32 input -> float kernel
FIXED_RANGE = {OpKind.LOGISTIC, OpKind.SOFTMAX, OpKind.TANH}  # int8 output params fixed
_KEEPS_VALUES = {OpKind.RESHAPE, OpKind.TRANSPOSE}


def float_concats(graph: Graph) -> set[str]:
    """The CONCATENATIONs that become CONCATENATION_F32 (see the module docstring): on the CPU,
    making a model output (or read only by such concatenations: YOLO's segmenter joins the
    detector's output and its mask coefficients), and joining a fixed-range op's values with
    others, or a float32 concatenation's."""
    cpu = set(graph.provenance.cpu_ops)
    readers: dict[str, list[Op]] = {}
    for op in graph.ops:
        for name in op.inputs:
            readers.setdefault(name, []).append(op)
    outer: set[str] = set()  # CPU concatenations whose values only end in model outputs
    for op in reversed(graph.ops):
        mine = readers.get(op.outputs[0], [])
        if (
            op.kind is OpKind.CONCATENATION
            and op.name in cpu
            and (op.outputs[0] in graph.outputs or mine)
            and all(r.name in outer for r in mine)
        ):
            outer.add(op.name)
    producer = {t: op for op in graph.ops for t in op.outputs}
    found: set[str] = set()
    for op in graph.ops:
        if op.name not in outer:
            continue
        origins = [producer.get(name) for name in op.inputs]
        fixed = [_origin(graph, producer, name) in FIXED_RANGE for name in op.inputs]
        if any(o is not None and o.name in found for o in origins) or (
            any(fixed) and not all(fixed)
        ):
            found.add(op.name)
    return found


def _origin(graph: Graph, producer: dict[str, Op], name: str) -> OpKind | None:
    """The kind of the op that computed `name`'s values (past reshapes, transposes and the
    MUL by 1 that requantizes a fixed-range op's values for a concatenation on the MDLA)."""
    op = producer.get(name)
    while op is not None and (op.kind in _KEEPS_VALUES or _times_one(graph, op)):
        op = producer.get(op.inputs[0])
    return None if op is None else op.kind


def _times_one(graph: Graph, op: Op) -> bool:
    if op.kind is not OpKind.MUL or len(op.inputs) != 2:
        return False
    data = graph.tensors[op.inputs[1]].data
    return data is not None and bool(np.all(np.asarray(data) == 1))


def float_tensors(graph: Graph) -> set[str]:
    """The activations a float region makes (op order is topological: one pass)."""
    floats: set[str] = set()
    concats = float_concats(graph)
    for op in graph.ops:
        if _region_op(graph, op, floats, concats):
            floats.update(op.outputs)
    return floats


def _region_op(fgraph: Graph, op: Op, floats: set[str], concats: set[str]) -> bool:
    # `op` may be the int8 graph's: a table the quantizer attached is not in the float graph
    acts = [n for n in op.inputs if n in fgraph.tensors and not fgraph.tensors[n].is_const]
    follows = op.kind in FOLLOWS and bool(acts) and acts[0] in floats
    return op.kind in STARTS or follows or op.name in concats


def _float_kind(op: Op) -> Op:
    if op.kind is OpKind.CONCATENATION:
        return op.with_(kind=OpKind.CONCATENATION_F32)
    return op.with_(
        kind=FOLLOWS.get(op.kind, op.kind), attrs={} if op.kind in FOLLOWS else op.attrs
    )


def with_float_regions(fgraph: Graph, qgraph: Graph) -> Graph:
    """`qgraph` (the int8 graph of the float `fgraph`) with its float regions in float32."""
    floats, concats = float_tensors(fgraph), float_concats(fgraph)
    if not floats:
        return qgraph
    cpu = set(qgraph.provenance.cpu_ops)
    tensors = dict(qgraph.tensors)
    ops: list[Op] = []
    dequantized: dict[str, str] = {}
    for op in qgraph.ops:
        if not _region_op(fgraph, op, floats, concats):
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
        ops.append(_float_kind(op).with_(inputs=tuple(inputs)))
    used = {n for op in ops for n in op.inputs} | set(qgraph.outputs) | set(qgraph.inputs)
    tensors = {n: t for n, t in tensors.items() if n in used or any(n in o.outputs for o in ops)}
    prov = dataclasses.replace(
        qgraph.provenance, cpu_ops=tuple(o.name for o in ops if o.name in cpu)
    )
    return qgraph.with_(tensors=tensors, ops=tuple(ops), provenance=prov)
