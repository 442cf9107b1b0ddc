"""The emulated latency of an int8 graph with int16 activations beside its all-int8 twin:
bench/accuracy.py's `emu ms` and `emu ×` columns for the a16 rows (issue 34's "emulated
latency cost of the chosen int16 tensors").

Both graphs are saved as .mdla manifests and run on the emulator target (mdla-engine on
libneuron_emu.so) in one process, interleaved: ROUNDS times the all-int8 one then the a16 one,
each run `repeat` (20) images after one untimed. Per manifest: the engine's median ms per image (the
least of its rounds' medians: wall time, which a loaded machine inflates), and the CPU the
engine processes used per image (`getrusage` of the children, the untimed image and the setup
included, the least of the rounds). The ratio is of the CPU figures: the one a shared machine
leaves comparable.
"""

from __future__ import annotations

import resource
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mdla_ir import Graph
from mdla_runtime import load, open_target, save

ROUNDS = 2


@dataclass(frozen=True, slots=True)
class Latency:
    """The a16 graph's emulated ms per image (wall, the engine's median) and CPU ms per image,
    and its CPU over the all-int8 graph's (`ratio`)."""

    ms: float
    cpu_ms: float
    ratio: float


def children_cpu_s() -> float:
    """User + system CPU seconds of this process's finished children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def emulated(
    a16: Graph,
    int8: Graph,
    x: np.ndarray[Any, Any],
    repeat: int = 20,
    target: Any = None,
    cpu: Callable[[], float] = children_cpu_s,
) -> Latency:
    """`a16`'s emulated latency beside `int8`'s on the input `x` (see the module docstring);
    `target` defaults to the emulator, `cpu` to the children's CPU clock."""
    emu = target if target is not None else open_target("emu")
    best: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="mdla-a16-emu-") as tmp:
        manifests = {
            name: load(save(graph, Path(tmp) / f"{name}.mdla"))
            for name, graph in (("int8", int8), ("a16", a16))
        }
        for _ in range(ROUNDS):
            for name, manifest in manifests.items():
                before = cpu()
                result = emu.run(manifest, x, repeat=repeat, warmup=1)
                per_image = (cpu() - before) * 1000 / (repeat + 1)
                old = best.get(name, (float("inf"), float("inf")))
                best[name] = (min(old[0], result.latency_ms[0]), min(old[1], per_image))
    ms, cpu_ms = best["a16"]
    return Latency(ms, cpu_ms, cpu_ms / max(best["int8"][1], 1e-9))
