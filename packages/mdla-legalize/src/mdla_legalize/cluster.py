"""Order a placed graph's ops so that each device's ops run together: fewer partitions.

`mdla_ir.partitions` cuts a partition wherever the device changes in op order, and the
importer's order follows the model's Python: a detector head that runs its box and class
branches per level (conv, view, conv, view, ...) with the views on the CPU gives a partition per
level, where every NPU op could run first and every CPU op after, in one partition each.

`cluster(graph, cpu)` is a topological order that stays on one device while any op of that
device is ready (ties: the original order), starting on the device of the first op. Any
topological order computes the same values; the order with fewer device switches wins, so the
result never has more partitions than the input.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Sequence
from itertools import pairwise

from mdla_ir import Graph, Op


def cluster(graph: Graph, cpu: Collection[str]) -> Graph:
    """`graph` with its ops reordered to group `cpu` ops (names) and the others."""
    ops = graph.ops
    if not ops or not cpu:
        return graph
    on_cpu = [op.name in cpu for op in ops]
    order = _grouped_order(ops, on_cpu)
    if _switches([on_cpu[i] for i in order]) >= _switches(on_cpu):
        return graph
    return graph.with_(ops=tuple(ops[i] for i in order))


def _switches(devices: list[bool]) -> int:
    return sum(a != b for a, b in pairwise(devices))


def _grouped_order(ops: tuple[Op, ...], on_cpu: list[bool]) -> list[int]:
    producer = {t: i for i, op in enumerate(ops) for t in op.outputs}
    waits = [0] * len(ops)
    readers: list[list[int]] = [[] for _ in ops]
    for i, op in enumerate(ops):
        for src in {producer[t] for t in op.inputs if t in producer}:
            waits[i] += 1
            readers[src].append(i)
    ready: dict[bool, list[int]] = {False: [], True: []}
    for i, n in enumerate(waits):
        if n == 0:
            heapq.heappush(ready[on_cpu[i]], i)
    device, order = on_cpu[0], []
    while ready[False] or ready[True]:
        if not ready[device]:
            device = not device
        i = heapq.heappop(ready[device])
        order.append(i)
        for r in readers[i]:
            waits[r] -= 1
            if waits[r] == 0:
                heapq.heappush(ready[on_cpu[r]], r)
    return order


def grouped_switches(graph: Graph, on_cpu: Sequence[bool]) -> int:
    """The device switches of placing `on_cpu` (one flag per op): what `cluster` gives."""
    flags = list(on_cpu)
    if not any(flags):
        return 0
    grouped = [flags[i] for i in _grouped_order(graph.ops, flags)]
    return min(_switches(flags), _switches(grouped))
