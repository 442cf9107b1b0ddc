"""Issue 15's models end to end, one table row each:

    model | ops on mtk-mdla | assumed ops used | bit-exact emu / LiteRT | cosine | compile s

- ops on mtk-mdla: n/N of the compiled `.mdla` by the host emulator's support query
  (getSupportedOperationsForDevices on mtk-mdla), after legalize;
- assumed ops used: the device graph's ops whose target entry (or the entry's source for one of
  their attributes, e.g. dilation > 1) is `assumed: ...`, counted per kind (`explain`'s verdict);
- bit-exact: the emulator's int8 outputs == `mdla_quant.run_int8`'s, and LiteRT BUILTIN_REF's
  (on the `.tflite` export) == `run_int8`'s, byte for byte;
- cosine: INT8 (run_int8, dequantized) vs FP32 (the device graph in float), the lowest over the
  outputs (and test inputs), with their median when there are several. Real-weight models
  (MTCNN) are calibrated on the workbench's six sample photos and measured on their mirror
  images ("photos"); random-weight models (seed 0, BatchNorm statistics from random data) are
  calibrated and measured on random inputs: a consistency figure, not an accuracy ("random");
- compile s: import + legalize + calibrate/quantize + writing the `.mdla` (what `workbench
  compile` does), wall time on this machine.

A model that fails anywhere gives its row with the stage and the one-line error.

    .venv/bin/python bench/coverage.py                      # every model of issue 15
    .venv/bin/python bench/coverage.py unet mtcnn_onet      # some of them
    .venv/bin/python bench/coverage.py --size fcn_resnet50=128 --size 160   # smaller inputs
    .venv/bin/python bench/coverage.py --third-party     # timm/smp verdicts (third_party.py)
    .venv/bin/python bench/coverage.py --third-party --wide   # the wider set nobody had tried
    .venv/bin/python bench/coverage.py --fresh           # the fresh hand-written set

`bench/rewrites.py` prints its own columns from the same `measure`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the hand-written test models live in the `tests` package
    sys.path.insert(1, str(ROOT))

import mdla_compile  # noqa: E402
import mdla_ir  # noqa: E402
import mdla_legalize  # noqa: E402
from mdla_compile import CompileOptions, Event, StageStarted  # noqa: E402
from mdla_ir.importer.outputs import flatten_outputs  # noqa: E402
from mdla_ir.testing import relative_error  # noqa: E402
from mdla_quant import run_int8  # noqa: E402
from mdla_quant.reference import quantize_inputs  # noqa: E402
from mdla_runtime import open_target  # noqa: E402
from mdla_runtime.export.tflite import run_tflite_reference, tflite_bytes  # noqa: E402
from mdla_zoo import Model, load_model, recalibrate_batchnorm  # noqa: E402
from workbench.commands.check import conv_macs  # noqa: E402
from workbench.images import SAMPLES  # noqa: E402
from workbench.output import each as bench_progress  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import third_party  # noqa: E402

Array = np.ndarray[Any, Any]

TORCHVISION = [
    "lraspp_mobilenet_v3_large",
    "deeplabv3_mobilenet_v3_large",
    "fcn_resnet50",
    "shufflenet_v2_x1_0",
    "vgg11_bn",
    "resnext50_32x4d",
    "regnet_y_400mf",
    "ssdlite320_mobilenet_v3_large",
]
MTCNN = ["mtcnn_pnet", "mtcnn_rnet", "mtcnn_onet"]
HANDWRITTEN = ["unet", "espcn", "fpn", "keyword_spotter"]  # tests/models_{decoders,rewrites}.py
MODELS = TORCHVISION + MTCNN + HANDWRITTEN


@dataclass
class Subject:
    """A model ready to measure: module, example inputs, calibration and test inputs."""

    name: str
    module: torch.nn.Module
    example: tuple[torch.Tensor, ...]
    calibration: list[list[Array]]
    tests: list[list[Array]]
    weights: str  # "random" or "photos" (real weights, measured on real images)


@dataclass
class Row:
    name: str
    shape: str = ""
    weights: str = ""
    mapped: tuple[int, int] | None = None
    assumed: dict[str, int] = field(default_factory=dict)
    emu_exact: bool | None = None
    lite_exact: bool | None = None
    float_error: float | None = None
    cosine: float | None = None  # the lowest
    cosines: list[float] = field(default_factory=list)  # per output (and test input)
    macs: tuple[float, float] | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    failed: tuple[str, str] | None = None  # (stage, one-line error)


def _random_inputs(shape: tuple[int, ...], n: int, seed: int, low: float) -> list[list[Array]]:
    rng = np.random.default_rng(seed)
    if low == -np.inf:  # standard normal (the torchvision models, as bench/rewrites.py had)
        return [[rng.standard_normal(shape).astype(np.float32)] for _ in range(n)]
    return [[rng.uniform(low, 1.0, shape).astype(np.float32)] for _ in range(n)]


def _photos(h: int, w: int, mirror: bool) -> list[list[Array]]:
    """The workbench's sample photos as MTCNN wants them: RGB resized to w x h,
    (pixel - 127.5) / 128, NCHW; `mirror` flips them left-right (unseen by calibration)."""
    out = []
    for load_photo in SAMPLES.values():
        image = load_photo()
        rgb = np.stack([image] * 3, -1) if image.ndim == 2 else image[..., :3]
        pic = Image.fromarray(np.ascontiguousarray(rgb)).resize((w, h), Image.Resampling.BILINEAR)
        x = (np.asarray(pic, np.float32) - 127.5) / 128.0
        x = x[:, ::-1] if mirror else x
        out.append([np.ascontiguousarray(x.transpose(2, 0, 1)[None], dtype=np.float32)])
    return out


def subject(name: str, size: int | None = None, calib: int = 2) -> Subject:
    """Build `name` (a model of MODELS, or any zoo spec taken as random-weight) at `size`."""
    if name in HANDWRITTEN:
        from tests.models_decoders import MODELS as DECODERS
        from tests.models_rewrites import build

        if name in DECODERS:
            module, example = DECODERS[name]()
            low = 0.0  # their inputs are uniform in [0, 1)
        else:
            module, shape = build(name)
            example, low = (torch.zeros(shape),), -1.0
        shape = tuple(example[0].shape)
        return Subject(
            name,
            module,
            example,
            _random_inputs(shape, calib, 0, low),
            _random_inputs(shape, 1, 1, low),
            "random",
        )
    model = load_model(name)
    if name in MTCNN:
        h, w = model.example_inputs[0].shape[2:]
        weights = "random" if model.random_weights else "photos"
        return Subject(
            name,
            model.module,
            model.example_inputs,
            _photos(int(h), int(w), mirror=False),
            _photos(int(h), int(w), mirror=True),
            weights,
        )
    example = model.example_inputs
    if size is not None:
        example = (torch.zeros(*example[0].shape[:2], size, size),)
    shape = tuple(example[0].shape)
    recalibrate_batchnorm(model.module, (2, *shape[1:]))
    return Subject(
        name,
        model.module,
        example,
        _random_inputs(shape, calib, 0, -np.inf),
        _random_inputs(shape, 1, 1, -np.inf),
        "random",
    )


def _cosine(a: Array, b: Array) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    norms = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / max(norms, 1e-30)


def _same(got: list[Array], want: list[Array]) -> bool:
    return all(np.array_equal(g.reshape(w.shape), w) for g, w in zip(got, want, strict=True))


def _assumptions(graph: mdla_ir.Graph) -> dict[str, int]:
    """{kind (with the assumed attribute): ops} of the device graph's ops that map only on an
    assumption, by `explain`'s verdict on the mdla3.5 target."""
    report = mdla_legalize.explain(graph, mdla_legalize.load_target("mdla3.5"))
    found: Counter[str] = Counter()
    for o in report.ops:
        if o.supported and o.assumed:
            attr = getattr(o, "assumed_attr", "")
            kind = o.kind.split("+")[0]
            found[f"{kind} ({attr.split(' ')[0]})" if attr else kind] += 1
    return dict(sorted(found.items()))


