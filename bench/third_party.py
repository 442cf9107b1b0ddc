"""Third-party models as users bring them (tests/models_third_party.py: timm,
segmentation_models_pytorch, ultralytics, torchvision with `--wide`; random weights): one row each,

    model | path | verdict | partitions | bit-exact | s | message

- path: the importer that imported it (`export` where torch.export captured and mapped it,
  else `fx`; `--path fx` or `export` tries one only); `-` when it did not import;
- verdict: `maps` (import + legalize: every op on mtk-mdla), `maps with --cpu KINDS` (the op
  kinds that do not map, named with `--cpu`, place: NPU + CPU partitions), or the stage that
  refuses it (`trace`: neither torch.export nor torch.fx captures it, `import`: a construct the
  importer cannot represent on the path that captured it, `legalize`: an op neither the MDLA
  nor the CPU runs, `internal error`: a crash);
- bit-exact (`--exact`): the model compiled as `workbench compile --cpu auto` does (two random
  calibration inputs), its `.mdla` run on the host emulator and compared with
  `mdla_quant.run_int8` on a third random input: `yes` when every output is equal byte for byte,
  `NO` when one differs, `error` (and the message) when compiling or running failed; `-` when
  it did not map or `--exact` was not given;
- message: the first line of the refusal and its first item (for a `--cpu` verdict: none).

    .venv/bin/python bench/coverage.py --third-party                 # every model, input 128
    .venv/bin/python bench/coverage.py --third-party --exact         # and the bit-exact column
    .venv/bin/python bench/coverage.py --third-party timm:dla34       # some of them
    .venv/bin/python bench/coverage.py --third-party --path fx       # torch.fx only
    .venv/bin/python bench/coverage.py --third-party --wide --exact  # the wider set (WIDE)
"""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the builders live in the `tests` package
    sys.path.insert(1, str(ROOT))

import mdla_compile  # noqa: E402
import mdla_ir  # noqa: E402
import mdla_legalize  # noqa: E402
from mdla_compile import CompileOptions  # noqa: E402
from mdla_ir import IRError, UnsupportedError  # noqa: E402
from mdla_ir.importer import import_torch  # noqa: E402
from mdla_legalize import LegalizeError  # noqa: E402
from mdla_quant import run_int8  # noqa: E402
from mdla_runtime import open_target  # noqa: E402
from mdla_zoo import Model  # noqa: E402
from tests.models_third_party import MODELS, WIDE, build  # noqa: E402

HEADER = (
    "| model (input) | path | verdict | partitions | bit-exact | s | message |\n"
    "|---|---|---|---|---|---|---|"
)


@dataclass
class Verdict:
    name: str
    side: int
    verdict: str
    path: str = "-"
    partitions: int | None = None
    message: str = ""
    seconds: float = 0.0
    exact: str = "-"


def _first(exc: Exception) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    text = lines[0] if len(lines) < 2 else f"{lines[0]} {lines[1]}"
    return text[:300]


def judge(name: str, side: int = 128, path: str = "auto", exact: bool = False) -> Verdict:
    """Import, legalize, and if ops do not map, place the kinds that do not on the CPU; with
    `exact`, compile a model that maps and hold its emulator run to run_int8."""
    start = time.perf_counter()
    module, example = build(name, side)
    side = int(example[0].shape[-1])
    row = Verdict(name, side, "")
    try:
        imported = import_torch(module, example, name.split(":")[1].replace("/", "_"), path=path)
    except UnsupportedError as exc:
        row.verdict, row.message = "import", _first(exc)
    except IRError as exc:
        message = str(exc)  # `trace`: no tracer captured it (export, when tried, refused)
        untraced = "torch.fx cannot trace" in message and "torch.export captured" not in message
        row.verdict = "trace" if untraced else "import"
        row.message = _first(exc)
    else:
        row.path = imported.path
        try:
            _legalize(imported.graph, row)
        except Exception as exc:  # a crash is a row too: the stage's internal error
            row.verdict, row.message = "internal error", f"{type(exc).__name__}: {_first(exc)}"
    if exact and row.verdict.startswith("maps"):
        try:
            module, example = build(name, side)  # fresh: a traced module may cache fake tensors
            row.exact = "yes" if emulated_equals_int8(name, module, example, path) else "NO"
        except Exception as exc:  # a failed compile or run is the cell's verdict, not a crash
            row.exact, row.message = "error", f"{type(exc).__name__}: {_first(exc)}"
    row.seconds = time.perf_counter() - start
    return row


