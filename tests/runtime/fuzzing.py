"""The engine fuzz harness (`csrc/engine/fuzz_engine.c`): its builds, its seeds, and `make fuzz`.

    exe = build_harness(libfuzzer=True)     # clang, ASan + UBSan (+ libFuzzer), cached by content
    seeds = seed_manifests()                # a valid manifest of every op kind the emulator runs
    python -m tests.runtime.fuzzing RUNS    # `make fuzz`: RUNS executions over both cores

The harness parses a manifest, plans the whole model and an op-prefix cut, builds each through
the emulator's Neuron ABI (the emulator linked in), compiles, runs it on fixed inputs and
round-trips the compiled network; then runs a partitioned manifest partition by partition: the
partition planner for each NPU partition (built, compiled, run on the emulator) and the
engine's cpu device for each cpu one (prepared and run), under AddressSanitizer and UBSan (any
report aborts).
Given files instead of a corpus directory, the libFuzzer build runs each once (the regression
tests and the differential test's mutants); without libFuzzer the same C file builds a plain
driver that does the same (`build_harness(libfuzzer=False)`, for compilers without libFuzzer).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from mdla_emu.build import using_compiler
from mdla_emu.emulator import INCLUDES as EMU_INCLUDES
from mdla_emu.emulator import emulator_sources
from mdla_ir.builders import INT8_KINDS, random_qgraph
from mdla_runtime.build import (
    CPU,
    CPU_SOURCES,
    CSRC,
    ENGINE_SOURCES,
    cache_dir,
    compile_c,
    wing_sources,
)
from mdla_runtime.format.manifest import to_bytes
from mdla_runtime.testing import chain_qgraph, partitioned_qgraph, sample_manifest
from mdla_runtime.testing_float import float_region_qgraph
from tests.runtime.repros import repros

# The harness links the reader, the planners and the cpu device, then the whole emulator: not
# the command line, adapter loading, report or partition runner, nor the engine's copy of the
# emulator's kernels (the emulator's own are linked).
NOT_IN_HARNESS = frozenset(
    {"engine.c", "engine_run.c", "engine_parts.c", "adapter.c", "report.c"}
    | {p.name for p in CPU_SOURCES}
)
# The cpu device's own files, by folder as the engine links them (a new kernel joins by itself).
CPU_DEVICE = wing_sources(CPU)
SANITIZE = (
    "-fsanitize=address,undefined,alignment,float-cast-overflow",
    "-fno-sanitize-recover=all",
)
FLAGS = ("-std=c11", "-g", "-O1", "-pthread", "-fno-omit-frame-pointer")
# ASan's defaults, plus: abort on the first report, and no leak check at exit of the driver
# (libFuzzer checks leaks per input itself).
ROUND = 1_000_000  # executions per job per round of `make fuzz` (a progress line after each)
ENV = {
    "ASAN_OPTIONS": "abort_on_error=1:detect_leaks=1:allocator_may_return_null=1",
    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
}


def clang() -> str:
    path = shutil.which("clang")
    if path is None:
        raise RuntimeError("clang is missing; the fuzz harness needs it: apt-get install -y clang")
    return path


def harness_sources() -> list[Path]:
    """Every C file of the engine harness: the engine's own (the reader and the planner, not
    its command line, adapter loading or report), then the emulator."""
    engine = [f for f in ENGINE_SOURCES if f.name not in NOT_IN_HARNESS]
    return [CSRC / "engine" / "fuzz_engine.c", *engine, *CPU_DEVICE, *emulator_sources()]


def build_harness(libfuzzer: bool) -> Path:
    """The engine harness under ASan + UBSan: a libFuzzer target, or the file driver; built with
    clang by the engine's cached build (its files side by side, keyed by every source, header
    and flag, so an edit rebuilds)."""
    flags = [*FLAGS, *SANITIZE]
    if libfuzzer:
        flags[-2] = "-fsanitize=fuzzer," + SANITIZE[0].removeprefix("-fsanitize=")
        flags.append("-DMDLA_FUZZ_LIBFUZZER")
    name = "fuzz_engine" if libfuzzer else "fuzz_engine_driver"
    with using_compiler(clang()):
        return compile_c(
            harness_sources(), name, flags=flags, libs=["-lm"], include_dirs=EMU_INCLUDES
        )


def seed_manifests() -> list[bytes]:
    """Valid manifests: a random one of every kind the emulator runs (three seeds each), the
    sample (per-channel CONV_2D with every optional field), a three-op chain and a model of
    three partitions (host operations on the cpu between two NPU partitions), and a float
    region (GRU and FULLY_CONNECTED_F32 on the cpu), bidirectional and not."""
    seeds = [sample_manifest(), to_bytes(chain_qgraph()), to_bytes(partitioned_qgraph())]
    seeds += [to_bytes(float_region_qgraph(bidirectional)) for bidirectional in (True, False)]
    seeds += [
        to_bytes(random_qgraph(kind, np.random.default_rng(seed)))
        for kind in INT8_KINDS
        for seed in range(3)
    ]
    return seeds


def write_corpus(directory: Path) -> Path:
    """The seeds, and the second audit's repros (`repros.py`), as files in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    for i, blob in enumerate(seed_manifests()):
        (directory / f"seed{i:03d}.mdla").write_bytes(blob)
    for name, (blob, _) in repros().items():
        (directory / f"repro-{name}.mdla").write_bytes(blob)
    return directory


