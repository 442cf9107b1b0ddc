"""`save(qgraph, path)` and `load(path) -> Manifest`: the .mdla file (layout in `container.py`).

Header schema (msgpack; unknown keys are errors, so a typo never passes silently):

    operands[i]   {type, dims, [name], [scale, zero_point], [channel_dim, scales] (per-channel),
                   [data: [offset, length]] (constants), [value] (INT32/FLOAT32/BOOL scalars)}
    operations[i] {code (Neuron), inputs: [operand...], outputs: [operand...], [name] (source op)}
    inputs/outputs[i] {operand, name, scale, zero_point, layout "NHWC", shape (device),
                   perm (model layout -> device layout, [] = identity), model_shape}
    model         the graph's Provenance under a fixed key list (`format/model.py`)
    partitions[p] {device, operations: [operation...], inputs: [operand...], outputs:
                   [operand...]} (format 3): run in list order, each on its device (`cpu`: the
                   engine's own kernels); inputs/outputs are the operands crossing a boundary,
                   int8 with their scale and zero point (`mdla_ir.partitions`). A format-2 file
                   reads as one partition of every operation on the model's device.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack  # type: ignore[import-untyped]
import numpy as np

from mdla_ir.devices import NPU
from mdla_ir.graph import Graph
from mdla_ir.partitions import partitions
from mdla_ir.provenance import Provenance, Rounding
from mdla_runtime.atomic import write_atomic
from mdla_runtime.errors import ManifestError
from mdla_runtime.format import c_reader
from mdla_runtime.format import container as fmt
from mdla_runtime.format.budget import DEFAULT, Budget
from mdla_runtime.format.lower import lower
from mdla_runtime.format.model import model_section, provenance
from mdla_runtime.format.validate import validate

Array = np.ndarray[Any, Any]


@dataclass(frozen=True, slots=True)
class Operand:
    type: int
    dims: tuple[int, ...]
    name: str = ""
    scale: float = 0.0
    zero_point: int = 0
    channel_dim: int | None = None
    scales: tuple[float, ...] = ()
    data: Array | None = None
    value: int | float | bool | None = None

    @property
    def type_name(self) -> str:
        return fmt.TYPE_NAMES[self.type]


@dataclass(frozen=True, slots=True)
class Operation:
    code: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    name: str = ""


@dataclass(frozen=True, slots=True)
class IOSpec:
    """The int8 I/O contract of one model input or output."""

    operand: int
    name: str
    scale: float
    zero_point: int
    layout: str
    shape: tuple[int, ...]
    perm: tuple[int, ...]
    model_shape: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PartitionSpec:
    """Operations (indices, run in ascending order) on one device, and the operands crossing
    into (`inputs`) and out of (`outputs`) it."""

    device: str
    operations: tuple[int, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]

    @property
    def on_cpu(self) -> bool:
        return self.device == fmt.CPU_DEVICE


@dataclass(frozen=True, slots=True)
class Manifest:
    model: Mapping[str, Any]
    operands: tuple[Operand, ...]
    operations: tuple[Operation, ...]
    inputs: tuple[IOSpec, ...]
    outputs: tuple[IOSpec, ...]
    data_size: int
    path: Path | None = None
    partitions: tuple[PartitionSpec, ...] = ()
    version: int = fmt.FORMAT_VERSION

    @property
    def name(self) -> str:
        return str(self.model.get("name", ""))

    @property
    def provenance(self) -> Provenance:
        """The compile record of the model section, typed (labels, preprocess, rounding...)."""
        return provenance(self.model)

    @property
    def rounding(self) -> Rounding:
        """The requantization rounding the engine runs this manifest with."""
        return self.provenance.rounding


def _io(graph: Graph, name: str, operand: int) -> dict[str, Any]:
    t = graph.tensors[name]
    q = t.quant
    return {
        "operand": operand,
        "name": name,
        "scale": float(q.scale[0]) if q else 0.0,
        "zero_point": int(q.zero_point[0]) if q else 0,
        "layout": graph.layout,
        "shape": [int(d) for d in t.shape],
        "perm": [int(p) for p in graph.boundary.get(name, ())],
        "model_shape": [int(d) for d in graph.model_shape(name)],
    }


def to_bytes(graph: Graph) -> bytes:
    """The .mdla file of `graph` (an int8 NHWC qgraph) as bytes."""
    return _encode(graph)[0]


def written(graph: Graph, path: Path | None = None) -> tuple[bytes, Manifest]:
    """The .mdla bytes of `graph` and their `Manifest` (what `parse` of them returns), built
    from the writer's own header instead of decoding it back. The bytes pass the C reader
    (`c_reader.check`; this package's validation when there is no C compiler) with every check
    but the budget, which guards readers against hostile files: a model over it compiles, and
    `run` names the flag that raises the limit. A `ManifestError` names `path`."""
    try:
        blob, header, data_start = _encode(graph)
        if not c_reader.check(blob, Budget.UNLIMITED):
            validate(blob, Budget.UNLIMITED)
    except ManifestError as exc:
        if path is not None:
            exc.in_file(path)
        raise
    return blob, _manifest(header, memoryview(blob)[data_start:], path, fmt.FORMAT_VERSION)


def _encode(graph: Graph) -> tuple[bytes, dict[str, Any], int]:
    """(the file's bytes, its header as written, where its data section starts)."""
    low = lower(graph)
    data, cursor = bytearray(), 0
    for idx, blob in low.blobs:
        cursor = fmt.align(cursor)
        data += bytes(cursor - len(data)) + blob
        low.operands[idx]["data"] = [cursor, len(blob)]
        cursor += len(blob)
    body = {"operands": low.operands, "operations": low.operations}
    body["partitions"] = _partitions(graph, low.index)
    content = hashlib.sha256(msgpack.packb(body) + bytes(data)).hexdigest()
    header = {
        "model": model_section(graph.name, graph.provenance, content),
        **body,
        "inputs": [_io(graph, n, low.index[n]) for n in graph.inputs],
        "outputs": [_io(graph, n, low.index[n]) for n in graph.outputs],
        "data_size": len(data),
    }
    packed: bytes = msgpack.packb(header, use_bin_type=True)
    pre = fmt.MAGIC + struct.pack("<IQ", fmt.FORMAT_VERSION, len(packed))
    pad = fmt.align(fmt.PREAMBLE + len(packed)) - fmt.PREAMBLE - len(packed)
    return pre + packed + bytes(pad) + bytes(data), header, fmt.PREAMBLE + len(packed) + pad


def _partitions(graph: Graph, index: Mapping[str, int]) -> list[dict[str, Any]]:
    """The header's partitions: one per run of consecutive ops on one device (operation i is
    op i of the graph: `lower` emits one per op, in order)."""
    return [
        {
            "device": p.device,
            "operations": list(range(p.first, p.first + len(p.ops))),
            "inputs": [index[n] for n in p.inputs],
            "outputs": [index[n] for n in p.outputs],
        }
        for p in partitions(graph)
    ]


def save(graph: Graph, path: str | os.PathLike[str]) -> Path:
    """Write `graph` to `path` atomically (a temp file in the same directory, then rename)."""
    return write_atomic(path, to_bytes(graph))


def _operand(entry: Mapping[str, Any], data: memoryview) -> Operand:
    arr = None
    if "data" in entry:
        off, length = entry["data"]
        dtype = "<i4" if entry["type"] == fmt.TENSOR_INT32 else np.int8
        if entry["type"] in (fmt.TENSOR_FLOAT32,):
            dtype = "<f4"
        arr = np.frombuffer(data[off : off + length], dtype=dtype).reshape(entry["dims"])
    return Operand(
        type=entry["type"],
        dims=tuple(entry["dims"]),
        name=entry.get("name", ""),
        scale=float(entry.get("scale", 0.0)),
        zero_point=int(entry.get("zero_point", 0)),
        channel_dim=entry.get("channel_dim"),
        scales=tuple(entry.get("scales", ())),
        data=arr,
        value=entry.get("value"),
    )


def _spec(entry: Mapping[str, Any], operands: list[dict[str, Any]]) -> IOSpec:
    shape = tuple(entry.get("shape", operands[entry["operand"]]["dims"]))
    return IOSpec(
        operand=entry["operand"],
        name=entry.get("name", ""),
        scale=float(entry.get("scale", 0.0)),
        zero_point=int(entry.get("zero_point", 0)),
        layout=entry.get("layout", "NHWC"),
        shape=shape,
        perm=tuple(entry.get("perm", ())),
        model_shape=tuple(entry.get("model_shape", shape)),
    )


def _partition_specs(header: Mapping[str, Any]) -> tuple[PartitionSpec, ...]:
    if "partitions" in header:
        return tuple(
            PartitionSpec(
                e["device"], tuple(e["operations"]), tuple(e["inputs"]), tuple(e["outputs"])
            )
            for e in header["partitions"]
        )
    quant = header["model"].get("quant") or {}  # format 2: one partition, every operation
    return (
        PartitionSpec(
            str(quant.get("device", NPU)),
            tuple(range(len(header["operations"]))),
            tuple(e["operand"] for e in header["inputs"]),
            tuple(e["operand"] for e in header["outputs"]),
        ),
    )


def parse(buf: bytes, path: Path | None = None, budget: Budget = DEFAULT) -> Manifest:
    """Validate and decode a whole .mdla file; raises a `ManifestError` subclass on any flaw
    (its message starts with `path` when one is given)."""
    try:
        header, data_start = validate(buf, budget)
    except ManifestError as exc:
        if path is not None:
            exc.in_file(path)
        raise
    version = int.from_bytes(buf[8:12], "little")
    return _manifest(header, memoryview(buf)[data_start:], path, version)


def _manifest(
    header: Mapping[str, Any], data: memoryview, path: Path | None, version: int
) -> Manifest:
    return Manifest(
        model=header["model"],
        operands=tuple(_operand(e, data) for e in header["operands"]),
        operations=tuple(
            Operation(e["code"], tuple(e["inputs"]), tuple(e["outputs"]), e.get("name", ""))
            for e in header["operations"]
        ),
        inputs=tuple(_spec(e, header["operands"]) for e in header["inputs"]),
        outputs=tuple(_spec(e, header["operands"]) for e in header["outputs"]),
        data_size=header["data_size"],
        path=path,
        partitions=_partition_specs(header),
        version=version,
    )


def load(path: str | os.PathLike[str], budget: Budget = DEFAULT) -> Manifest:
    """The manifest at `path`, validated within `budget` (`ManifestError` names the file)."""
    p = Path(path)
    return parse(p.read_bytes(), p, budget)
