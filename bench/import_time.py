"""Import time of the bar models: torch.fx, auto (the default) and torch.export, CPU time.

    .venv/bin/python bench/import_time.py [--repeat 3] [--models a,b] [--uncut]

One row per model: the best of `--repeat` imports on each path (process CPU time, so other
jobs on the machine inflate wall time, not these figures): `--import fx`, `--import auto` and
its ratio to fx, the path auto took (fx where fx traces, maps and has no in-place hazard), and
`--import export` and its ratio to fx; then where the export path's time goes:
`torch.export.export`, `run_decompositions`, and mapping the ATen graph (plus the passes both
paths run). The machine's load average is printed with the table.
`--uncut` adds a column: the export import with its two cuts undone (torch's whole stack trace
per node instead of `importer/lines.py`'s one frame, and a recompile of the graph module after
each of export's passes instead of a lazy one), timed beside the others.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]  # lipread.py
if str(ROOT) not in sys.path:  # the bar models are loaded as the tests load them
    sys.path.insert(1, str(ROOT))

import torch  # noqa: E402

from mdla_ir import importer  # noqa: E402
from mdla_ir.importer import exported, import_torch  # noqa: E402
from tests.models import MODELS, load  # noqa: E402

STAGES = ("export", "decompose", "map")  # of the export import
_PATCHED = (  # (stage, module, function): wherever the importer calls it by that name
    ("export", torch.export, "export"),
    ("decompose", exported, "decompose"),
    ("map", exported, "import_program"),
    ("map", importer, "import_program"),
)


def _best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


class _Stages:
    """CPU seconds of the export path's stages, measured by wrapping them once."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(STAGES, 0.0)
        self._saved: dict[str, Any] = {}

    def _timed(self, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[stage] += time.process_time() - start

        return run

    def __enter__(self) -> _Stages:
        for stage, owner, attr in _PATCHED:
            self._saved[f"{owner.__name__}.{attr}"] = getattr(owner, attr)
            setattr(owner, attr, self._timed(stage, getattr(owner, attr)))
        return self

    def __exit__(self, *exc: object) -> None:
        for _, owner, attr in _PATCHED:
            setattr(owner, attr, self._saved[f"{owner.__name__}.{attr}"])


CUTS = ("forward_lines", "_use_lazy_graph_module")  # exported.py's names for the two cuts


@contextmanager
def _uncut() -> Iterator[None]:
    """The export path as it was before its two cuts (see the module docstring)."""
    saved = {name: getattr(exported, name) for name in CUTS}
    undone = {"forward_lines": nullcontext, "_use_lazy_graph_module": lambda _: nullcontext()}
    for name in CUTS:
        setattr(exported, name, undone[name])
    try:
        yield
    finally:
        for name in CUTS:
            setattr(exported, name, saved[name])


def row(spec: str, repeat: int, uncut: bool = False) -> str:
    model = load(spec, frames=4)
    args = (model.module, model.example_inputs)

    def imp(path: str) -> Callable[[], Any]:
        return lambda: import_torch(*args, name=spec, path=path)

    def imp_uncut() -> Any:
        with _uncut():
            return imp("export")()

    imp("export")()  # warm: first-call costs (torch.export's lazy imports, dynamo's caches)
    fx = _best(imp("fx"), repeat)
    auto = _best(imp("auto"), repeat)
    export = _best(imp("export"), repeat)
    extra = f"  {_best(imp_uncut, repeat):7.2f}" if uncut else ""
    used = import_torch(*args, name=spec, path="auto")
    with _Stages() as stages:
        import_torch(*args, name=spec, path="export")
    parts = "  ".join(f"{stages.seconds[s]:6.2f}" for s in STAGES)
    return (
        f"{spec:20} {fx:7.2f} {auto:7.2f} {auto / fx:6.2f}x  {used.path:6} "
        f"{export:7.2f} {export / fx:6.2f}x  {parts}{extra}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--uncut", action="store_true", help="also time export uncut")
    opts = parser.parse_args()
    torch.set_num_threads(1)
    print(f"load average at start: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print("CPU seconds, best of", opts.repeat, "(torch threads: 1)")
    head = "  ".join(f"{s:>6}" for s in STAGES)
    uncut = f"  {'uncut':>7}" if opts.uncut else ""
    ratios = f"{'auto':>7} {'/fx':>7}  {'path':6} {'export':>7} {'/fx':>7}"
    print(f"{'model':20} {'fx':>7} {ratios}  {head}{uncut}")
    for spec in opts.models.split(","):
        print(row(spec, opts.repeat, opts.uncut), flush=True)
    print(f"load average at end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
