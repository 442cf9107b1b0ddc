"""The engine runs a manifest with its recorded rounding: model.rounding reaches the emulator
through its extension call (MdlaEmu_setRounding, never the environment), and an experiment's
MDLA_EMU_ROUNDING overrides it inside the emulator, with a note on stderr naming both."""

from __future__ import annotations

import ctypes
import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mdla_ir.builders import as_floats, random_codes, random_qgraph
from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from mdla_ir.provenance import QuantRecord
from mdla_quant import run_int8
from mdla_quant.reference import quantize_inputs
from mdla_runtime import load, open_target, save
from tests.runtime.test_emu_support import (
    BAD_DATA,
    BAD_STATE,
    NO_ERROR,
    UNEXPECTED_NULL,
    Compiled,
    device_array,
    emu,
    lower_single_op,
)

Array = np.ndarray[Any, Any]


def with_rounding(graph: Graph, rounding: str) -> Graph:
    prov = dataclasses.replace(graph.provenance, quant=QuantRecord(rounding=rounding))
    return graph.with_(provenance=prov)


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> tuple[Graph, list[Array]]:
    """A model-sized random CONV_2D that maps on mtk-mdla and on which single and double
    rounding disagree somewhere (small ones rarely do)."""
    target, tmp = open_target("emu"), tmp_path_factory.mktemp("rounding")
    for seed in range(20):
        rng = np.random.default_rng(seed)
        g = random_qgraph(OpKind.CONV_2D, rng, large=True)
        xs = as_floats(g, random_codes(g, rng))
        single = run_int8(g, xs, raw=True, rounding="single")[0]
        double = run_int8(g, xs, raw=True, rounding="double")[0]
        maps = target.supported(save(g, tmp / f"{seed}.mdla"))["mtk-mdla"] == [True]
        if maps and not np.array_equal(single, double):
            return g, xs
    pytest.fail("no seed in 0..19 gives a mappable CONV_2D where the roundings differ")


def run_on_emu(graph: Graph, xs: list[Array], path: Path) -> Array:
    manifest = load(save(graph, path))
    result = open_target("emu").run(manifest, xs)
    raw: Array = result.raw_outputs[0]
    return raw


@pytest.mark.parametrize("rounding", ["single", "double"])
def test_the_emulator_runs_the_recorded_rounding(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    case: tuple[Graph, list[Array]],
    rounding: str,
) -> None:
    monkeypatch.delenv("MDLA_EMU_ROUNDING", raising=False)
    g, xs = case
    graph = with_rounding(g, rounding)
    assert load(save(graph, tmp_path / "m.mdla")).rounding == rounding
    got = run_on_emu(graph, xs, tmp_path / "m.mdla")
    other = "double" if rounding == "single" else "single"
    assert np.array_equal(got, run_int8(graph, xs, raw=True)[0])  # the graph's own rounding
    assert np.array_equal(got, run_int8(g, xs, raw=True, rounding=rounding)[0])
    assert not np.array_equal(got, run_int8(g, xs, raw=True, rounding=other)[0])


def test_the_environment_overrides_the_manifest_and_says_so(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    case: tuple[Graph, list[Array]],
) -> None:
    g, xs = case
    monkeypatch.setenv("MDLA_EMU_ROUNDING", "double")
    got = run_on_emu(with_rounding(g, "single"), xs, tmp_path / "m.mdla")
    assert np.array_equal(got, run_int8(g, xs, raw=True, rounding="double")[0])
    err = capsys.readouterr().err
    # the emulator knows the manifest's rounding only if the engine handed it over the ABI
    assert "MDLA_EMU_ROUNDING=double overrides the compilation's rounding `single`" in err
    run_on_emu(with_rounding(g, "double"), xs, tmp_path / "d.mdla")  # agreeing: no note
    assert "overrides" not in capsys.readouterr().err


