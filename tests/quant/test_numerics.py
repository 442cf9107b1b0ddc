"""The numerics record: quantize writes it from the graph's target, the int8 reference and
lowering read it, and a manifest's string rounding maps back onto it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import mdla_target
from mdla_ir import Accumulator, Numerics, OpKind, Rounding
from mdla_ir.builders import act, const, qp, single_op_qgraph
from mdla_ir.devices import DEFAULT_TARGET
from mdla_ir.graph import Graph
from mdla_ir.provenance import Provenance, QuantRecord
from mdla_ir.testing import GraphBuilder
from mdla_quant import QuantConfig, quantize, run_int8
from mdla_quant.errors import QuantError
from mdla_quant.quantize import for_graph
from mdla_quant.reference import graph_numerics
from mdla_runtime import load, save
from mdla_runtime.format.lower import lower


def _float_graph(target: str = "") -> Graph:
    b = GraphBuilder(layout="NHWC", seed=3)
    x = b.input("x", (1, 4, 4, 3))
    w, bias = b.const("w", (5, 3)), b.const("b", (5,))
    y = b.op(OpKind.FULLY_CONNECTED, [x, w, bias], fuse="RELU")
    g = b.build(y)
    return g.with_(provenance=Provenance(target=target))


def test_numerics_map_strings_and_refuse_others() -> None:
    n = Numerics("single", "wrap", "mdla3.5")  # type: ignore[arg-type]
    assert (n.rounding, n.accumulator) == (Rounding.SINGLE, Accumulator.WRAP)
    with pytest.raises(ValueError, match="rounding `nearest`"):
        Numerics("nearest")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="accumulator `clip`"):
        Numerics(Rounding.DOUBLE, "clip")  # type: ignore[arg-type]


def test_quantize_records_the_numerics_of_the_graphs_target() -> None:
    calib = [[np.random.default_rng(i).standard_normal((1, 4, 4, 3)).astype(np.float32)]
             for i in range(4)]  # fmt: skip
    q = quantize(_float_graph(DEFAULT_TARGET), calib, QuantConfig(rounding="single"))
    assert q.provenance.numerics == Numerics(Rounding.SINGLE, Accumulator.SATURATE, "mdla3.5")
    assert q.provenance.rounding is Rounding.SINGLE


def test_quantize_takes_the_legalized_target_and_refuses_another() -> None:
    graph = _float_graph("custom.toml")
    assert for_graph(graph, QuantConfig()).target == "custom.toml"  # the default gives way
    with pytest.raises(QuantError, match=r"legalized for target `custom\.toml`, QuantConfig"):
        for_graph(graph, QuantConfig(target="other.toml"))


def _mul(numerics: Numerics | None, quant_rounding: str = "double") -> Graph:
    # x * 0.25 lands on ties, where the two roundings differ (tests/quant/test_arith.py)
    g = single_op_qgraph(
        OpKind.MUL, [act("x", (1, 64), qp(0.5, 0)), act("y", (1, 64), qp(0.5, 0))],
        (1, 64), qp(1.0, 0),
    )  # fmt: skip
    record = QuantRecord(rounding=quant_rounding)
    return g.with_(provenance=Provenance(quant=record, numerics=numerics))


def test_the_reference_rounds_as_the_numerics_record_says() -> None:
    xs = [np.arange(-32, 32, dtype=np.float32).reshape(1, 64) * 0.5] * 2
    single = _mul(Numerics(Rounding.SINGLE, Accumulator.SATURATE, "mdla3.5"))
    want_single = run_int8(_mul(None), xs, raw=True, rounding="single")[0]
    want_double = run_int8(_mul(None), xs, raw=True, rounding="double")[0]
    assert not np.array_equal(want_single, want_double)  # the inputs tell the two apart
    np.testing.assert_array_equal(run_int8(single, xs, raw=True)[0], want_single)
    # a graph without the record (older) falls back to its QuantConfig's rounding
    assert graph_numerics(_mul(None, "single")).rounding is Rounding.SINGLE
    assert graph_numerics(_mul(None)).accumulator is Accumulator.SATURATE


def test_a_manifest_maps_its_rounding_string_onto_the_record(tmp_path: Path) -> None:
    g = _mul(Numerics(Rounding.SINGLE, Accumulator.SATURATE, DEFAULT_TARGET), "single")
    m = load(save(g.with_(provenance=dataclasses.replace(g.provenance, target=DEFAULT_TARGET)),
                  tmp_path / "m.mdla"))  # fmt: skip
    assert m.model["rounding"] == "single"
    assert m.provenance.numerics == Numerics(Rounding.SINGLE, Accumulator.SATURATE, "mdla3.5")
    assert m.rounding is Rounding.SINGLE


def _fc(bias_scale: float | None, per_channel: bool = False) -> Graph:
    w_q = qp([0.25, 0.5, 0.125], 0, 0) if per_channel else qp(0.25, 0)
    ins = [act("x", (1, 4), qp(0.5, 0)), const("w", np.ones((3, 4), np.int8), w_q)]
    if bias_scale is not None:
        ins.append(const("b", np.arange(3, dtype=np.int32), qp(bias_scale, 0)))
    return single_op_qgraph(OpKind.FULLY_CONNECTED, ins, (1, 3), qp(1.0, 0))


def _lowered_bias_scale(g: Graph) -> float:
    low = lower(g)
    (operation,) = low.operations
    return float(low.operands[operation["inputs"][2]]["scale"])


def test_lowering_writes_the_bias_scale_the_quantizer_recorded() -> None:
    # recorded 0.1 where s_in * s_w = 0.125: the recorded one is written
    assert _lowered_bias_scale(_fc(0.1)) == pytest.approx(float(np.float32(0.1)), abs=0)
    assert _lowered_bias_scale(_fc(None)) == 0.125  # a zero bias lowering adds: s_in * s_w
    assert _lowered_bias_scale(_fc(0.1, per_channel=True)) == 0.0  # the channels' scales


def test_a_target_file_is_the_graphs_target_when_it_names_it(tmp_path: Path) -> None:
    # legalize records a target by its name; the config may name the same target by its file
    shipped = Path(mdla_target.__file__).parent / "targets" / f"{DEFAULT_TARGET}.toml"
    mine = tmp_path / "mine.toml"
    mine.write_text(shipped.read_text().replace(f'name = "{DEFAULT_TARGET}"', 'name = "mine"', 1))
    config = QuantConfig(target=str(mine))
    assert for_graph(_float_graph("mine"), config) is config
    with pytest.raises(QuantError, match="legalized for target `other`"):
        for_graph(_float_graph("other"), config)