def run_driver(files: list[Path], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Each of `files` run once through the libFuzzer build (given files, not a corpus
    directory, libFuzzer only executes them), in as few processes as the command line allows."""
    exe = build_harness(libfuzzer=True)
    env = {**os.environ, **ENV}
    out = subprocess.CompletedProcess[str]([str(exe)], 0, "", "")
    for i in range(0, len(files), 500):
        chunk = [str(f) for f in files[i : i + 500]]
        proc = run_fresh([str(exe), *chunk], timeout, env)
        if proc.returncode != 0:
            return proc
        out.stderr += proc.stderr[-2000:]
    return out


def fresh_process(cmd: list[str]) -> list[str]:
    """`cmd` run as a grandchild through `sh`, so that its peak RSS starts from zero.

    Linux keeps a process's peak RSS (getrusage's ru_maxrss, which libFuzzer's -rss_limit_mb
    watches) across execve: a fuzzer started straight from pytest inherits pytest's peak (2.9 GB
    late in `make test`) and reports out-of-memory on an input that used 80 MB. A child forked
    by a small shell gets a new peak."""
    return ["/bin/sh", "-c", '"$@" & wait $!', "sh", *cmd]


def run_fresh(
    cmd: list[str], timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`subprocess.run(fresh_process(cmd))`, capturing text, with its own process group so a
    timeout kills the fuzzer too, not only the shell."""
    proc = subprocess.Popen(
        fresh_process(cmd),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def fuzz(
    work: Path,
    runs: int = 0,
    seconds: int = 0,
    jobs: int = 2,
    max_len: int = 8192,
    exe: Path | None = None,
) -> tuple[int, float, list[Path], str]:
    """libFuzzer (`exe`, else a fresh build) over the seed corpus: `runs` executions in all
    (split over `jobs` processes) or `seconds` of fuzzing. Returns (executions, wall seconds,
    crash files, last log lines of any job that failed)."""
    exe = exe or build_harness(libfuzzer=True)
    corpus = write_corpus(work / "corpus")
    artifacts = work / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    base = [str(exe), f"-max_len={max_len}", "-rss_limit_mb=4096", "-malloc_limit_mb=1024"]
    base += [f"-artifact_prefix={artifacts}/", "-print_final_stats=1", "-timeout=30"]
    base += ["-runs=" + str(-(-runs // jobs))] if runs else []
    base += [f"-max_total_time={seconds}"] if seconds else []
    procs, logs, handles = [], [], []
    start = time.monotonic()
    for j in range(jobs):
        log = work / f"fuzz-{j}.log"
        logs.append(log)
        handles.append(log.open("w"))
        # each job mutates its own copy of the corpus, seeded differently, so work is not shared
        own = work / f"corpus-{j}"
        if not own.exists():
            shutil.copytree(corpus, own)
        cmd = [*base, f"-seed={j + 1}", str(own)]
        procs.append(
            subprocess.Popen(
                fresh_process(cmd),
                stdout=subprocess.DEVNULL,
                stderr=handles[-1],
                env={**os.environ, **ENV},
            )
        )
    codes = [p.wait() for p in procs]
    for handle in handles:
        handle.close()
    elapsed = time.monotonic() - start
    total, tail = 0, ""
    for log, code in zip(logs, codes, strict=True):
        text = log.read_text(errors="replace")
        found = re.findall(r"stat::number_of_executed_units:\s*(\d+)", text)
        total += int(found[-1]) if found else 0
        if code != 0:
            tail += f"--- {log.name} (exit {code})\n" + "\n".join(text.splitlines()[-60:]) + "\n"
    return total, elapsed, sorted(artifacts.glob("*-*")), tail


def main(argv: list[str]) -> int:
    """`make fuzz`: RUNS executions (default 10 M) over FUZZ_JOBS processes (default 2), in
    rounds of ROUND executions per job that continue from the growing corpus (FUZZ_DIR), with
    one harness build (or FUZZ_EXE) for the whole run; a progress line per round, the total
    count at the end, exit 1 on any finding."""
    runs = int(argv[1]) if len(argv) > 1 else 10_000_000
    jobs = int(os.environ.get("FUZZ_JOBS", "2"))
    work = Path(os.environ.get("FUZZ_DIR", cache_dir() / "fuzz-engine"))
    step = min(runs, ROUND * jobs)
    exe = Path(os.environ["FUZZ_EXE"]) if "FUZZ_EXE" in os.environ else build_harness(True)
    print(f"fuzz_engine: {runs:,} executions in {jobs} job(s) of {exe}, in {work}", flush=True)
    total, elapsed = 0, 0.0
    while total < runs:
        done, seconds, crashes, tail = fuzz(work, min(step, runs - total), jobs=jobs, exe=exe)
        total, elapsed = total + done, elapsed + seconds
        rate = total / elapsed if elapsed else 0.0
        print(f"fuzz_engine: {total:,} executions, {elapsed:,.0f} s ({rate:,.0f}/s)", flush=True)
        if crashes or tail:
            print(tail, file=sys.stderr)
            print(f"fuzz_engine: FINDINGS: {[str(c) for c in crashes]}", file=sys.stderr)
            return 1
        if done == 0:
            print("fuzz_engine: no executions counted (libFuzzer log?)", file=sys.stderr)
            return 1
    print(f"fuzz_engine: done: {total:,} executions in {elapsed:,.0f} s, findings: 0")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