def measure(s: Subject, row: Row | None = None) -> Row:
    """The whole path on `s`; a failing stage ends the row with its name and the error."""
    row = row or Row(s.name)
    row.shape = "x".join(str(d) for d in s.example[0].shape)
    row.weights = s.weights
    stages = ["import"]  # the last is the stage running (the compile's events name its own)

    def track(event: Event) -> None:
        if isinstance(event, StageStarted):
            stages.append(event.stage.value)

    try:
        start = time.perf_counter()
        model = Model(s.name, s.module, s.example, preprocess=None)
        options = CompileOptions(model, calib=s.calibration, count=len(s.calibration))
        compiled = mdla_compile.compile(options, on_event=track)
        graph, device, qgraph = compiled.float_graph, compiled.device_graph, compiled.qgraph
        row.assumed = _assumptions(device)
        row.macs = (conv_macs(graph) / 1e9, conv_macs(device) / 1e9)
        with tempfile.TemporaryDirectory() as tmp:
            stages.append("save")
            manifest = compiled.save(Path(tmp) / f"{s.name}.mdla")
            saved = time.perf_counter()
            row.seconds = {
                "legalize": compiled.seconds["import"] + compiled.seconds["legalize"],
                "quantize": compiled.seconds["quantize"],
                "compile": saved - start,
            }
            stages.append("emulator")
            emu = open_target("emu")
            flags = emu.supported(manifest)["mtk-mdla"]
            row.mapped = (sum(flags), len(flags))
            emu_exact, lite_exact, cosines, errors = True, True, [], []
            blob = None
            for x in s.tests:
                stages.append("run_int8")
                ref = run_int8(qgraph, x, raw=True)
                stages.append("emulator")
                emu_exact &= _same(emu.run(manifest, x).raw_outputs, ref)
                stages.append("LiteRT")
                blob = blob or tflite_bytes(qgraph)
                codes = quantize_inputs(qgraph, x)
                lite = run_tflite_reference(blob, [codes[n] for n in qgraph.inputs])
                lite_exact &= _same(lite, ref)
                stages.append("cosine")
                fp32 = mdla_ir.run_float(device, x)
                int8 = run_int8(qgraph, x)
                cosines += [_cosine(q, f) for q, f in zip(int8, fp32, strict=True)]
                with torch.no_grad():
                    out = s.module(*(torch.from_numpy(a) for a in x))
                    want = [t.numpy() for t in flatten_outputs(out)]
                if len(want) == len(fp32):
                    errors += [
                        relative_error(g.reshape(w.shape), w)
                        for g, w in zip(fp32, want, strict=True)
                    ]
        row.emu_exact, row.lite_exact = emu_exact, lite_exact
        row.cosine, row.cosines = min(cosines), cosines
        row.float_error = max(errors) if errors else None
    except Exception as exc:  # a row says where and why, and the table goes on
        row.failed = (stages[-1], one_line(exc))
    return row


