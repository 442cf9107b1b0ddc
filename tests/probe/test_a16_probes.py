"""The 16x8 probes (int8 -> QUANTIZE -> the op on int16 -> QUANTIZE -> int8): the catalogue holds
them, the emulator maps them, and their cells become the target's `int16` facts (probed
bit-exact, or failed), QUANTIZE's int8 <-> int16 form's among them."""

from __future__ import annotations

from pathlib import Path

from mdla_ir.ops import OpKind
from mdla_runtime import open_target
from mdla_target import load_target
from tests.probe.test_targetfile import NO, matrix
from workbench.probe import Cell, catalogue, run_probes, write_target
from workbench.probe.targetfile import maps


def test_the_catalogue_holds_a_16x8_case_per_op() -> None:
    probes = [p for p in catalogue() if p.role == "int16"]
    assert {p.op for p in probes} >= {"CONV_2D", "DEPTHWISE_CONV_2D", "ADD", "MEAN"}
    for p in probes:
        g = p.build().graph
        op = next(o for o in g.ops if o.kind is OpKind[p.op])
        assert g.tensors[op.outputs[0]].dtype == "int16"
        assert g.tensors[g.inputs[0]].dtype == g.tensors[g.outputs[0]].dtype == "int8"


def test_the_emulator_maps_them_bit_exact() -> None:
    """mdla3.5 maps QUANTIZE's int8 <-> int16 form (assumed) and the emulator has the kernels."""
    m = run_probes(open_target("emu"), catalogue(["CONV_2D/16x8 case 0"]), ("mtk-mdla",), repeat=1)
    (result,) = m.results
    cell = result.cells["mtk-mdla"]
    assert maps(cell)
    assert cell.exact


def test_the_int16_probes_settle_quantizes_int16_form(tmp_path: Path) -> None:
    ops = ("CONV_2D", "ADD", "QUANTIZE")
    cells = {"ADD/16x8 case 0": NO, "QUANTIZE/float boundary": NO}
    ran = load_target(write_target(matrix(cells, ops), tmp_path / "a.toml"))
    spec = ran.op("npu", OpKind.QUANTIZE)
    assert not spec.supported  # its float <-> int8 form's own fact stays
    assert spec.maps(wide=True)
    assert "3 of 4 16x8 variants ran on npu alone" in spec.int16_source
    none = load_target(write_target(matrix({"int16": NO}, ("ADD",)), tmp_path / "n.toml"))
    spec = none.op("npu", OpKind.QUANTIZE)
    assert not spec.maps(wide=True)
    assert "no 16x8 variant ran on npu" in spec.int16_source
    int8 = load_target(write_target(matrix({}, ("RELU",)), tmp_path / "i.toml"))
    assert OpKind.QUANTIZE not in int8.device("npu").ops  # no int16 probe: nothing known


def test_cells_become_the_int16_facts(tmp_path: Path) -> None:
    ok = load_target(write_target(matrix({}, ("CONV_2D",)), tmp_path / "ok.toml"))
    spec = ok.op("npu", OpKind.CONV_2D)
    assert spec.int16
    assert spec.int16_source.endswith("16x8 variants map bit-exact")
    failed = matrix({"CONV_2D/16x8 case 1": NO}, ("CONV_2D",))
    spec = load_target(write_target(failed, tmp_path / "no.toml")).op("npu", OpKind.CONV_2D)
    assert spec.supported
    assert not spec.int16
    assert spec.int16_source.endswith("16x8 variants fail or differ")
    differs = matrix({"int16": Cell(True, True, True, exact=False)}, ("CONV_2D",))
    assert (
        not load_target(write_target(differs, tmp_path / "ne.toml")).op("npu", OpKind.CONV_2D).int16
    )
