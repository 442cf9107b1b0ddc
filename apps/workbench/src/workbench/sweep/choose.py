"""After a sweep: the Pareto plot written, and `--pick`'s configuration compiled again on the
driver into the `.mdla` (its bytes checked against the hash its row recorded)."""

from __future__ import annotations

import hashlib
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import mdla_compile
from workbench.errors import BAD_INPUT, USAGE, WorkbenchError
from workbench.sweep import pareto
from workbench.sweep.plot import pareto_png
from workbench.sweep.table import Row
from workbench.sweep.task import Job


def conditions(pick: str | None, out: Path | None) -> list[pareto.Condition]:
    """--pick parsed (before anything runs); it needs -o."""
    if pick is None:
        return []
    if out is None:
        raise WorkbenchError("--pick writes the chosen configuration: give -o FILE.mdla", USAGE)
    mdla_compile.check_output(out, ".mdla")
    try:
        return pareto.parse(pick)
    except pareto.PickError as exc:
        raise WorkbenchError(str(exc), USAGE) from exc


def write_plot(rows: Sequence[Row], path: Path, title: str) -> None:
    path.write_bytes(pareto_png(rows, title))
    sys.stderr.write(f"Pareto plot: {path}\n")


def write_pick(
    rows: Sequence[Row], jobs: Sequence[Job], wanted: Sequence[pareto.Condition], out: Path
) -> tuple[Row, str]:
    """The chosen row compiled into `out`, and why; none meeting `wanted`: exit 1 with the
    best achieved."""
    chosen, why = pareto.pick(rows, wanted)
    if chosen is None:
        raise WorkbenchError(why, BAD_INPUT)
    job = next(j for j in jobs if j.key == chosen.key)
    compiled = mdla_compile.compile(job.options)
    with tempfile.TemporaryDirectory(prefix="mdla-pick-") as tmp:
        compiled.save(Path(tmp) / "swept.mdla", store_float=False)  # as the task saved it
        digest = hashlib.sha256((Path(tmp) / "swept.mdla").read_bytes()).hexdigest()
    if digest != chosen.manifest_sha256:
        raise WorkbenchError(
            f"the picked configuration compiled again differs from its swept .mdla "
            f"({digest[:12]} != {chosen.manifest_sha256[:12]}): the spec, weights or "
            "calibration inputs changed since the sweep; run it again"
        )
    compiled.save(out)  # with the float graph, as `workbench compile` writes it
    return chosen, f"picked {why}; written to {out}"