def one_line(exc: BaseException, limit: int = 300) -> str:
    """The error's type and message on one line (its lines joined by "; "); a longer one keeps
    its start and its end (where a compiler or a list puts the cause), `limit` in all."""
    text = "; ".join(line.strip() for line in str(exc).strip().splitlines() if line.strip())
    text = f"{type(exc).__name__}: {text}"
    half = (limit - 5) // 2
    return text if len(text) <= limit else f"{text[:half]} ... {text[-half:]}"


def _cosine_cell(row: Row) -> str:
    """The lowest cosine and what it was measured on; with several outputs, their median too."""
    if row.cosine is None:
        return "-"
    if len(row.cosines) < 2:
        return f"{row.cosine:.4f} ({row.weights})"
    median = float(np.median(row.cosines))
    return f"{row.cosine:.4f} ({row.weights}; lowest of {len(row.cosines)}, median {median:.4f})"


def _yes(flag: bool | None) -> str:
    return "-" if flag is None else ("yes" if flag else "NO")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


HEADER = (
    "| model (input) | ops on mtk-mdla | assumed ops used | bit-exact emu / LiteRT "
    "(== run_int8) | cosine INT8 vs FP32 | compile s |\n|---|---|---|---|---|---|"
)


def render(row: Row) -> str:
    assumed = ", ".join(f"{k} x{n}" for k, n in row.assumed.items()) or "none"
    cells = [
        f"{row.name} ({row.shape})" if row.shape else row.name,
        f"{row.mapped[0]}/{row.mapped[1]}" if row.mapped else "-",
        assumed if row.macs is not None else "-",  # known once legalize is through
        f"{_yes(row.emu_exact)} / {_yes(row.lite_exact)}",
        _cosine_cell(row),
        f"{row.seconds['compile']:.1f}" if "compile" in row.seconds else "-",
    ]
    if row.failed:
        stage, error = row.failed
        first = next((i for i, c in enumerate(cells) if c == "-"), len(cells) - 1)
        cells[first] = f"failed at {stage}: {_cell(error)}"
    return "| " + " | ".join(cells) + " |"


