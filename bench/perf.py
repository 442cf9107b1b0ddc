"""Compile and int8 speed against PyTorch and LiteRT, one table in one run (issue 19).

Per model (random init with BN statistics from data, except efficientnet_lite0's real weights;
calibration: random crops of the sample photos):

- compile: mdla (import -> legalize -> quantize N inputs -> save) over PyTorch FX PTQ
  (prepare_fx -> N forwards -> convert_fx, x86 qconfig) on the same N inputs, each in a forked
  child (so one's heap never counts against the other), interleaved, in each child's CPU
  seconds; `peak MiB` is the mdla child's peak resident memory above the parent's at fork, at
  each N (flat in N = streaming);
- int8 ms/img: the emulator (mdla-engine on libneuron_emu.so, MDLA_EMU_THREADS=1) over LiteRT's
  XNNPACK on the same `.tflite` export, over PyTorch's x86 int8 model (the FX PTQ result), LiteRT
  BUILTIN_REF over the emulator, the emulator's 2-thread throughput over its 1-thread one, and
  `run_int8` (the numpy reference) over the emulator. Ratios are medians of per-round ratios,
  the rounds interleaving every backend; each time is the best of `--repeat` runs (on a shared
  machine the minimum is the least disturbed estimate of a backend's own speed).

Everything single-threaded (torch, BLAS, LiteRT) unless a column says otherwise; `load` is
os.getloadavg()[0] when the model's row finished (the machine is shared: ratios, not absolute
times, are what to read). Each row's notes give `host_loop_us` (a plain Python loop's CPU time)
before every backend's burst: the AMD machine's vCPU runs in two speeds, and the emulator loses
more than XNNPACK in the slow one, so a ratio is read with the speeds its two bursts ran at.

With `--targets`, two more measurements and a last table that holds every figure against its
target: efficientnet_lite0's quantize with CLE + AdaRound (300 iterations, 32 crops) and with
block reconstruction added, each in wall seconds on every core (a spawned child without the
one-thread settings, as `workbench compile --adaround` runs), and ConvNeXt-Tiny@224 with
LayerNorm and GELU on the CPU in the engine against XNNPACK on the same partitioned `.tflite`
(bench/partitions.py's CPU ms per inference).

    .venv/bin/python bench/perf.py [--models mobilenet_v2,resnet18] [--n 32,256] [--rounds 3]
    .venv/bin/python bench/perf.py --targets        # and the AdaRound and partition rows
    .venv/bin/python bench/perf.py --quick          # N = 4,8, one round, few repeats
"""

from __future__ import annotations

import argparse
import copy
import math
import multiprocessing
import os
import pickle
import platform
import resource
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from accuracy import PHOTOS, crops, setting_of
from runtime import litert_times_ms

from mdla_compile import CompileOptions, Event, Stage, StageFinished, StageStarted
from mdla_compile import compile as compile_model
from mdla_quant import run_int8
from mdla_quant.reference import quantize_inputs
from mdla_runtime import load, open_target
from mdla_runtime.export.tflite import tflite_bytes
from mdla_zoo import load_model, recalibrate_batchnorm
from workbench.output import each as bench_progress

MODELS = (
    "mobilenet_v2",
    "resnet18",
    "efficientnet_b0",
    "efficientnet_lite0",
    "lraspp_mobilenet_v3_large",
)
REAL_WEIGHTS = ("efficientnet_lite0",)
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def vm_kib(field: str) -> int:
    """A field of /proc/self/status (VmRSS, VmHWM), KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def in_child(
    fn: Callable[[], Any], clock: Callable[[], float] = time.perf_counter
) -> tuple[float, float]:
    """(seconds by `clock`, peak MiB above the fork) of fn() run in a forked child: the child
    resets its peak-RSS mark (/proc/self/clear_refs 5) and reports VmHWM - VmRSS at its start.
    `clock=time.process_time` gives the child's own CPU seconds (what the compile column
    compares: on a loaded machine wall time counts the other processes' turns)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: run, report, exit without cleanup
        os.close(r)
        code = 0
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            base = vm_kib("VmRSS")
            t0 = clock()
            fn()
            seconds = clock() - t0
            os.write(w, pickle.dumps((seconds, (vm_kib("VmHWM") - base) / 1024)))
        except BaseException as exc:  # the parent raises it
            os.write(w, pickle.dumps(f"{type(exc).__name__}: {exc}"[:300]))
            code = 1
        os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    result = pickle.loads(data) if data else "child died"
    if isinstance(result, str):
        raise RuntimeError(result)
    return float(result[0]), float(result[1])


