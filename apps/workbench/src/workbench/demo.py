"""`make demo` (`python -m workbench.demo`): the whole pipeline on a real ImageNet model.

Compiles efficientnet_lite0 (real weights) calibrated on the scikit-image sample photos, runs
it on the host emulator forced onto mtk-mdla, and prints FP32 vs INT8 labels per photo, the ops
the device maps, latency and the witness verdict on the emulator's own runtime-PM counter.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

import mdla_compile
import mdla_ir
import mdla_runtime
from workbench import witnessing
from workbench.errors import exit_code, one_line
from workbench.images import SAMPLES, top_k

MODEL = "efficientnet_lite0"


def run_demo(con: Console, idle_s: float = 4.0, repeat: int = 20) -> bool:
    """Print the demo; True when the emulator run was witnessed on its counter."""
    start = time.perf_counter()
    con.print(
        f"[bold]1. compile[/] {MODEL} (real ImageNet weights), calibrated on {len(SAMPLES)} "
        "sample photos"
    )
    options = mdla_compile.CompileOptions(MODEL, calib="samples", count=len(SAMPLES))
    compiled = mdla_compile.compile(options)
    src = compiled.source
    con.print(
        f"   imported {len(src.graph.ops)} ops -> device graph "
        f"{len(compiled.device_graph.ops)} ops, int8 ({time.perf_counter() - start:.0f} s)"
    )
    target = mdla_runtime.open_target("emu")
    with tempfile.TemporaryDirectory(prefix="workbench-demo-") as tmp:
        manifest = compiled.save(Path(tmp) / f"{MODEL}.mdla")
        size = Path(tmp, f"{MODEL}.mdla").stat().st_size
        ok, total = mdla_compile.support_count(target, manifest)
        con.print(
            f"[bold]2. emulator[/]: {size / 1e6:.1f} MB manifest, ops on mtk-mdla {ok}/{total}"
        )
        table = Table(title="FP32 (PyTorch graph, float) vs INT8 (emulator, mtk-mdla)")
        for col in ("photo", "FP32 top-1", "INT8 top-1", "same"):
            table.add_column(col)
        same, photos = 0, list(SAMPLES)
        for (x,), name in zip(compiled.calibration, photos, strict=True):
            (fp32,) = mdla_ir.run_float(src.graph, [x])
            dev = target.run(manifest, [x]).outputs[0]
            (_, f_lab, f_p), (_, q_lab, q_p) = (
                top_k(fp32, src.labels, 1)[0],
                top_k(dev, src.labels, 1)[0],
            )
            same += f_lab == q_lab
            table.add_row(
                name, f"{f_lab} {f_p:.2f}", f"{q_lab} {q_p:.2f}", "yes" if f_lab == q_lab else "NO"
            )
        con.print(table)
        con.print(f"   top-1 agreement {same}/{len(photos)}")
        xs = compiled.calibration[0]
        with witnessing.emulator_counter() as node:
            counter = witnessing.counter_for(target, node)
            w = witnessing.witness_runs(
                target, counter, lambda: target.run(manifest, xs, repeat=repeat), idle_s
            )
    lat = w.run_result.latency_ms if w.run_result is not None else (float("nan"),) * 2
    con.print(
        f"[bold]3. latency[/] on emu/{w.run_result.device if w.run_result else '?'}: "
        f"{lat[0]:.1f} ms median, {lat[1]:.1f} ms min over {repeat} runs "
        "(the host emulator's time, not the phone's)"
    )
    con.print(f"[bold]4. witness[/] on {counter.what}:")
    for line in str(w).splitlines():
        con.print(f"   {line}", markup=False)
    con.print(f"done in {time.perf_counter() - start:.0f} s")
    return w.witnessed


def main() -> None:
    con = Console(highlight=False)
    try:
        ok = run_demo(con)
    except Exception as exc:
        code = exit_code(exc)
        if code is None:
            raise
        sys.stderr.write(f"error: {one_line(exc)}\n")
        sys.exit(code)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
