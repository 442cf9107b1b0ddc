"""The dilated-conv probes (dilation 2 and an ASPP-like 6 on an 8x8 map): on the emulator they
map and are bit-exact with run_int8, and their cells become the target's `dilation` facts."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mdla_ir.ops import OpKind
from mdla_quant import run_int8
from mdla_runtime import open_target
from mdla_target import load_target
from tests.probe.test_targetfile import NO, matrix
from workbench.probe import Cell, catalogue, run_probes, write_target
from workbench.probe.targetfile import maps

KEYS = [f"{k}/3x3 dilation {d}" for k in ("CONV_2D", "DEPTHWISE_CONV_2D") for d in (2, 6)]


def test_the_catalogue_holds_dilated_convs() -> None:
    probes = [p for p in catalogue() if p.role == "dilation"]
    assert [p.key for p in probes] == KEYS
    for p in probes:
        g = p.build().graph
        (op,) = g.ops
        d = op.attrs.dilation[0]
        assert op.kind is OpKind[p.op]
        assert tuple(op.attrs.dilation) == (d, d)
        assert d > 1
        assert tuple(op.attrs.padding) == (d,) * 4
        assert g.tensors[g.outputs[0]].shape[1:3] == g.tensors[g.inputs[0]].shape[1:3]


def test_on_the_emulator_they_map_bit_exact() -> None:
    m = run_probes(open_target("emu"), catalogue(KEYS), ("mtk-mdla",), repeat=1)
    assert [r.probe.key for r in m.results] == KEYS
    for r in m.results:
        cell = r.cells["mtk-mdla"]
        assert maps(cell), (r.probe.key, cell)
        assert cell.exact, (r.probe.key, cell)
        g = r.probe.build().graph
        rng = np.random.default_rng(0)
        x = rng.uniform(-6, 6, g.tensors[g.inputs[0]].shape).astype(np.float32)
        (y,) = run_int8(g, [x], raw=True)
        assert len(np.unique(y)) > 20  # the output spreads over int8 (not a saturated probe)


def test_cells_become_the_dilation_facts(tmp_path: Path) -> None:
    ok = load_target(write_target(matrix({}, ("CONV_2D",)), tmp_path / "ok.toml"))
    spec = ok.op("npu", OpKind.CONV_2D)
    assert spec.dilation
    assert spec.dilation_source.startswith("probed on lib:/x.so npu")
    assert spec.dilation_source.endswith("dilated variants map bit-exact")
    failed = matrix({"CONV_2D/3x3 dilation 6": NO}, ("CONV_2D",))
    spec = load_target(write_target(failed, tmp_path / "no.toml")).op("npu", OpKind.CONV_2D)
    assert spec.supported
    assert not spec.dilation
    assert spec.dilation_source.endswith("dilated variants fail or differ")
    differs = matrix({"dilation": Cell(True, True, True, exact=False)}, ("CONV_2D",))
    spec = load_target(write_target(differs, tmp_path / "ne.toml")).op("npu", OpKind.CONV_2D)
    assert not spec.dilation
    unprobed = matrix({}, ("MAX_POOL_2D",))
    pool = load_target(write_target(unprobed, tmp_path / "p.toml")).op("npu", OpKind.MAX_POOL_2D)
    assert pool.dilation
    assert pool.dilation_source == ""
