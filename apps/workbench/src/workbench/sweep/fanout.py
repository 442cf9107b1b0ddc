"""One function over many items, in order, on a local pool of processes or as Ray tasks: what
`validate --dataset` shards with (the sweep's tasks keep their own runners, which write each
row as it finishes). `shared` (bytes, e.g. a pickled compile) reaches each local worker once,
through its initializer, and each Ray task through the object store.

    results = map_local(fn, shared, items, workers=2)     # fn(shared, item), module-level
    results = map_ray(fn, shared, items, "auto")
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from workbench.sweep.pool import shared as worker_shared
from workbench.sweep.pool import spawned
from workbench.sweep.ray_pool import CPUS, RETRIES, connect
from workbench.sweep.threads import limit

Item = TypeVar("Item")
Result = TypeVar("Result")


def _call(fn: Callable[[bytes, Item], Result], item: Item) -> Result:
    return fn(worker_shared(), item)


def _limited(fn: Callable[[bytes, Item], Result], shared: bytes, item: Item) -> Result:
    """On a Ray worker: fn with the task's CPUs as its threads."""
    limit(CPUS)
    return fn(shared, item)


def map_local(
    fn: Callable[[bytes, Item], Result], shared: bytes, items: Sequence[Item], workers: int
) -> list[Result]:
    """[fn(shared, item) for item in items] on `workers` spawned processes; the first error
    raised is raised here (Ctrl-C ends the workers)."""
    with spawned(workers, len(items), shared) as pool:
        futures = [pool.submit(_call, fn, item) for item in items]
        return [f.result() for f in futures]


def map_ray(
    fn: Callable[[bytes, Item], Result], shared: bytes, items: Sequence[Item], address: str
) -> list[Result]:
    """The same as Ray tasks (CPUS each, a lost worker's task retried once)."""
    ray = connect(address)
    remote = ray.remote(num_cpus=CPUS, max_retries=RETRIES)(_limited)
    ref = ray.put(shared)
    refs = [remote.remote(fn, ref, item) for item in items]
    try:
        results: list[Result] = ray.get(refs)
    except BaseException:
        for r in refs:
            ray.cancel(r, force=True)
        raise
    return results