def _codes(g: Graph, xs: list[Array]) -> list[Array]:
    """The int8 inputs of single-op `g` in the order its Neuron model takes them."""
    by_name = quantize_inputs(g, xs)
    return [by_name[n] for n in lower_single_op(g)[1]]


def _compile_case(g: Graph, rounding: int | None) -> tuple[int, Compiled]:
    """`g` compiled for mtk-mdla with `rounding` set through the extension (None: not called),
    and what the call returns once the compilation is finished."""
    b, _ = lower_single_op(g)
    assert b.finish() == NO_ERROR
    lib, c = emu(), ctypes.c_void_p()
    rc = lib.NeuronCompilation_createForDevices(
        b.handle, device_array(["mtk-mdla"]), 1, ctypes.byref(c)
    )
    assert rc == NO_ERROR
    if rounding is not None:
        assert lib.MdlaEmu_setRounding(c, rounding) == NO_ERROR
    assert lib.NeuronCompilation_finish(c) == NO_ERROR
    return int(lib.MdlaEmu_setRounding(c, 0)), Compiled(c, [tuple(g.tensors[g.outputs[0]].shape)])


def test_the_extension_call_sets_the_rounding_without_the_environment(
    monkeypatch: pytest.MonkeyPatch, case: tuple[Graph, list[Array]]
) -> None:
    monkeypatch.delenv("MDLA_EMU_ROUNDING", raising=False)
    g, xs = case
    codes = _codes(g, xs)
    for rounding, name in [(None, "double"), (0, "double"), (1, "single")]:
        after_finish, comp = _compile_case(g, rounding)
        try:
            (got,) = comp.run(codes)
        finally:
            comp.free()
        assert after_finish == BAD_STATE  # the arithmetic is fixed at finish
        assert np.array_equal(got, run_int8(g, xs, raw=True, rounding=name)[0]), name
    assert emu().MdlaEmu_setRounding(None, 1) == UNEXPECTED_NULL


def test_the_extension_refuses_an_unknown_rounding(case: tuple[Graph, list[Array]]) -> None:
    b, _ = lower_single_op(case[0])
    assert b.finish() == NO_ERROR
    lib, c = emu(), ctypes.c_void_p()
    assert (
        lib.NeuronCompilation_createForDevices(
            b.handle, device_array(["mtk-mdla"]), 1, ctypes.byref(c)
        )
        == NO_ERROR
    )
    try:
        assert lib.MdlaEmu_setRounding(c, 2) == BAD_DATA
    finally:
        lib.NeuronCompilation_free(c)
        b.free()


def test_a_restored_network_keeps_its_rounding(
    monkeypatch: pytest.MonkeyPatch, case: tuple[Graph, list[Array]]
) -> None:
    """The compiled network records the rounding it was finished with (its header), so a
    restored compilation (mdla-engine --cache, LiteRT's dispatch) computes the same bits."""
    monkeypatch.delenv("MDLA_EMU_ROUNDING", raising=False)
    g, xs = case
    _, comp = _compile_case(g, 1)
    lib, size = emu(), ctypes.c_size_t()
    try:
        assert lib.NeuronCompilation_getCompiledNetworkSize(comp.handle, ctypes.byref(size)) == 0
        blob = ctypes.create_string_buffer(size.value)
        assert lib.NeuronCompilation_storeCompiledNetwork(comp.handle, blob, size.value) == 0
    finally:
        comp.free()
    model, restored = ctypes.c_void_p(), ctypes.c_void_p()
    rc = lib.NeuronModel_restoreFromCompiledNetwork(
        ctypes.byref(model), ctypes.byref(restored), blob, size.value
    )
    assert rc == NO_ERROR
    again = Compiled(restored, [tuple(g.tensors[g.outputs[0]].shape)])
    try:
        (got,) = again.run(_codes(g, xs))
    finally:
        again.free()
        lib.NeuronModel_free(model)
    assert np.array_equal(got, run_int8(g, xs, raw=True, rounding="single")[0])