def mdla_compile(model: Any, calib: list[list[np.ndarray]], out: Path) -> Any:
    """import -> legalize -> quantize -> save: what `workbench compile` does (its call)."""
    compiled = compile_model(CompileOptions(model, calib=calib, count=len(calib)))
    compiled.save(out)
    return compiled.qgraph


def fx_ptq(module: torch.nn.Module, example: tuple[Any, ...], calib: list[Any]) -> Any:
    """PyTorch's own post-training quantization, x86 backend, on the same inputs."""
    from torch.ao.quantization import get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

    torch.backends.quantized.engine = "x86"
    prepared = prepare_fx(copy.deepcopy(module), get_default_qconfig_mapping("x86"), example)
    with torch.inference_mode():
        for (x,) in calib:
            prepared(torch.from_numpy(x))
    return convert_fx(prepared)


def torch_ms(module: Any, x: np.ndarray, repeat: int) -> float:
    """Best of `repeat` forwards of PyTorch's int8 model (after a warm-up), ms."""
    t = torch.from_numpy(x)
    with torch.inference_mode():
        module(t)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            module(t)
            times.append((time.perf_counter() - t0) * 1000)
    return min(times)


def emu_ms(manifest: Any, x: np.ndarray, threads: int, repeat: int) -> float:
    """Best of `repeat` runs in mdla-engine on the emulator with `threads` threads, ms."""
    os.environ["MDLA_EMU_THREADS"] = str(threads)
    try:
        return open_target("emu").run(manifest, x, repeat=repeat, warmup=1).latency_ms[1]
    finally:
        os.environ.pop("MDLA_EMU_THREADS", None)


def ref_ms(qgraph: Any, x: np.ndarray, repeat: int) -> float:
    """Best of `repeat` runs of the numpy int8 reference, ms, after one untimed run: the
    first run of a graph builds its lookup tables (each later run reuses them), and the
    emulator's column is warm too."""
    run_int8(qgraph, [x])
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run_int8(qgraph, [x])
        times.append((time.perf_counter() - t0) * 1000)
    return min(times)


def host_loop_us(steps: int = 20000, tries: int = 3) -> float:
    """The best of `tries` thread-CPU times of a plain Python loop of `steps` steps, us. The AMD
    machine's vCPU runs in two speeds, switching every few seconds, and loads and stores (this
    loop, the emulator) lose ~1.45-1.65x in the slow one where XNNPACK loses ~1.24x (bench/README,
    "mobilenet_v2's emulator time: the cause"): read before each backend's burst, it says which
    speed each burst ran at."""
    best = math.inf
    for _ in range(tries):
        t0 = time.thread_time_ns()
        total = 0
        for i in range(steps):
            total += i & 7
        best = min(best, time.thread_time_ns() - t0)
    return best / 1e3


def host_note(host: dict[str, list[float]]) -> str:
    """The row's note of host_loop_us per backend, one figure per round."""
    return "host loop us before each burst, per round (higher = the host's slow speed): " + (
        ", ".join(f"{k} " + "/".join(f"{v:.0f}" for v in vs) for k, vs in host.items())
    )


