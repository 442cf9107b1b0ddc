"""A configuration's cost from its graph alone, the same on every machine and under any load
(the host's emulated latency is neither): the activation bytes one inference moves and the
multiply-accumulates that run 16x8, both from the cost model `--a16 auto` chooses with
(`mdla_quant.precision.tensor_costs`).

    traffic(compiled.device_graph, compiled.config.a16)    # {"act_bytes": ..., "macs16": ...}

act_bytes   each activation written once and read by each op reading it, one byte a value,
            two for the tensors held in int16
macs16      the MACs of the weighted ops reading an int16 tensor
"""

from __future__ import annotations

from collections.abc import Collection

from mdla_ir import Graph
from mdla_quant.precision import tensor_costs


def traffic(graph: Graph, a16: Collection[str]) -> dict[str, int]:
    """The row's cost columns for `graph` quantized with `a16` held in int16."""
    costs = tensor_costs(graph).values()
    wide = set(a16)
    moved = sum(c.bytes * (2 if c.tensor in wide else 1) for c in costs)
    return {"act_bytes": moved, "macs16": sum(c.macs for c in costs if c.tensor in wide)}
