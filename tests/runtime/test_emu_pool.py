"""The emulator's worker pool (kernels/pool.c) as a process: the first execution of a
compilation starts the process's MDLA_EMU_THREADS - 1 workers, every later execution and every
other compilation reuses them and freeing the last compilation joins them; mdla-engine starts
as many threads for five runs as for one; two executions of one compilation computing at the
same time give the one-thread bytes; nothing leaks under valgrind with the workers running;
and the chunks a job is cut into are equal and hold a grain each."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from mdla_emu.emulator import CSRC, build_emulator
from tests.runtime.test_emu_api import conv_model
from tests.runtime.test_emu_support import DEVICES, NO_ERROR, compile_model
from tests.runtime.test_emu_system import ROOT, driver_under_valgrind

COUNTED = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    from tests.runtime.test_emu_api import conv_model
    from tests.runtime.test_emu_support import DEVICES, compile_model

    def tasks():
        return len(os.listdir("/proc/self/task"))

    b, shape = conv_model(h=24)
    b.finish()
    x = np.random.default_rng(0).integers(-128, 128, (1, 24, 24, 4), dtype=np.int8)
    seen = {"start": tasks()}
    rc, comp = compile_model(b, DEVICES, [shape])
    seen["compiled"] = tasks()
    outs = [comp.run([x])[0].tobytes() for _ in range(6)]
    seen["six runs"] = tasks()
    rc, other = compile_model(b, DEVICES, [shape])
    outs.append(other.run([x])[0].tobytes())
    seen["a second compilation"] = tasks()
    comp.free()
    seen["first freed"] = tasks()
    other.free()
    seen["both freed"] = tasks()
    seen["same bytes"] = len(set(outs)) == 1
    print(json.dumps(seen))
    """
)


