"""The probe on the host emulator: the probed target equals the built-in mdla3.5 data wherever
the emulator has a kernel, every int8 run is bit-exact, and the silicon facts show up."""

from __future__ import annotations

import datetime
from pathlib import Path

import numpy as np

from mdla_ir.ops import OpKind
from mdla_ir.schema import BY_CODE
from mdla_legalize import load_target
from mdla_quant import run_int8
from mdla_target.target import OpSpec
from tests.probe.conftest import DEVICES
from workbench.probe import MATH, Matrix, catalogue
from workbench.probe.targetfile import maps


def emulator_kinds() -> set[OpKind]:
    """The op kinds the emulator has an int8 kernel for (the schema's emu=True ops: its kernel
    table is generated from them, tests/runtime/test_emu_registry.py)."""
    names = {e.name for e in BY_CODE.values() if e.emu}
    assert len(names) >= 15, names
    return {OpKind[n] for n in names if n in OpKind.__members__}


def facts(spec: OpSpec) -> tuple[object, ...]:
    """The facts a probe measures (dtypes and device limits are not probed)."""
    if not spec.supported:
        return (False,)
    attrs = ("per_channel", "padding", "broadcast", "shared_scale", "keeps_input_scale")
    return (True, *(getattr(spec, a) for a in attrs), spec.fixed_output)


def test_probed_target_equals_builtin_where_the_emulator_computes(probed_file: Path) -> None:
    probed, builtin = load_target(probed_file), load_target("mdla3.5")
    kinds = emulator_kinds() & {OpKind[p.op] for p in catalogue() if p.op in OpKind.__members__}
    assert len(kinds) >= 18
    compared = 0
    for dev in DEVICES:
        for kind in sorted(kinds, key=lambda k: k.name):
            got, want = probed.op(dev, kind), builtin.op(dev, kind)
            assert facts(got) == facts(want), (dev, kind.name, got, want)
            compared += 1
    assert compared == len(kinds) * len(DEVICES)


def test_sources_name_the_target_date_and_version(probed_file: Path) -> None:
    probed = load_target(probed_file)
    today = datetime.date.today().isoformat()
    for dev in DEVICES:
        spec = probed.op(dev, OpKind.CONV_2D)
        assert spec.source.startswith(f"probed on emu {dev}, {today}, Neuron 8.2.24"), spec.source


def test_every_int8_run_is_bit_exact(emu_matrix: Matrix) -> None:
    checked = 0
    for r in emu_matrix.results:
        for dev, cell in r.cells.items():
            if cell.runs and cell.exact is not None:
                assert cell.exact, (r.probe.key, dev, cell)
                assert cell.mismatches == 0
                checked += 1
    assert checked >= 80  # most int8 probes have a reference and run on some device


def test_probe_outputs_are_not_degenerate(emu_matrix: Matrix) -> None:
    """Bit-exactness on a constant output would prove nothing: references must vary."""
    for probe in catalogue():
        if probe.op not in ("CONV_2D", "FULLY_CONNECTED", "MUL", "LOGISTIC", "SOFTMAX", "MEAN"):
            continue
        if probe.role == "accumulator":  # saturates by design (tests/probe/test_accumulator.py)
            continue
        model = probe.build()
        if not model.refs():
            continue
        codes = [
            np.random.default_rng(0).integers(-128, 128, model.graph.tensors[n].shape)
            for n in model.graph.inputs
        ]
        x = [
            (t.quant.scale[0] * (c - t.quant.zero_point[0])).astype(np.float32)
            for c, t in zip(
                codes, (model.graph.tensors[n] for n in model.graph.inputs), strict=True
            )
            if t.quant is not None
        ]
        out = run_int8(model.graph, x, raw=True)[0]
        assert len(np.unique(out)) >= min(6, out.size), (probe.key, np.unique(out))
        assert (out == 127).mean() < 0.2, probe.key
        assert (out == -128).mean() < 0.5, probe.key


def test_math_primitives_are_reported_per_device(emu_matrix: Matrix) -> None:
    for op in MATH:
        rows = emu_matrix.by_op(op)
        assert rows, op
        for r in rows:
            if r.skipped:  # LOG: the adapter marks it not available; the readers refuse it
                assert op == "LOG"
                assert "not available" in r.skipped
                continue
            assert set(r.cells) == set(DEVICES), op
            assert not maps(r.cells["mtk-mdla"]), op  # silicon fact 2: the rsqrt wall
            assert r.cells["mtk-mdla"].error == "UNMAPPABLE"


def test_same_padding_is_probed_as_tf_asymmetric(emu_matrix: Matrix) -> None:
    for op in ("CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D"):
        by_role = {r.probe.role: r for r in emu_matrix.by_op(op)}
        same = by_role["same_form"].cells["mtk-mdla"]
        assert same.runs
        assert same.exact
        assert same.matches == ("TF-asymmetric (extra pad after)",)  # not symmetric (fact 6)
        assert not maps(by_role["pad_symmetric"].cells["mtk-mdla"])
        assert maps(by_role["pad_same"].cells["mtk-mdla"])
        assert maps(by_role["pad_symmetric"].cells["mtk-gpu"])


def test_classifier_sized_fully_connected(emu_matrix: Matrix) -> None:
    by_variant = {r.probe.variant: r.cells for r in emu_matrix.by_op("FULLY_CONNECTED")}
    assert maps(by_variant["1280->1000"]["mtk-mdla"])
    assert not maps(by_variant["1280->1000 per-channel"]["mtk-mdla"])  # silicon fact 3
    assert maps(by_variant["1280->1000 per-channel"]["mtk-gpu"])
    assert by_variant["1280->1000"]["mtk-mdla"].latency_us is not None
