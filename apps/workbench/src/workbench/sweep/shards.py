"""`validate --dataset DIR` in shards: the model compiled once on the driver, its pickle and
each shard's files (as bytes: a Ray worker on another machine reads no driver path) sent to
workers, each shard validated there, and the parts merged into the one `Validation` an
unsharded run gives: per-image rows in the dataset's order, agreement over all images,
cosine and SQNR from summed products (equal up to the order of the float sums), the worst
layers from every tensor's summed statistics, latency from every run.

    parts = [run_shard(blob, shard) for shard in shards_of(files, 16)]   # or fanout's maps
    v = merge(parts)
"""

from __future__ import annotations

import pickle
import statistics
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mdla_compile
import mdla_runtime
from mdla_compile import inputs as ins
from mdla_quant.compare import TensorStats
from workbench import validation
from workbench.sweep.bundle import Files, read_files

ALL_LAYERS = 1 << 30  # a shard keeps every tensor's statistics; the merge picks the worst


@dataclass(frozen=True)
class Shard:
    index: int
    files: Files  # (name, bytes) in the dataset's order


def shards_of(files: Sequence[Path], size: int) -> list[Shard]:
    """`files` in consecutive shards of `size`."""
    return [
        Shard(i, read_files(list(files[start : start + size])))
        for i, start in enumerate(range(0, len(files), size))
    ]


def shared_of(compiled: mdla_compile.Compiled, model: str) -> bytes:
    """What every shard needs, pickled once: the compile and the model spec's name."""
    return pickle.dumps((compiled, model))


def run_shard(shared: bytes, shard: Shard) -> validation.Validation:
    """Validate one shard on the emulator (in a worker: the compile from `shared`)."""
    compiled, model = pickle.loads(shared)  # the driver's own pickle
    source = compiled.source
    prep = (lambda im: mdla_compile.prepare_image(source, im)) if source.takes_images else None
    keys = list(source.graph.inputs)
    with tempfile.TemporaryDirectory(prefix="workbench-shard-") as tmp:
        folder = Path(tmp)
        for name, data in shard.files:
            (folder / name).write_bytes(data)
        inputs = [
            (name, ins.load_sample(folder / name, source.input_shapes, prep, model, keys))
            for name, _ in shard.files
        ]
        manifest = compiled.save(folder / "model.mdla", store_float=False)
        target = mdla_runtime.open_target("emu")
        return validation.validate(compiled, inputs, target, manifest, worst=ALL_LAYERS)


def merge(parts: Sequence[validation.Validation], worst: int = 5) -> validation.Validation:
    """The shards' validations as one (parts in the dataset's order)."""
    out = validation.Validation(device=parts[0].device)
    for p in parts:
        out.rows += p.rows
    n = len(parts[0].outputs)
    out.outputs = [_merge_output([p.outputs[i] for p in parts]) for i in range(n)]
    latencies = [t for p in parts for t in p.latencies]
    if latencies:
        out.latency_ms = (float(statistics.median(latencies)), min(latencies))
        out.latencies = latencies
    out.worst = _merge_layers([p.worst for p in parts])[:worst]
    return out


def _merge_output(outs: Sequence[validation.OutputAgreement]) -> validation.OutputAgreement:
    merged = validation.OutputAgreement(outs[0].name, outs[0].shape, outs[0].kind)
    for o in outs:
        for key, a in o.values.items():
            total = merged.values.setdefault(key, validation.Agreement())
            total.dot, total.ff = total.dot + a.dot, total.ff + a.ff
            total.qq, total.err2 = total.qq + a.qq, total.err2 + a.err2
        for key, shares in o.shares.items():
            merged.shares.setdefault(key, []).extend(shares)
        for key, details in o.details.items():
            merged.details.setdefault(key, []).extend(details)
    return merged


def _merge_layers(layers: Sequence[Sequence[Any]]) -> list[TensorStats]:
    """Every tensor's statistics summed over the shards, worst SQNR first."""
    total: dict[str, TensorStats] = {}
    for stats in layers:
        for t in stats:
            have = total.setdefault(t.name, TensorStats(t.name, t.op, t.kind))
            have.dot, have.ff, have.qq = have.dot + t.dot, have.ff + t.ff, have.qq + t.qq
            have.err2, have.max_abs = have.err2 + t.err2, max(have.max_abs, t.max_abs)
    return sorted(total.values(), key=lambda t: t.sqnr_db)
