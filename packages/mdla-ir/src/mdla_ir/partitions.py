"""Partitions: the ops of a placed graph grouped by the device that runs them (issue 17).

A graph is placed when `provenance.cpu_ops` names the ops the user put on the host CPU
(`workbench compile --cpu`, chosen by `mdla_legalize.place`); every other op runs on
`provenance.device` (the NPU, forced: no fallback). `partitions(graph)` walks the ops in their
(topological) order and starts a new partition whenever the device changes, so

    #  kind               device      partition
    0  DEPTHWISE_CONV_2D  mtk-mdla    0  (npu)    in: x            out: dw
    1  LAYER_NORM         cpu         1  (cpu)    in: dw           out: norm
    2  FULLY_CONNECTED    cpu         1
    3  ADD                mtk-mdla    2  (npu)    in: x, norm      out: add

gives three partitions and two device switches. A partition's `inputs` are the activations it
reads that something else made (a graph input or an earlier partition's op), its `outputs` the
activations it makes that a later partition reads or the graph returns: exactly the tensors
that cross a boundary. Consecutive grouping in op order can never create a cycle between
partitions (every boundary tensor flows from a lower partition index to a higher one), which
`check_partitions` proves for partitions read from elsewhere (a manifest).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mdla_ir.devices import NPU
from mdla_ir.errors import IRError
from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from mdla_ir.schema import group

CPU = "cpu"  # the device name of the host CPU (the engine's own C kernels)
K = OpKind
# What a CPU partition runs (the schema's `cpu*` groups, mdla_ir.schema). In int8, with the
# int8 reference kernels (mdla_quant.run_int8, bit for bit the emulator's C kernels):
CPU_INT8 = group("cpu")
# Only in float32 (no int8 form, or one the MDLA lacks the functions for): int8 in, DEQUANTIZE,
# the float32 kernel (mdla_quant.kernels.float_ops), QUANTIZE to the calibrated int8 output.
CPU_FLOAT = group("cpu_float")
# Float32 in and float32 out: a float region of a CPU partition (a recurrent tail), entered
# by a DEQUANTIZE the quantizer inserts; float32 tensors flow between these ops and may be
# model outputs (mdla_quant.kernels.gru defines them to the last bit). A FULLY_CONNECTED that
# reads a float32 tensor becomes FULLY_CONNECTED_F32 when quantizing.
CPU_FLOAT32 = group("cpu_float32")
CPU_KINDS = CPU_INT8 | CPU_FLOAT | CPU_FLOAT32


class PartitionError(IRError):
    """Partitions that do not describe the graph; `partition` is the offending index."""

    def __init__(self, message: str, partition: int | None = None) -> None:
        super().__init__(message)
        self.partition = partition


@dataclass(frozen=True, slots=True)
class Partition:
    """Ops `first` .. `first + len(ops) - 1` of the graph, all on `device`."""

    index: int
    device: str
    first: int
    ops: tuple[str, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]

    @property
    def on_cpu(self) -> bool:
        return self.device == CPU


def devices(graph: Graph) -> tuple[str, ...]:
    """The device of each op, in op order (the graph's device where nothing is placed)."""
    cpu = set(graph.provenance.cpu_ops)
    npu = graph.provenance.device or NPU
    return tuple(CPU if op.name in cpu else npu for op in graph.ops)


def partitions(graph: Graph) -> list[Partition]:
    """Consecutive ops on one device, in op order, with the tensors crossing each boundary."""
    unknown = set(graph.provenance.cpu_ops) - {op.name for op in graph.ops}
    if unknown:
        raise PartitionError(
            f"graph `{graph.name}`: provenance places op(s) {sorted(unknown)} on the CPU, "
            "but the graph has no such op"
        )
    groups: list[tuple[str, list[int]]] = []
    for i, dev in enumerate(devices(graph)):
        if groups and groups[-1][0] == dev:
            groups[-1][1].append(i)
        else:
            groups.append((dev, [i]))
    part_of: dict[str, int] = {}  # activation -> the partition that makes it
    for p, (_, idx) in enumerate(groups):
        for i in idx:
            for name in graph.ops[i].outputs:
                part_of[name] = p
    reads: dict[int, list[str]] = {}
    read_later: set[str] = set(graph.outputs)
    for p, (_, idx) in enumerate(groups):
        seen: list[str] = []
        for i in idx:
            for name in graph.ops[i].inputs:
                if graph.tensors[name].is_const or name in seen:
                    continue
                if part_of.get(name, -1) != p:
                    seen.append(name)
                    read_later.add(name)
        reads[p] = seen
    result = []
    for p, (dev, idx) in enumerate(groups):
        made = [n for i in idx for n in graph.ops[i].outputs]
        outs = tuple(n for n in made if n in read_later)
        names = tuple(graph.ops[i].name for i in idx)
        result.append(Partition(p, dev, idx[0], names, tuple(reads[p]), outs))
    return result


def switches(parts: Sequence[Partition]) -> int:
    """Device switches of one inference: one per boundary between consecutive partitions."""
    return max(len(parts) - 1, 0)


def check_partitions(
    graph: Graph, parts: Sequence[tuple[str, Sequence[str], Sequence[str], Sequence[str]]]
) -> None:
    """Partitions given as (device, op names, inputs, outputs), e.g. read from a manifest, must
    describe `graph`: every op in exactly one partition, every named tensor present, each input
    made by an earlier partition or a graph input (else a cycle or a missing producer), and each
    tensor a later partition reads listed among its maker's outputs. PartitionError otherwise."""
    op_index = {op.name: i for i, op in enumerate(graph.ops)}
    owner: dict[str, int] = {}
    maker: dict[str, int] = {}
    for p, (_, ops, _, _) in enumerate(parts):
        for name in ops:
            if name not in op_index:
                raise PartitionError(f"partition {p}: op `{name}` is not in the graph", p)
            if name in owner:
                raise PartitionError(
                    f"partition {p}: op `{name}` is already in partition {owner[name]}", p
                )
            owner[name] = p
            for out in graph.ops[op_index[name]].outputs:
                maker[out] = p
    missing = [op.name for op in graph.ops if op.name not in owner]
    if missing:
        raise PartitionError(f"op(s) {missing} are in no partition")
    for p, (_, ops, ins, outs) in enumerate(parts):
        for name in (*ins, *outs):
            if name not in graph.tensors:
                raise PartitionError(f"partition {p}: tensor `{name}` is not in the graph", p)
        for name in ins:
            src = maker.get(name)
            if src is None and name not in graph.inputs:
                raise PartitionError(f"partition {p}: input `{name}` is made by no op", p)
            if src is not None and src >= p:
                raise PartitionError(
                    f"partition {p}: input `{name}` comes from partition {src}, which does not "
                    "run before it (a cycle between partitions)",
                    p,
                )
            if src is not None and name not in parts[src][3]:
                raise PartitionError(
                    f"partition {p}: input `{name}` is not an output of partition {src}", p
                )
        for op_name in ops:
            for name in graph.ops[op_index[op_name]].inputs:
                crosses = name in graph.inputs or maker.get(name, p) != p
                if crosses and not graph.tensors[name].is_const and name not in ins:
                    raise PartitionError(
                        f"partition {p}: op `{op_name}` reads `{name}` from outside the "
                        "partition, but the partition's inputs do not list it",
                        p,
                    )
