"""How many threads each worker of a sweep (or of validate's shards) may run: the cores shared
out, so that two workers do not each start a thread per core (torch's OpenMP and MKL, numpy's
OpenBLAS, the emulator's pool) and fight over them.

    with limited(share(workers)):     # the environment spawned workers inherit
        ...start the workers...
    limit(threads)                    # inside a worker (a Ray task): torch too

OpenMP and OpenBLAS read their variable once, when their library loads: a worker must have it
in its environment before it imports torch or numpy, which is why the pool's processes are
spawned (a fresh interpreter) while `limited` holds, never forked from a parent that has loaded
them. The emulator's variables (MDLA_EMU_THREADS, MDLA_CPU_THREADS; one thread when unset) are
read per execution and only capped where the user set them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

LIBRARIES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
EMULATOR = ("MDLA_EMU_THREADS", "MDLA_CPU_THREADS")


def cores() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def share(workers: int) -> int:
    """Threads per worker when `workers` run at once on this machine's cores."""
    return max(1, cores() // max(1, workers))


def _count(text: str | None) -> int | None:
    try:
        n = int(text or "")
    except ValueError:
        return None
    return n if n >= 1 else None


def environment(threads: int, env: Mapping[str, str]) -> dict[str, str]:
    """The variables a worker of `threads` threads runs with: each library at `threads` (or
    the user's own smaller setting), the emulator's capped at `threads` where set."""
    got = {}
    for var in (*LIBRARIES, *EMULATOR):
        have = _count(env.get(var))
        if have is None and var in EMULATOR:
            continue
        got[var] = str(min(have or threads, threads))
    return got


@contextmanager
def scoped_env(values: dict[str, str], unset: tuple[str, ...] = ()) -> Iterator[None]:
    """`values` set and `unset` removed in os.environ inside (the processes started meanwhile
    inherit them), every name as it was after."""
    before = {var: os.environ.get(var) for var in (*values, *unset)}
    for var in unset:
        os.environ.pop(var, None)
    os.environ.update(values)
    try:
        yield
    finally:
        for var, value in before.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value


@contextmanager
def limited(threads: int) -> Iterator[dict[str, str]]:
    """This process's environment set for workers of `threads` threads (the processes started
    meanwhile inherit it), restored on exit."""
    wanted = environment(threads, os.environ)
    with scoped_env(wanted):
        yield wanted


def limit(threads: int) -> None:
    """Inside a worker: the environment (for libraries not loaded yet, and the emulator) and,
    when this process has already imported torch, torch's own thread count."""
    os.environ.update(environment(threads, os.environ))
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)