def emulated_equals_int8(
    name: str, module: torch.nn.Module, example: tuple[torch.Tensor, ...], path: str
) -> bool:
    """`workbench compile --cpu auto` of the model (two random calibration inputs), its `.mdla`
    on the emulator against run_int8 on a third input: every output equal byte for byte."""
    rng = np.random.default_rng(0)
    shape = tuple(example[0].shape)
    calib = [[rng.uniform(0, 1, shape).astype(np.float32)] for _ in range(2)]
    model = Model(name.split(":")[1].replace("/", "_"), module, example, preprocess=None)
    options = CompileOptions(model, calib=calib, count=2, cpu=("auto",), import_path=path)
    compiled = mdla_compile.compile(options)
    x = [rng.uniform(0, 1, shape).astype(np.float32)]
    want = run_int8(compiled.qgraph, x, raw=True)
    with tempfile.TemporaryDirectory() as tmp:
        manifest = compiled.save(Path(tmp) / "model.mdla", store_float=False)
        got = open_target("emu").run(manifest, x).raw_outputs
    return len(got) == len(want) and all(
        np.array_equal(np.asarray(g).reshape(w.shape), w) for g, w in zip(got, want, strict=True)
    )


def _legalize(graph: mdla_ir.Graph, row: Verdict) -> None:
    target = mdla_legalize.load_target("mdla3.5")
    try:
        mdla_legalize.legalize(graph, target)
        row.verdict, row.partitions = "maps", 1
        return
    except LegalizeError as exc:
        first = _first(exc)
    device = mdla_legalize.rewrite(graph, target)
    report = mdla_legalize.explain(device, target)
    kinds = sorted({o.kind for o in report.unsupported})
    try:
        placed = mdla_legalize.place(graph, target, "mtk-mdla", [",".join(kinds)])
    except LegalizeError as exc:
        row.verdict, row.message = "legalize", f"{first} / --cpu {','.join(kinds)}: {_first(exc)}"
        return
    row.verdict, row.partitions = f"maps with --cpu {','.join(kinds)}", len(placed.partitions)


def render(row: Verdict) -> str:
    parts = "-" if row.partitions is None else str(row.partitions)
    message = row.message.replace("|", "\\|")
    cells = [f"{row.name} ({row.side})", row.path, row.verdict, parts, row.exact]
    cells.append(f"{row.seconds:.1f}")
    return "| " + " | ".join([*cells, message]) + " |"


def summary(rows: list[Verdict]) -> str:
    maps = sum(r.verdict == "maps" for r in rows)
    cpu = sum(r.verdict.startswith("maps with") for r in rows)
    text = (
        f"{maps} of {len(rows)} map fully on mtk-mdla, {cpu} more with --cpu naming the kinds "
        f"that leave it, {len(rows) - maps - cpu} refused"
    )
    checked = [r for r in rows if r.exact != "-"]
    if checked:
        same = sum(r.exact == "yes" for r in checked)
        text += f"; {same} of {len(checked)} compiled bit-exact (emulator == run_int8)"
    return text


def main(
    names: list[str], side: int, path: str = "auto", exact: bool = False, wide: bool = False
) -> None:
    """The table of `names` (default: MODELS, or WIDE with `wide`) and its tally."""
    print(HEADER, flush=True)
    rows = []
    for name in names or (WIDE if wide else MODELS):
        row = judge(name, side, path, exact)
        rows.append(row)
        print(render(row), flush=True)
    print(f"\n{summary(rows)}")