@dataclass
class Row:
    model: str
    compile_ratio: dict[int, str] = field(default_factory=dict)
    peak: dict[int, float] = field(default_factory=dict)
    times: dict[str, list[float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    load: float = 0.0
    host: dict[str, list[float]] = field(default_factory=dict)  # host_loop_us before each burst

    def value(self, a: str, b: str) -> float:
        """The median over rounds of column a's time over column b's; NaN when either is
        missing (a backend that refused the model)."""
        if a not in self.times or b not in self.times:
            return math.nan
        return statistics.median(x / y for x, y in zip(self.times[a], self.times[b], strict=True))

    def ratio(self, a: str, b: str) -> str:
        r = self.value(a, b)
        return "-" if math.isnan(r) else f"{r:.2f}"


def machine() -> str:
    """CPU model and count, kernel, and the versions that set the numbers."""
    from importlib.metadata import version

    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return (
        f"{os.cpu_count()} x {cpu}, Linux {platform.release()}, "
        f"Python {platform.python_version()}, torch {torch.__version__}, "
        f"ai-edge-litert {version('ai-edge-litert')}, numpy {np.__version__}"
    )


def bench_model(spec: str, ns: list[int], rounds: int, repeat: int) -> Row:
    # the compiled files live only as long as the row's measurement (a dir left per model
    # would fill /tmp over repeated runs)
    with tempfile.TemporaryDirectory(prefix="mdla-perf-") as tmp:
        return _bench_model(spec, ns, rounds, repeat, Path(tmp))


def _bench_model(spec: str, ns: list[int], rounds: int, repeat: int, tmp: Path) -> Row:
    row = Row(spec)
    model = load_model(spec, seed=0)
    if spec not in REAL_WEIGHTS:
        recalibrate_batchnorm(model.module, (2, *model.example_inputs[0].shape[1:]))
    side = int(model.example_inputs[0].shape[-1])
    photos = [f() for f in PHOTOS.values()]
    pool = crops(photos, max(ns), seed=1, side=side)
    ex = model.example_inputs
    # the int8 models, built once (untimed) at the smallest N: also the warm-up, so neither
    # compile timing below pays the one-time imports (torch.fx tracing loads torch._dynamo)
    calib = [[c] for c in pool[: ns[0]]]
    qgraph = mdla_compile(model, calib, tmp / "m.mdla")
    manifest = load(tmp / "m.mdla")
    x = pool[0]
    device_x = quantize_inputs(qgraph, [x])[qgraph.inputs[0]]
    blob = tflite_bytes(qgraph)
    fx_int8 = None
    try:
        fx_int8 = fx_ptq(model.module, ex, calib)
    except Exception as exc:  # reported in the notes
        row.notes.append(f"FX PTQ failed: {type(exc).__name__}: {str(exc)[:120]}")
    # compile: mdla and FX PTQ interleaved, each in its own child, at every N
    for n in ns:
        calib = [[c] for c in pool[:n]]
        t_m, t_f = [], []
        for _ in range(rounds):
            mdla = partial(mdla_compile, model, calib, tmp / "timed.mdla")
            s, peak = in_child(mdla, clock=time.process_time)
            t_m.append(s)
            row.peak[n] = max(row.peak.get(n, 0.0), peak)
            try:
                fx = partial(fx_ptq, model.module, ex, calib)
                t_f.append(in_child(fx, clock=time.process_time)[0])
            except RuntimeError as exc:
                row.notes.append(f"FX PTQ failed: {exc}")
                break
        ratio = statistics.median(a / b for a, b in zip(t_m, t_f, strict=False)) if t_f else None
        mdla_s = statistics.median(t_m)
        row.compile_ratio[n] = f"{ratio:.2f}" if ratio else "-"
        row.notes.append(
            f"N={n}: mdla {mdla_s:.1f} CPU s"
            + (f", FX PTQ {statistics.median(t_f):.1f} CPU s" if t_f else "")
        )
    backends: dict[str, Callable[[], float]] = {
        "emu1": lambda: emu_ms(manifest, x, 1, repeat),
        "emu2": lambda: emu_ms(manifest, x, 2, repeat),
        "xnnpack": lambda: min(litert_times_ms(blob, device_x, "AUTO", repeat)),
        "ref_litert": lambda: min(
            litert_times_ms(blob, device_x, "BUILTIN_REF", max(1, repeat // 4))
        ),
        "run_int8": lambda: ref_ms(qgraph, x, max(1, repeat // 8)),
    }
    if fx_int8 is not None:
        backends["torch_int8"] = lambda: torch_ms(fx_int8, x, repeat)
    for _ in range(rounds):
        for name, fn in backends.items():
            row.host.setdefault(name, []).append(host_loop_us())
            try:
                row.times.setdefault(name, []).append(fn())
            except Exception as exc:  # a backend refusing the model
                row.notes.append(f"{name} failed: {type(exc).__name__}: {str(exc)[:120]}")
                backends[name] = lambda: float("nan")
    med = {k: statistics.median(v) for k, v in row.times.items()}
    row.notes.append(
        "ms/img (best of runs, median over rounds): "
        + ", ".join(f"{k} {v:.1f}" for k, v in med.items())
        + f"; {len(qgraph.ops)} ops"
    )
    row.notes.append(host_note(row.host))
    row.load = os.getloadavg()[0]
    return row


def adaround_cost(
    spec: str = "efficientnet_lite0", iters: int = 300, n_calib: int = 32
) -> dict[str, tuple[float, float]]:
    """The quantize of `spec` with CLE + AdaRound ("plain": a whole compile's quantize stage)
    and with block reconstruction added ("block": its re-quantize of the same calibration), as
    bench/accuracy.py times the two: (wall s, CPU s) each. Run in a spawned child whose
    environment lacks the one-thread variables this process runs under: AdaRound's target is on
    every core, where `soft_rounding`'s pool and OpenBLAS divide the work as in a compile."""
    saved = {v: os.environ.pop(v) for v in THREAD_VARS if v in os.environ}
    try:
        spawn = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(1, mp_context=spawn) as pool:
            return pool.submit(_adaround_child, spec, iters, n_calib).result()
    finally:
        os.environ.update(saved)


def _adaround_child(spec: str, iters: int, n_calib: int) -> dict[str, tuple[float, float]]:
    model = load_model(spec)
    side = int(model.example_inputs[0].shape[-1])
    calib = [[c] for c in crops([f() for f in PHOTOS.values()], n_calib, seed=1, side=side)]
    cpu: dict[type, float] = {}

    def mark(event: Event) -> None:  # the quantize stage's CPU, not the import's or legalize's
        if isinstance(event, StageStarted | StageFinished) and event.stage is Stage.QUANTIZE:
            cpu[type(event)] = time.process_time()

    plain = compile_model(
        CompileOptions(
            model, calib=calib, count=n_calib, quant=setting_of("minmax", "CLE+AdaRound", iters)
        ),
        on_event=mark,
    )
    costs = {"plain": (plain.seconds["quantize"], cpu[StageFinished] - cpu[StageStarted])}
    start = time.process_time()
    block = plain.requantize(setting_of("minmax", "CLE+Ada+block", iters))
    costs["block"] = (block.seconds["quantize"], time.process_time() - start)
    return costs


def partition_ratio(name: str = "convnext_tiny@224", runs: int = 10) -> tuple[float, float]:
    """(engine CPU ms, XNNPACK CPU ms) per inference of bench/partitions.py's model `name`,
    placed with its `--cpu` kinds, on the same partitioned graph."""
    import partitions

    compiled, _, x = partitions.compile_placed(name)
    _, engine, lite = partitions.cpu_times(compiled, x, runs)
    return engine, lite["xnnpack"]


@dataclass(frozen=True)
class Target:
    """A line of the targets table: what is measured, its bound, and which side passes."""

    what: str
    bound: float
    at_least: bool = False  # the figure must reach the bound (a speed-up), not stay under it

    def verdict(self, figures: list[float]) -> str:
        """`met` when every figure passes, `not met` when any fails; a model that gave no
        figure (a backend refused it) is counted out: `met (2 of 3)`."""
        measured = [f for f in figures if not math.isnan(f)]
        if not measured:
            return "not measured"
        ok = all(f >= self.bound if self.at_least else f <= self.bound for f in measured)
        verdict = "met" if ok else "not met"
        return (
            verdict
            if len(measured) == len(figures)
            else f"{verdict} ({len(measured)} of {len(figures)})"
        )


def targets_table(
    rows: list[Row],
    ns: list[int],
    ada: dict[str, tuple[float, float]] | None,
    convnext: tuple[float, float] | None,
) -> list[str]:
    """Every figure of this run against its target, one line per target: the per-model ones
    in `rows`' order, then AdaRound's and ConvNeXt's when they were measured."""

    def compiled(n: int) -> list[float]:
        return [float(r.compile_ratio.get(n, "nan").replace("-", "nan")) for r in rows]

    def shown(a: str, b: str) -> list[float]:  # judged as printed, to two decimals
        return [round(r.value(a, b), 2) for r in rows]

    lines: list[tuple[Target, list[float], str]] = [
        (
            Target("emulator / XNNPACK, 1 thread", 1.0),
            shown("emu1", "xnnpack"),
            "",
        ),
        *((Target(f"compile / FX PTQ, N = {n}", 0.5), compiled(n), "") for n in ns),
        (
            Target("emulator 2 threads / 1 thread", 1.7, at_least=True),
            shown("emu1", "emu2"),
            "",
        ),
        (
            Target("run_int8 / emulator (wall best-of)", 5.0),
            shown("run_int8", "emu1"),
            "",
        ),
    ]
    if ada is not None:
        (plain, plain_cpu), (block, block_cpu) = ada["plain"], ada["block"]
        lines += [
            (Target("AdaRound lite0, wall s", 60.0), [plain], f" ({plain_cpu:.1f} CPU s)"),
            (
                Target("block / plain AdaRound, wall", 2.0),
                [block / plain],
                f" ({block:.1f} / {plain:.1f} s; CPU {block_cpu / plain_cpu:.2f})",
            ),
        ]
    if convnext is not None:
        engine, xnnpack = convnext
        lines.append(
            (
                Target("ConvNeXt-Tiny@224 engine / XNNPACK", 1.5),
                [engine / xnnpack],
                f" ({engine:.1f} / {xnnpack:.1f} CPU ms)",
            )
        )
    out = [
        f"{'target':<36} {'bound':>7}  {'verdict':<16} figures ({', '.join(r.model for r in rows)})"
    ]
    for target, figures, detail in lines:
        sign = ">=" if target.at_least else "<="
        text = " / ".join(f"{f:.2f}" for f in figures).replace("nan", "-")
        verdict = target.verdict(figures)
        out.append(f"{target.what:<36} {sign} {target.bound:<4g}  {verdict:<16} {text}{detail}")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--n", default="32,256", help="calibration set sizes, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=16, help="timed runs per backend per round")
    parser.add_argument("--quick", action="store_true", help="N=4,8, one round, 4 repeats")
    parser.add_argument(
        "--targets",
        action="store_true",
        help="also time AdaRound (plain and block) and ConvNeXt's CPU partitions, then print "
        "every figure against its target",
    )
    args = parser.parse_args(argv)
    if any(os.environ.get(v) != "1" for v in THREAD_VARS):  # BLAS reads them when it loads
        os.environ.update(dict.fromkeys(THREAD_VARS, "1"))
        os.execv(sys.executable, [sys.executable, *sys.argv])
    ns = [int(v) for v in args.n.split(",")]
    rounds, repeat = args.rounds, args.repeat
    if args.quick:
        ns, rounds, repeat = [4, 8], 1, 4
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")  # torch.ao.quantization's deprecation notices
    torch.manual_seed(0)
    n0, n1 = ns[0], ns[-1]
    print(
        f"issue 19: 1 thread everywhere (emu2: MDLA_EMU_THREADS=2); compile N = {n0} / {n1}; "
        f"{rounds} round(s) x {repeat} runs; {os.cpu_count()} CPUs, "
        f"load at start {os.getloadavg()[0]:.1f}\n{machine()}\n"
    )
    head = (
        f"{'model':<26} {'compile mdla/FX':>16} {'emu/XNNPACK':>11} {'emu/torch':>9} "
        f"{'REF/emu':>7} {'emu 2t/1t':>9} {'run_int8/emu':>12} {'peak MiB':>11} {'load':>5}"
    )
    print(head)
    all_notes, rows = [], []
    for spec in bench_progress(args.models.split(","), "models"):
        row = bench_model(spec, ns, rounds, repeat)
        rows.append(row)
        speedup = row.ratio("emu1", "emu2")
        compile_col = f"{row.compile_ratio.get(n0, '-')} / {row.compile_ratio.get(n1, '-')}"
        peak_col = f"{row.peak.get(n0, 0):.0f} / {row.peak.get(n1, 0):.0f}"
        print(
            f"{spec:<26} {compile_col:>16} {row.ratio('emu1', 'xnnpack'):>11} "
            f"{row.ratio('emu1', 'torch_int8'):>9} {row.ratio('ref_litert', 'emu1'):>7} "
            f"{speedup:>9} {row.ratio('run_int8', 'emu1'):>12} {peak_col:>11} {row.load:>5.1f}",
            flush=True,
        )
        all_notes += [f"  {spec}: {n}" for n in row.notes]
    print("\n" + "\n".join(all_notes))
    if args.targets:
        ada = adaround_cost()
        print(f"\nAdaRound timed (load {os.getloadavg()[0]:.1f})", flush=True)
        convnext = partition_ratio()
        print(f"ConvNeXt-Tiny@224 timed (load {os.getloadavg()[0]:.1f})\n", flush=True)
        print("\n".join(targets_table(rows, ns, ada, convnext)))
    print(
        f"\nmaxrss of this process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10} MiB"
    )


if __name__ == "__main__":
    sys.exit(main())
