"""One failing probe never stops the rest, and an adapter that crashes is survived: the crash is
reported on its own cells, and the probes after it still run bit-exact."""

from __future__ import annotations

from pathlib import Path

import pytest

from mdla_emu.build import compile_c
from mdla_emu.emulator import INCLUDES, abi_sources, kernel_sources, load
from mdla_emu.targets import generate_targets
from mdla_runtime import open_target
from workbench.probe import Probe, ProbeResult, catalogue, run_probes

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def crash_lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The emulator with NeuronModel_addOperation replaced by one that segfaults on MUL."""
    gen = tmp_path_factory.mktemp("crash") / "emu_targets.c"
    gen.write_text(generate_targets(load("mdla3.5")))
    flags = ["-std=c11", "-O1", "-pthread", *(f"-I{d}" for d in INCLUDES)]
    flags.append("-DNeuronModel_addOperation=emu_real_addOperation")
    sources = [*kernel_sources(), *abi_sources(), gen, HERE / "crash_adapter.c"]
    return compile_c(sources, "libneuron_crash.so", shared=True, flags=flags, libs=["-lm"])


def test_a_crashing_adapter_costs_only_its_own_cells(crash_lib: Path) -> None:
    probes = [p for p in catalogue(["ADD", "MUL", "RELU"]) if p.role != "int16"]  # int8 only
    assert [p.op for p in probes] == ["ADD", "ADD", "MUL", "MUL", "RELU"]
    seen: list[str] = []
    matrix = run_probes(
        open_target(f"lib:{crash_lib}"),
        probes,
        ["mtk-mdla", "mtk-gpu"],
        repeat=1,
        progress=lambda k, n, r: seen.append(r.probe.key),
    )
    assert seen == [p.key for p in probes]  # progress after every probe, crash or not
    for r in matrix.results:
        for cell in r.cells.values():
            if r.probe.op == "MUL":
                assert cell.error.startswith("crashed: SIGSEGV"), cell
                assert not cell.runs
                assert cell.supported is None  # the support report crashed as well
            else:
                assert cell.runs, (r.probe.key, cell)
                assert cell.exact, (r.probe.key, cell)


def _boom() -> object:
    raise RuntimeError("a bug in one probe's builder")


def test_a_failing_probe_never_stops_the_rest() -> None:
    good = catalogue(["RELU", "MEAN"])
    broken = Probe("RELU", "broken", "base", _boom)  # type: ignore[arg-type]
    results: list[ProbeResult] = []
    matrix = run_probes(
        open_target("emu"),
        [good[0], broken, good[1]],
        ["mtk-mdla"],
        repeat=1,
        progress=lambda k, n, r: results.append(r),
    )
    assert [r.probe.variant for r in matrix.results] == ["int8", "broken", "int8"]
    assert matrix.results[1].skipped.startswith("probe failed: RuntimeError: a bug")
    assert matrix.results[1].cells == {}
    assert matrix.results[0].cells["mtk-mdla"].exact
    assert matrix.results[2].cells["mtk-mdla"].exact
    assert len(results) == 3


def test_an_unexpressible_probe_is_reported_not_sent() -> None:
    matrix = run_probes(open_target("emu"), catalogue(["LOG", "QUANTIZE"]), ["mtk-mdla"])
    assert [r.skipped.split(":")[0] for r in matrix.results] == ["not expressible"] * 2
    assert all(r.cells == {} for r in matrix.results)