def _warm_up() -> None:
    """Compile a one-conv model first, so that no row's compile time holds the process's
    one-time start-up (lazy imports, the first fx trace)."""
    module = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU()).eval()
    model = Model("warm_up", module, (torch.zeros(1, 3, 8, 8),), preprocess=None)
    calib = [[np.ones((1, 3, 8, 8), np.float32)]]
    compiled = mdla_compile.compile(CompileOptions(model, calib=calib, count=1))
    with tempfile.TemporaryDirectory() as tmp:
        compiled.save(Path(tmp) / "warm_up.mdla")


def _sizes(given: list[str]) -> Callable[[str], int | None]:
    """`--size 160` (every torchvision model) and `--size NAME=128` (one model; wins)."""
    every: int | None = None
    named: dict[str, int] = {}
    for g in given:
        name, _, value = g.rpartition("=")
        if name:
            named[name] = int(value)
        else:
            every = int(value)
    return lambda name: named.get(name, every if name in TORCHVISION else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=MODELS, help="default: all of issue 15")
    parser.add_argument("--size", action="append", default=[], help="N or MODEL=N (image side)")
    parser.add_argument("--calib", type=int, default=2, help="calibration inputs (random models)")
    parser.add_argument(
        "--third-party", action="store_true", help="timm/smp models: verdicts (third_party.py)"
    )
    parser.add_argument("--path", default="auto", help="with --third-party: fx, export or auto")
    parser.add_argument(
        "--exact", action="store_true", help="with --third-party: compile, emulate, compare"
    )
    parser.add_argument(
        "--wide", action="store_true", help="with --third-party: the wider set nobody had tried"
    )
    parser.add_argument(
        "--fresh", action="store_true", help="the fresh hand-written set: end-to-end verdicts"
    )
    args = parser.parse_args()
    if args.fresh:
        fresh_table([] if args.models is MODELS else args.models)
        return
    if args.third_party:  # its own table: import + legalize (+ placement) verdicts
        sizes = [int(g) for g in args.size if "=" not in g]
        names = [] if args.models is MODELS else args.models
        third_party.main(names, sizes[-1] if sizes else 128, args.path, args.exact, args.wide)
        return
    size_of = _sizes(args.size)
    _warm_up()
    print(HEADER, flush=True)
    rows = []
    for name in bench_progress(args.models, "models"):
        row = Row(name)
        try:
            row = measure(subject(name, size_of(name), args.calib), row)
        except Exception as exc:  # as in `measure`
            row.failed = ("load", one_line(exc))
        rows.append(row)
        print(render(row), flush=True)
    print(f"\n{parity(rows)}")


def fresh_table(names: list[str]) -> None:
    """The fresh set's table (tests/fresh.py): model, import path, verdict, partitions, and the
    message (the CPU's kinds, or the refusal's line)."""
    from tests.fresh import CASES, run_case, table

    verdicts = [run_case(n) for n in bench_progress(names or list(CASES), "models")]
    print(table(verdicts), flush=True)


def parity(rows: list[Row], bar: float = 1e-4) -> str:
    """The footer: float parity of the device graph with torch (max |diff| / max |torch|)."""
    errors = {r.name: r.float_error for r in rows if r.float_error is not None}
    if not errors:
        return "float IR vs torch: not measured"
    over = [f"{n} {e:.1e}" for n, e in errors.items() if e > bar]
    worst = max(errors.values())
    return (
        f"float IR vs torch (max relative error): <= {bar:g} on {len(errors) - len(over)} of "
        f"{len(errors)} models (worst {worst:.1e})"
        + (f"; over it: {', '.join(over)}" if over else "")
    )


if __name__ == "__main__":
    main()
