"""The target writer on hand-made matrices (facts from roles), and the header patches."""

from __future__ import annotations

from pathlib import Path

import pytest

from mdla_ir.ops import OpKind
from mdla_runtime import load, save
from mdla_target import TargetDataError, load_target
from workbench.probe import Cell, Matrix, ProbeResult, catalogue, write_target
from workbench.probe.patch import patch_file

OK = Cell(True, True, True, True, latency_us=3.0)
NO = Cell(False, False, False, error="UNMAPPABLE")


def matrix(cells: dict[str, Cell], ops: tuple[str, ...]) -> Matrix:
    results = [
        ProbeResult(p, {"npu": cells.get(p.key, cells.get(p.role, OK))}) for p in catalogue(ops)
    ]
    return Matrix("lib:/x.so", "9.1.0", "2030-01-02", ("npu",), tuple(results))


def test_roles_become_facts(tmp_path: Path) -> None:
    m = matrix(
        {"free_output": NO, "rescale": NO, "unequal_scales": OK, "broadcast": NO},
        ("LOGISTIC", "PAD", "CONCATENATION", "MUL"),
    )
    t = load_target(write_target(m, tmp_path / "t.toml"))
    assert t.name == "t"
    assert t.op("npu", OpKind.LOGISTIC).fixed_output == (0.00390625, -128)
    assert t.op("npu", OpKind.PAD).keeps_input_scale
    assert not t.op("npu", OpKind.CONCATENATION).shared_scale
    assert not t.op("npu", OpKind.MUL).broadcast
    assert t.op("npu", OpKind.MUL).source == "probed on lib:/x.so npu, 2030-01-02, Neuron 9.1.0"


def test_padding_and_per_channel(tmp_path: Path) -> None:
    m = matrix(
        {"pad_symmetric": NO, "size_per_channel": NO, "CONV_2D/per-channel w": NO},
        ("CONV_2D", "MAX_POOL_2D", "FULLY_CONNECTED"),
    )
    t = load_target(write_target(m, tmp_path / "t.toml"))
    assert t.op("npu", OpKind.MAX_POOL_2D).padding == "same-valid"
    assert not t.op("npu", OpKind.CONV_2D).per_channel
    fc = t.op("npu", OpKind.FULLY_CONNECTED)
    assert not fc.per_channel
    assert "classifier-sized" in fc.source
    assert "TF-asymmetric" not in fc.source


def test_an_unsupported_op_carries_the_reason(tmp_path: Path) -> None:
    t = load_target(write_target(matrix({"base": NO}, ("SQRT", "POW")), tmp_path / "t.toml"))
    spec = t.op("npu", OpKind.SQRT)
    assert not spec.supported
    assert "getSupportedOperationsForDevices false" in spec.reason
    assert "UNMAPPABLE" in spec.reason
    text = (tmp_path / "t.toml").read_text()
    assert "#   POW: maps on no device (not an OpKind)" in text
    with pytest.raises(TargetDataError):
        load_target(tmp_path / "missing.toml")


def test_implicit_same_patch_rewrites_the_window(tmp_path: Path) -> None:
    probe = next(p for p in catalogue(["CONV_2D"]) if p.role == "same_form")
    model = probe.build()
    path = save(model.graph, tmp_path / "c.mdla")
    before = load(path).operations[0]
    assert model.patch is not None
    after = load(patch_file(path, model.patch))
    op = after.operations[0]
    assert len(op.inputs) == len(before.inputs) - 3  # 4 pads -> 1 padding code
    assert after.operands[op.inputs[3]].value == 1  # NEURON_PADDING_SAME
    assert after.model["probe_patched"] is True
