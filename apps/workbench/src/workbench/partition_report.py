"""What `workbench run` says about a partitioned manifest (issue 17): per partition, the device
that ran it and its time, so what ran where is never a guess (no silent fallback).

    entry |= run_fields(result)        # "partitions": [{device, ops, first_op, ms, min_ms}]
    for line in run_lines(results): print(line)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mdla_runtime import RunResult


def run_fields(result: RunResult) -> dict[str, Any]:
    """The JSON fields of one run: its partitions and which of them ran on an NPU device;
    nothing for an unpartitioned manifest (its one device is the run's `device`)."""
    if not result.partitions:
        return {}
    return {
        "partitions": [
            {
                "device": p.device,
                "ops": p.ops,
                "first_op": p.first_op,
                "ms": p.ms,
                "min_ms": p.min_ms,
            }
            for p in result.partitions
        ],
        "npu_partitions": list(result.npu_partitions),
    }


def run_lines(results: Sequence[dict[str, Any]]) -> list[str]:
    """One line per partition of the first run (ms median/min), then the total per device."""
    if not results or "partitions" not in results[0]:
        return []
    parts = results[0]["partitions"]
    lines = [f"{len(parts)} partitions ({results[0]['image']}):"]
    for k, p in enumerate(parts):
        lines.append(
            f"  partition {k:>3} on {p['device']:<9} {p['ops']:>4} op(s) from op {p['first_op']:<5}"
            f" {p['ms']:.3f}/{p['min_ms']:.3f} ms"
        )
    per_device: dict[str, float] = {}
    for p in parts:
        per_device[p["device"]] = per_device.get(p["device"], 0.0) + p["ms"]
    lines.append(
        "  per device: " + ", ".join(f"{d} {ms:.3f} ms" for d, ms in sorted(per_device.items()))
    )
    return lines


def npu_line(result: RunResult) -> str:
    """What a witness around a partitioned run covered: the partitions on the NPU (the APU's
    counter can only move for those) and the ones the engine ran on the CPU."""
    npu = result.npu_partitions
    cpu = [k for k in range(len(result.partitions)) if k not in npu]
    if not npu:
        return f"partitions: all {len(cpu)} on the cpu: nothing ran on the NPU"
    ms = sum(result.partitions[k].ms for k in npu)
    return (
        f"partitions on the NPU: {', '.join(map(str, npu))} of {len(result.partitions)} "
        f"({ms:.3f} ms median per run); on the cpu: {', '.join(map(str, cpu)) or 'none'}"
    )
