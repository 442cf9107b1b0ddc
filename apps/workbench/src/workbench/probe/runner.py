"""Run probes on a target: per device, what the support report says, whether the model compiles
(createForDevices + finish) and runs, its latency, and whether the output equals the int8
reference bit for bit.

Isolation: every step is its own `mdla-engine` process (on this machine, or on the phone for an
SSH target), so an adapter that crashes takes down one engine process, never the probe run: the
signal is reported in the cell ("crashed: SIGSEGV") and the next probe starts afresh. Any other
failure of one probe (a builder bug, a timeout) is caught and reported on that probe's row.
"""

from __future__ import annotations

import dataclasses
import datetime
import signal
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mdla_ir.builders import as_floats, random_codes
from mdla_quant.reference import run_int8
from mdla_runtime.engine.target import Target
from mdla_runtime.errors import LoweringError, ManifestError, TargetError
from mdla_runtime.format.manifest import load, save
from workbench.probe.model import (
    Cell,
    Matrix,
    NotExpressibleError,
    Probe,
    ProbeModel,
    ProbeResult,
)
from workbench.probe.patch import patch_file
from workbench.probe.windows import rng_for

Array = np.ndarray[Any, Any]
Progress = Callable[[int, int, ProbeResult], None]


def describe(exc: TargetError) -> str:
    """The Neuron result name, or the signal that killed the engine, or the message."""
    code = exc.exit_code
    if code is not None and code < 0:
        try:
            return f"crashed: {signal.Signals(-code).name}"
        except ValueError:
            return f"crashed: signal {-code}"
    stage = "".join(str(exc).split(": ")[1:2])
    if exc.result and stage and stage != "compile":
        return f"{exc.result} in {stage}"
    return exc.result or str(exc).splitlines()[0][:120]


def target_info(target: Target) -> tuple[list[str], str]:
    """The adapter's devices and Neuron version ("?" when it does not say)."""
    info = target.info()
    return [str(d) for d in info.get("devices", [])], str(info.get("version") or "?")


def _write(model: ProbeModel, folder: Path, key: str) -> Path:
    path = folder / (key.replace("/", "_").replace(" ", "_").replace(">", "") + ".mdla")
    try:
        save(model.graph, path)
        load(path)  # the readers' checks (e.g. codes the adapter marks "not available")
        if model.patch is not None:
            patch_file(path, model.patch)
    except (LoweringError, ManifestError) as exc:
        raise NotExpressibleError(f"the .mdla readers refuse it: {exc}") from exc
    return path


def _compare(out: Array, refs: dict[str, Array]) -> tuple[bool | None, int, int, tuple[str, ...]]:
    """(exact vs the first reference, mismatches, largest |difference|, all equal references)."""
    if not refs:
        return None, 0, 0, ()
    matches = tuple(n for n, r in refs.items() if r.shape == out.shape and np.array_equal(r, out))
    first = next(iter(refs.values()))
    if first.shape != out.shape:
        return False, int(out.size), 255, matches
    diff = np.abs(first.astype(np.int32) - out.astype(np.int32))
    return bool(not diff.any()), int(np.count_nonzero(diff)), int(diff.max(initial=0)), matches


def _run_on(
    target: Target,
    path: Path,
    inputs: list[Array],
    device: str,
    supported: bool | None,
    refs: dict[str, Array],
    repeat: int,
) -> Cell:
    try:
        result = target.run(path, inputs, devices=(device,), repeat=repeat)
    except TargetError as exc:
        stage = str(exc).split(": ")[1:2]
        compiled = True if stage == ["run"] else False if stage == ["compile"] else None
        return Cell(supported, compiles=compiled, runs=False, error=describe(exc))
    exact, bad, worst, matches = _compare(result.raw_outputs[0], refs)
    return Cell(
        supported,
        compiles=True,
        runs=True,
        exact=exact,
        mismatches=bad,
        max_diff=worst,
        latency_us=round(result.latency_ms[0] * 1000.0, 1),
        matches=matches,
    )


def run_probe(
    target: Target, probe: Probe, devices: Sequence[str], folder: Path, repeat: int = 3
) -> ProbeResult:
    """One probe on every device; never raises for a device's or the probe's own failure."""
    try:
        model = probe.build()
        path = _write(model, folder, probe.key)
        codes = random_codes(model.graph, rng_for(probe.key))
        inputs = as_floats(model.graph, codes)
        refs = {
            n: run_int8(g, inputs, raw=True, accumulator=model.accumulator(n))[0]
            for n, g in model.refs().items()
        }
    except NotExpressibleError as exc:
        return ProbeResult(probe, {}, f"not expressible: {exc}")
    except Exception as exc:  # a broken probe is one bad row, not a stopped run
        return ProbeResult(probe, {}, f"probe failed: {type(exc).__name__}: {exc}")
    try:
        report = target.supported(path, devices)
        support: dict[str, bool | None] = {d: all(report.get(d, [False])) for d in devices}
        support_error = ""
    except TargetError as exc:
        support, support_error = dict.fromkeys(devices), describe(exc)
    cells: dict[str, Cell] = {}
    for dev in devices:
        try:
            cell = _run_on(target, path, inputs, dev, support[dev], refs, repeat)
        except Exception as exc:  # e.g. a timeout of the engine process
            cell = Cell(support[dev], error=f"{type(exc).__name__}: {exc}"[:120])
        if support_error and not cell.error:
            cell = dataclasses.replace(cell, error=f"support report {support_error}")
        cells[dev] = cell
    return ProbeResult(probe, cells)


def run_probes(
    target: Target,
    probes: Iterable[Probe],
    devices: Sequence[str],
    repeat: int = 3,
    progress: Progress | None = None,
) -> Matrix:
    """Every probe on every device (in order); `progress(done, total, result)` after each."""
    _, version = target_info(target)
    todo = list(probes)
    results: list[ProbeResult] = []
    with tempfile.TemporaryDirectory(prefix="mdla-probe-") as tmp:
        for k, probe in enumerate(todo):
            results.append(run_probe(target, probe, devices, Path(tmp), repeat))
            if progress is not None:
                progress(k + 1, len(todo), results[-1])
    date = datetime.date.today().isoformat()
    return Matrix(target.name, version, date, tuple(devices), tuple(results))
