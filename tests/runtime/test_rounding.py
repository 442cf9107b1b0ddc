"""The engine runs a manifest with its recorded rounding (model.rounding -> MDLA_EMU_ROUNDING for
the emulator), and an explicit MDLA_EMU_ROUNDING overrides it with a note on stderr."""

from __future__ import annotations

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
from mdla_runtime import load, open_target, save

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
    assert "MDLA_EMU_ROUNDING=double overrides the manifest's rounding `single`" in err
    run_on_emu(with_rounding(g, "double"), xs, tmp_path / "d.mdla")  # agreeing: no note
    assert "overrides" not in capsys.readouterr().err
