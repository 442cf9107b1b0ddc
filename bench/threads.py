"""What a split op costs the emulator's worker pool, and two threads against one (issue 35).

hand-off: a chain of --ops ADDs of 1 x --side x --side x 32 (side 32: 32 KiB, about ten
microseconds of work) run with MDLA_EMU_MIN_WORK=1, so every op is cut over the threads: a
2-thread op's time above half the 1-thread one is what the hand-off costs. Three ways: one
thread; two whose worker sleeps between ops (MDLA_EMU_SPIN_US=0: a futex wake-up per op, what
the pool did before it spun); two whose worker spins (the default MDLA_EMU_SPIN_US). The caller
takes any half the worker has not picked up by the time its own is done, so a late worker
costs at most the 1-thread time.

models (--models): per model, mdla-engine's wall time per image at 1 and 2 threads (best and
median of --repeat) and its CPU time per image (user + system of the engine child between a
long and a short invocation, so start, compile and warm-up cancel; as in ref_speed.py). On an
idle machine the wall ratio is the speed-up; on a shared one only the CPU figures mean
something: the 2-thread CPU time over the 1-thread one is the pool's overhead (spin included).
There is no speed-up "by CPU": twice the 1-thread CPU over the 2-thread CPU reads 2.0 when
the second thread does no work at all (an op that is not split costs no extra CPU), so it
cannot show a split that stopped happening. On a shared machine read the wall ratio under
--fifo instead.

--fifo runs the timed engine children under SCHED_FIFO (root or CAP_SYS_NICE): their threads
then preempt every ordinary task, so a shared machine looks idle to them for those seconds (the
kernel's real-time throttling still leaves the others 5 %). Compiles stay ordinary tasks.

    .venv/bin/python bench/threads.py [--ops 200] [--repeat 30] [--fifo]
    .venv/bin/python bench/threads.py --models mobilenet_v2,efficientnet_b0 [--fifo]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from mdla_ir.builders import act, qp
from mdla_ir.graph import Graph, Op
from mdla_ir.ops import OpKind
from mdla_runtime import load, open_target, save
from workbench.sweep.threads import scoped_env

WAYS = {  # name -> environment
    "1 thread": {"MDLA_EMU_THREADS": "1"},
    "2, sleeping": {"MDLA_EMU_THREADS": "2", "MDLA_EMU_SPIN_US": "0"},
    "2, spinning": {"MDLA_EMU_THREADS": "2"},
}


def add_chain(n: int, shape: tuple[int, ...]) -> Graph:
    """a0 = x; a(k+1) = a(k) + x: n ADDs in a row."""
    q = qp(0.05, 1)
    tensors = {f"a{k}": act(f"a{k}", shape, q) for k in range(n + 1)}
    ops = tuple(
        Op(OpKind.ADD, f"add{k}", (f"a{k}", "a0"), (f"a{k + 1}",), {"fuse": "NONE"})
        for k in range(n)
    )
    return Graph("adds", tensors, ops, ("a0",), (f"a{n}",), layout="NHWC")


def child_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


FIFO = False  # --fifo: the engine children run under SCHED_FIFO


@contextmanager
def scheduled() -> Iterator[None]:
    """SCHED_FIFO for the children forked inside (they inherit it) when --fifo asks for it."""
    if not FIFO:
        yield
        return
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    try:
        yield
    finally:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def measure(manifest: Any, x: np.ndarray, env: dict[str, str], repeat: int) -> dict[str, float]:
    """Wall best and median (ms) of `repeat` runs, and CPU ms per run, under `env`."""
    with scoped_env(env, unset=("MDLA_EMU_THREADS", "MDLA_EMU_SPIN_US")):
        target = open_target("emu")
        target.run(manifest, x)  # untimed: builds and the compiler probes are children too
        with scheduled():
            c0 = child_cpu_s()
            short = target.run(manifest, x, repeat=max(2, repeat // 4), warmup=1)
            c1 = child_cpu_s()
            long = target.run(manifest, x, repeat=repeat, warmup=1)
        cpu = ((child_cpu_s() - c1) - (c1 - c0)) / (repeat - max(2, repeat // 4)) * 1000
    best = min(short.latency_ms[1], long.latency_ms[1])
    return {"best": best, "median": long.latency_ms[0], "cpu": cpu}


def hand_off(n: int, side: int, repeat: int) -> None:
    shape = (1, side, side, 32)
    x = np.random.default_rng(0).uniform(-3, 3, shape).astype(np.float32)
    os.environ["MDLA_EMU_MIN_WORK"] = "1"
    try:
        with tempfile.TemporaryDirectory(prefix="mdla-threads-") as tmp:
            manifest = load(save(add_chain(n, shape), Path(tmp) / "adds.mdla"))
            got = {name: measure(manifest, x, env, repeat) for name, env in WAYS.items()}
    finally:
        os.environ.pop("MDLA_EMU_MIN_WORK")
    base = got["1 thread"]
    print(f"hand-off: {n} ADDs of {shape}, every one split (MDLA_EMU_MIN_WORK=1)")
    print(f"{'':14}{'wall best':>10}{'median':>9}{'CPU/run':>9}  per op: wall over ideal, CPU")
    for name, m in got.items():
        ideal = base["best"] / (1 if name == "1 thread" else 2)
        extra = (m["best"] - ideal) / n * 1000, (m["cpu"] - base["cpu"]) / n * 1000
        print(
            f"{name:14}{m['best']:8.2f}ms{m['median']:7.2f}ms{m['cpu']:7.2f}ms"
            f"  {extra[0]:+6.1f} us, {extra[1]:+6.1f} us"
        )


def models(specs: list[str], repeat: int) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    import torch
    from accuracy import PHOTOS, crops
    from perf import REAL_WEIGHTS, in_child, mdla_compile

    from mdla_zoo import load_model, recalibrate_batchnorm

    # one torch thread, as bench/perf.py's main sets: each compile runs in a forked child, and a
    # child forked after torch ran its OpenMP team waits forever at that team's next barrier
    torch.set_num_threads(1)
    print(f"{'model':28}{'1t best/median':>16}{'2t best/median':>16}{'2t/1t':>7}{'CPU 1t/2t':>14}")
    for spec in specs:
        model = load_model(spec, seed=0)
        if spec not in REAL_WEIGHTS:
            recalibrate_batchnorm(model.module, (2, *model.example_inputs[0].shape[1:]))
        side = int(model.example_inputs[0].shape[-1])
        pool = crops([f() for f in PHOTOS.values()], 4, seed=1, side=side)
        with tempfile.TemporaryDirectory(prefix="mdla-threads-") as tmp:
            # in a child: processes the compile leaves behind are reaped with it, not in the
            # CPU windows below (RUSAGE_CHILDREN counts a child when it is reaped)
            calib, out = [[c] for c in pool], Path(tmp) / "m.mdla"
            in_child(lambda m=model, c=calib, o=out: mdla_compile(m, c, o))
            manifest = load(Path(tmp) / "m.mdla")
            one = measure(manifest, pool[0], WAYS["1 thread"], repeat)
            two = measure(manifest, pool[0], WAYS["2, spinning"], repeat)
        print(
            f"{spec:28}{one['best']:7.1f}/{one['median']:5.1f}ms{two['best']:8.1f}/"
            f"{two['median']:5.1f}ms{one['best'] / two['best']:7.2f}"
            f"{one['cpu']:7.1f}/{two['cpu']:5.1f}ms"
            f"   load {os.getloadavg()[0]:.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", type=int, default=200, help="ADDs in the hand-off chain")
    parser.add_argument("--side", type=int, default=32, help="the ADDs' height and width")
    parser.add_argument("--repeat", type=int, default=30, help="timed runs per way")
    parser.add_argument("--models", default="", help="comma-separated zoo models (optional)")
    parser.add_argument("--fifo", action="store_true", help="time the engine under SCHED_FIFO")
    args = parser.parse_args()
    global FIFO
    FIFO = args.fifo
    fifo = ", engine under SCHED_FIFO" if FIFO else ""
    print(f"{os.cpu_count()} CPUs, load at start {os.getloadavg()[0]:.1f}{fifo}")
    hand_off(args.ops, args.side, args.repeat)
    if args.models:
        models(args.models.split(","), args.repeat)


if __name__ == "__main__":
    main()
