"""A sweep row's deterministic cost (`cost.traffic`) on the tiny model's legalized graph, and the
Pareto front and --pick ranking by it rather than by the host's noisy latency."""

from __future__ import annotations

import dataclasses

import mdla_compile
from mdla_compile import CompileOptions
from tests.workbench.conftest import TINY
from tests.workbench.test_sweep_pareto import row
from workbench.sweep import pareto
from workbench.sweep.cost import traffic
from workbench.sweep.table import Row

# Activations of the tiny graph: elements x (1 write + its readers), one byte each
#   x 3072 x 2, x.padded 3468 x 2, stem_1 2048 x 3 (the conv's output read by LOGISTIC and MUL),
#   stem_2.sigmoid, stem_2, block_1 2048 x 2 each, pool 8 x 2, fc.as_image 10 x 2, fc 10 x 1
INT8_BYTES = 6144 + 6936 + 6144 + 3 * 4096 + 16 + 20 + 10


def test_traffic_counts_each_activation_once_per_write_and_read_int16_twice() -> None:
    graph = mdla_compile.compile(CompileOptions(TINY, calib="random", count=1)).device_graph
    assert traffic(graph, ()) == {"act_bytes": INT8_BYTES, "macs16": 0}
    # stem_2 at 16 bits: its 4096 bytes moved twice; the depthwise conv reading it runs its
    # 16 x 16 x 8 outputs x 9 taps at 16x8
    assert traffic(graph, ("stem_2",)) == {"act_bytes": INT8_BYTES + 4096, "macs16": 2048 * 9}


def _with(r: Row, act_bytes: int) -> Row:
    return dataclasses.replace(r, act_bytes=act_bytes)


def test_the_front_and_pick_rank_by_traffic_not_by_the_host_latency() -> None:
    # the int8 configuration ran slower on a loaded host than the int16 one: latency is noise
    int8 = _with(row("int8", 0.97, 9.0, 10.0), 1000)
    wide = _with(row("wide", 0.99, 1.0, 10.0), 1500)
    worse = _with(row("worse", 0.96, 0.5, 10.0), 1000)
    rows = [int8, wide, worse]
    assert pareto.axis(rows) is pareto.TRAFFIC
    assert [r.key for r in pareto.front(rows)] == ["int8", "wide"]
    chosen, why = pareto.pick(rows, pareto.parse("agreement>=0.965"))
    assert chosen is int8
    assert "the cheapest (activation traffic, then compile time)" in why
    assert "0.001 MB moved" in why
    by_bytes, _ = pareto.pick(rows, pareto.parse("bytes<=1200, agreement>=0.97"))
    assert by_bytes is int8
    # an older table's rows (no traffic) fall back to the latency
    assert pareto.axis([row("old", 0.9, 1.0, 1.0), int8]) is pareto.LATENCY
