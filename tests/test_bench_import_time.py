"""bench/import_time.py: a row times the three paths, says which auto took and splits the
export path into its stages, and the stage timers are taken off again."""

from __future__ import annotations

from pathlib import Path

import torch

from mdla_ir import importer
from mdla_ir.importer import exported
from tests.scripts import load_script

PATH = Path(__file__).resolve().parents[1] / "bench" / "import_time.py"


def test_a_row_times_the_paths_and_the_export_stages() -> None:
    bench = load_script("bench_import_time", PATH)
    before = (torch.export.export, exported.decompose, importer.import_program)
    cells = bench.row("lipnet_frontend", 1).split()
    name, fx, auto, ratio, path, whole, whole_ratio, export, decompose, mapped = cells
    assert name == "lipnet_frontend"
    assert float(fx) > 0
    assert float(auto) > 0
    assert float(whole) > 0
    assert ratio.endswith("x")
    assert whole_ratio.endswith("x")
    assert float(ratio[:-1]) > 0
    assert path == "fx"  # auto's fast path
    assert float(export) > 0
    assert float(decompose) == 0.0  # it maps as exported: no run_decompositions
    assert float(mapped) >= 0
    assert (torch.export.export, exported.decompose, importer.import_program) == before


def test_uncut_times_the_export_without_its_cuts_and_restores_them() -> None:
    """`--uncut`: one more column, the export import with torch's own per-node stack traces and
    eager recompiles; the importer's two cuts are back in place afterwards."""
    bench = load_script("bench_import_time", PATH)
    cuts = (exported.forward_lines, exported._use_lazy_graph_module)
    with bench._uncut():
        assert exported.forward_lines is not cuts[0]
        assert exported._use_lazy_graph_module is not cuts[1]
    cells = bench.row("lipnet_frontend", 1, uncut=True).split()
    assert len(cells) == 11
    assert float(cells[-1]) > 0
    assert (exported.forward_lines, exported._use_lazy_graph_module) == cuts
