"""The 16x8 probes (int8 -> QUANTIZE -> the op on int16 -> QUANTIZE -> int8): the catalogue holds
them, the emulator (no 16x8 kernels yet) does not map them, and their cells become the target's
`int16` facts: probed bit-exact, or failed."""

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


def test_the_emulator_does_not_map_them_yet() -> None:
    m = run_probes(open_target("emu"), catalogue(["CONV_2D/16x8 case 0"]), ("mtk-mdla",), repeat=1)
    (result,) = m.results
    assert not maps(result.cells["mtk-mdla"])


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