def counted(threads: str) -> dict[str, object]:
    env = os.environ | {"MDLA_EMU_THREADS": threads, "MDLA_EMU_MIN_WORK": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", COUNTED, str(ROOT)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    seen: dict[str, object] = json.loads(proc.stdout.splitlines()[-1])
    return seen


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_compilations_share_workers_started_once_and_joined_with_the_last() -> None:
    seen = counted("3")
    start = seen["start"]
    assert isinstance(start, int)
    # no thread before the first execution, two workers for all six runs and for a second
    # compilation's too, kept while one of them lives, none after both are freed
    assert seen == {
        "start": start,
        "compiled": start,
        "six runs": start + 2,
        "a second compilation": start + 2,
        "first freed": start + 2,
        "both freed": start,
        "same bytes": True,
    }
    assert counted("1")["six runs"] == start


def test_concurrent_executions_of_one_compilation_share_its_pool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ctypes lets go of the GIL: the executions compute at the same time, and the one that
    finds the pool busy runs its op on its own thread."""
    b, shape = conv_model(h=128)
    assert b.finish() == NO_ERROR
    rng = np.random.default_rng(3)
    xs = [rng.integers(-128, 128, (1, 128, 128, 4), dtype=np.int8) for _ in range(4)]
    monkeypatch.setenv("MDLA_EMU_THREADS", "1")
    rc, one = compile_model(b, DEVICES, [shape])
    assert rc == NO_ERROR
    want = [one.run([x])[0].tobytes() for x in xs]
    one.free()
    monkeypatch.setenv("MDLA_EMU_THREADS", "2")
    monkeypatch.setenv("MDLA_EMU_MIN_WORK", "1")
    rc, comp = compile_model(b, DEVICES, [shape])
    assert rc == NO_ERROR
    got: dict[int, list[bytes]] = {}

    def runs(k: int) -> None:
        got[k] = [comp.run([xs[k]])[0].tobytes() for _ in range(10)]

    workers = [threading.Thread(target=runs, args=(k,)) for k in range(len(xs))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    comp.free()
    b.free()
    for k, w in enumerate(want):
        assert set(got[k]) == {w}, f"input {k}"


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_workers_leak_nothing_under_valgrind(tmp_path: Path) -> None:
    proc = driver_under_valgrind(tmp_path, {"MDLA_EMU_THREADS": "3", "MDLA_EMU_MIN_WORK": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("ok")
    assert "All heap blocks were freed" in proc.stderr


def thread_starts(args: list[str], tmp: Path) -> int:
    """How many threads the engine run `args` starts (clone calls, as strace -f records them)."""
    log = tmp / "strace.txt"
    env = os.environ | {"MDLA_EMU_THREADS": "2", "MDLA_CPU_THREADS": "2"}
    trace = ["strace", "-f", "-qq", "-e", "trace=clone,clone3", "-o", str(log)]
    proc = subprocess.run(
        [*trace, *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return sum(1 for line in log.read_text().splitlines() if re.search(r"\bclone3?\(", line))


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_the_engine_starts_its_threads_once_whatever_the_repeat(tmp_path: Path) -> None:
    """Two mtk-mdla partitions (two compilations sharing the emulator's one worker) around a cpu
    partition (the engine's one worker): two threads for one run as for five, where a pool per
    execution started two more per run and a pool per compilation one per partition."""
    from mdla_runtime import save
    from mdla_runtime.build import engine_path
    from mdla_runtime.testing import partitioned_qgraph
    from tests.runtime.test_engine import inputs_for

    path = save(partitioned_qgraph(), tmp_path / "parts.mdla")
    args = [str(engine_path()), str(path), "--lib", str(build_emulator())]
    args += inputs_for(path, tmp_path)
    assert thread_starts([*args, "--repeat", "1"], tmp_path) == 2
    assert thread_starts([*args, "--repeat", "5", "--warmup", "1"], tmp_path) == 2


CUTS = textwrap.dedent(
    """
    #include <stdio.h>
    #include <stdlib.h>
    #include <pthread.h>
    #include "kernels.h"
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static int64_t seen[4 * EMU_MAX_THREADS][2];
    static int n_seen;
    static void record(const void *ctx, int64_t begin, int64_t end, uint8_t *scratch) {
        (void)ctx; (void)scratch;
        pthread_mutex_lock(&mu);
        seen[n_seen][0] = begin; seen[n_seen][1] = end; n_seen++;
        pthread_mutex_unlock(&mu);
    }
    static int by_begin(const void *a, const void *b) {
        return (int)(((const int64_t *)a)[0] - ((const int64_t *)b)[0]);
    }
    int main(int argc, char **argv) {
        EmuPool *pool = emu_pool_acquire(atoi(argv[1]));
        static uint8_t scratch[EMU_MAX_THREADS * 64];
        EmuScratch s = {scratch, 64, pool};
        for (int i = 2; i + 1 < argc; i += 2) {
            n_seen = 0;
            emu_parallel_for(&s, atoll(argv[i]), atoll(argv[i + 1]), record, NULL);
            qsort(seen, (size_t)n_seen, sizeof seen[0], by_begin);
            for (int k = 0; k < n_seen; k++)
                printf("%s%lld-%lld", k ? " " : "", (long long)seen[k][0], (long long)seen[k][1]);
            printf("\\n");
        }
        emu_pool_release(pool);
        return 0;
    }
    """
)


def cuts(tmp: Path, threads: int, jobs: list[tuple[int, int]]) -> list[str]:
    """The chunks emu_parallel_for hands out at `threads` for each (count, grain) job."""
    from mdla_emu.build import generated_dir

    src, exe = tmp / "cuts.c", tmp / "cuts"
    src.write_text(CUTS)
    cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
    flags = ["-std=c11", "-pthread", "-Wall", "-Werror", f"-I{CSRC}", f"-I{CSRC / 'kernels'}"]
    pool = CSRC / "kernels" / "pool.c"
    subprocess.run(
        [cc, *flags, f"-I{generated_dir()}", str(src), str(pool), "-o", str(exe)],
        check=True,
        capture_output=True,
    )
    args = [str(v) for job in jobs for v in job]
    proc = subprocess.run([str(exe), str(threads), *args], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_chunks_are_equal_and_each_holds_a_grain(tmp_path: Path) -> None:
    """(count, grain): 10 items in grains of 4 go out as two halves, not 8 + 2; 7 items hold
    one whole grain only, so the caller computes them alone; grain 1 cuts four per thread
    (claimed one at a time, so a late or slow thread takes fewer), as many as there are items
    when fewer."""
    jobs = [(10, 4), (7, 4), (12, 1), (2, 1), (0, 1)]
    assert cuts(tmp_path, 2, jobs) == [
        "0-5 5-10",
        "0-7",
        "0-1 1-3 3-4 4-6 6-7 7-9 9-10 10-12",
        "0-1 1-2",
        "",
    ]
    assert cuts(tmp_path, 3, jobs) == [
        "0-5 5-10",
        "0-7",
        "0-1 1-2 2-3 3-4 4-5 5-6 6-7 7-8 8-9 9-10 10-11 11-12",
        "0-1 1-2",
        "",
    ]
    assert cuts(tmp_path, 1, jobs) == ["0-10", "0-7", "0-12", "0-2", ""]
