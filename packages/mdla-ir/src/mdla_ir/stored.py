"""A float graph stored as data: what `compile` writes beside a `.mdla` so that `run` has the
FP32 side of a model without importing it (no torch, no weights file, no code named by a file).

    blob = dumps(graph, bound_to=sha256_of_the_mdla)      # bytes (a .npz zip), for sidecar(mdla)
    dump(graph, bound_to, file)                          # the same bytes, written to a file
    graph, bound_to = loads(blob)                        # StoredGraphError on anything malformed
    mdla_ir.run_float(graph, [x])

The bytes are a `.npz` (numpy's zip of `.npy` arrays, read with pickles refused): `header` is
UTF-8 JSON, `c<k>` the data of the k-th constant. The header holds `format` (`FORMAT`),
`version` (`VERSION`), `bound_to` (the hex SHA-256 of the file the graph belongs to), the
graph's name, layout, inputs, outputs and boundary permutations, its tensors (name, shape,
dtype, constant index or -1) and its ops (kind by name, name, inputs, outputs, attributes as
the family record's fields). Ops' source lines and the provenance are not kept: running needs
neither. A constant's `.npy` header must give the shape and dtype its tensor records and hold
no more bytes than its member does, checked before numpy allocates it. The members may hold
`MAX_BYTES` together, a tensor `MAX_TENSOR_BYTES`, and the graph must verify (`mdla_ir.verify`:
every recorded shape is the one its op gives), so running it stays within those bounds.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from numpy.lib import format as npy

from mdla_ir.errors import IRError
from mdla_ir.graph import Graph, Op, Tensor
from mdla_ir.ops import OpKind
from mdla_ir.verify import verify

FORMAT = "mdla-float-graph"
VERSION = 1
SUFFIX = ".fp32"
MAX_BYTES = 1 << 30  # the members' sizes together (a .mdla's default tensor total, 1 GiB)
MAX_TENSOR_BYTES = 256 << 20  # one tensor, as float32 (a .mdla's default tensor limit)
DTYPES = ("float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool")


def sidecar(mdla: str | os.PathLike[str]) -> Path:
    """Where the float graph of the `.mdla` at `mdla` is stored: beside it, `NAME.mdla.fp32`."""
    path = Path(mdla)
    return path.with_name(path.name + SUFFIX)


class StoredGraphError(IRError):
    """A stored float graph that cannot be read: what is wrong, and where."""


def dumps(graph: Graph, bound_to: str) -> bytes:
    """`graph` (ops, tensors, constants) as `.npz` bytes tied to the file hashed `bound_to`."""
    buf = io.BytesIO()
    dump(graph, bound_to, buf)
    return buf.getvalue()


def dump(graph: Graph, bound_to: str, file: BinaryIO) -> None:
    """`dumps`' bytes written to `file` (binary, seekable) as they are made: a model's weights
    are not first gathered into one more copy in memory."""
    consts: dict[str, Any] = {}  # Any: savez's keywords are typed as its own options
    tensors = []
    for t in graph.tensors.values():
        k = -1
        if t.data is not None:
            k = len(consts)
            data = np.ascontiguousarray(t.data)  # in the shape the graph records: a rule's
            # scalar held as [1] (YOLOv8's div by 2 as a MUL by 0.5) is read back as its ()
            consts[f"c{k}"] = data.reshape(t.shape) if data.size == math.prod(t.shape) else data
        tensors.append({"name": t.name, "shape": list(t.shape), "dtype": t.dtype, "const": k})
    header = {
        "format": FORMAT,
        "version": VERSION,
        "bound_to": bound_to,
        "name": graph.name,
        "layout": graph.layout,
        "inputs": list(graph.inputs),
        "outputs": list(graph.outputs),
        "boundary": {k: list(v) for k, v in graph.boundary.items()},
        "tensors": tensors,
        "ops": [_op(op) for op in graph.ops],
    }
    text = np.frombuffer(json.dumps(header).encode(), np.uint8)
    np.savez(file, header=text, **consts)


def _op(op: Op) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    if dataclasses.is_dataclass(op.attrs):
        attrs = dataclasses.asdict(op.attrs)
    return {
        "kind": op.kind.name,
        "name": op.name,
        "inputs": list(op.inputs),
        "outputs": list(op.outputs),
        "attrs": attrs,
    }


def loads(blob: bytes) -> tuple[Graph, str]:
    """The graph in `blob` and the hash it is bound to (StoredGraphError when malformed)."""
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as z:
            held = sum(info.file_size for info in z.infolist())
            if held > MAX_BYTES:
                raise StoredGraphError(
                    f"stored float graph of {held >> 20} MiB: over the {MAX_BYTES >> 20} MiB "
                    "one may hold"
                )
            header = _header(z)
            graph = _graph(z, header)
    except StoredGraphError:
        raise
    except (zipfile.BadZipFile, OSError, ValueError, KeyError, TypeError, IRError) as exc:
        raise StoredGraphError(f"not a stored float graph: {' '.join(str(exc).split())}") from None
    _check(graph)
    return graph, str(header["bound_to"])


def _check(graph: Graph) -> None:
    """Every tensor within MAX_TENSOR_BYTES as float32, and the graph verified."""
    for t in graph.tensors.values():
        if math.prod(t.shape) * 4 > MAX_TENSOR_BYTES:
            raise StoredGraphError(
                f"tensor `{t.name}` of shape {list(t.shape)}: over the "
                f"{MAX_TENSOR_BYTES >> 20} MiB a stored graph's tensor may have"
            )
    try:
        verify(graph)
    except IRError as exc:
        raise StoredGraphError(f"the stored float graph does not verify: {exc}") from None


def _header(z: zipfile.ZipFile) -> dict[str, Any]:
    raw = _array(z, "header", None, "uint8")
    header = json.loads(raw.tobytes().decode())
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise StoredGraphError(f"not a stored float graph (no `{FORMAT}` header)")
    if header.get("version") != VERSION:
        raise StoredGraphError(
            f"stored float graph format {header.get('version')!r}; this mdla reads "
            f"{VERSION}: compile the model again to rewrite it"
        )
    return header


def _graph(z: zipfile.ZipFile, h: Mapping[str, Any]) -> Graph:
    tensors: dict[str, Tensor] = {}
    for t in h["tensors"]:
        shape = tuple(int(d) for d in t["shape"])
        if t["dtype"] not in DTYPES:
            raise StoredGraphError(
                f"tensor `{t['name']}`: dtype {t['dtype']!r} is not one of {DTYPES}"
            )
        data = _array(z, f"c{int(t['const'])}", shape, t["dtype"]) if t["const"] >= 0 else None
        tensors[str(t["name"])] = Tensor(str(t["name"]), shape, str(t["dtype"]), data)
    ops = []
    for o in h["ops"]:
        kind = OpKind.__members__.get(str(o["kind"]))
        if kind is None:
            raise StoredGraphError(f"op `{o['name']}`: unknown kind {o['kind']!r}")
        names = (*o["inputs"], *o["outputs"])
        missing = [n for n in names if n not in tensors]
        if missing:
            raise StoredGraphError(f"op `{o['name']}` uses unknown tensor(s) {missing}")
        ops.append(
            Op(kind, str(o["name"]), tuple(o["inputs"]), tuple(o["outputs"]), dict(o["attrs"]))
        )
    return Graph(
        name=str(h["name"]),
        tensors=tensors,
        ops=tuple(ops),
        inputs=tuple(h["inputs"]),
        outputs=tuple(h["outputs"]),
        layout=str(h["layout"]),
        boundary={str(k): tuple(int(d) for d in v) for k, v in h["boundary"].items()},
    )


def _array(
    z: zipfile.ZipFile, key: str, shape: tuple[int, ...] | None, dtype: str
) -> np.ndarray[Any, Any]:
    """Member `key`'s array, its `.npy` header checked first: `shape` (any, when None) and
    `dtype`, and no more bytes than the member holds."""
    info = z.getinfo(f"{key}.npy")
    with z.open(info) as f:
        version = npy.read_magic(f)
        if version not in ((1, 0), (2, 0)):
            raise StoredGraphError(f"array `{key}`: .npy version {version}")
        read = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
        got, fortran, dt = read(f)
        want = np.dtype(dtype)
        if dt != want or fortran or (shape is not None and tuple(got) != shape):
            raise StoredGraphError(
                f"array `{key}`: {list(got)} {dt}, the graph records {list(shape or got)} {want}"
            )
        size = math.prod(int(d) for d in got) * dt.itemsize
        if size > info.file_size - f.tell():
            raise StoredGraphError(f"array `{key}` claims {size} bytes; it holds fewer")
        data = f.read(size)
    return np.frombuffer(data, dt).reshape(got).copy()
