"""The witness protocol on a target: which counter to read, and the runs it brackets.

On `emu` the counter is the emulator's own fake APU runtime-PM node: `emulator_counter()` makes
a temporary sysfs directory and sets MDLA_EMU_SYSFS for every engine process started meanwhile
(the emulator then keeps DIR/power/runtime_* as a phone's apu_top does). Everywhere else it is
the real node found under /sys (of this machine for `lib:`, of the phone for `ssh://`).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mdla_runtime
import mdla_witness

ENV = "MDLA_EMU_SYSFS"


@dataclass(frozen=True)
class Counter:
    """Where the runtime-PM counter is read and what it is (for the output)."""

    node: str | None  # None: discover under `sysfs`
    sysfs: str
    what: str
    shell: Callable[[str], tuple[int, str]] | None = None


@contextmanager
def emulator_counter() -> Iterator[str]:
    """A temporary fake APU node for the emulator; yields its directory."""
    old = os.environ.get(ENV)
    with tempfile.TemporaryDirectory(prefix="mdla-apu-") as tmp:
        node = str(Path(tmp) / "apu_top")
        os.environ[ENV] = node
        try:
            yield node
        finally:
            if old is None:
                os.environ.pop(ENV, None)
            else:
                os.environ[ENV] = old


def counter_for(
    target: mdla_runtime.Target,
    emulator_node: str | None,
    node: str | None = None,
    sysfs: str = "/sys",
) -> Counter:
    """The counter to read: the emulator's own, else `node` if given (a device directory with
    power/runtime_*), else the one discovered under `sysfs` on the target's machine."""
    if target.name == "emu" and node is None:
        if emulator_node is None:
            raise ValueError("the emulator's counter needs emulator_counter()")
        return Counter(
            emulator_node,
            "/sys",
            f"the emulator's fake runtime-PM node {emulator_node} (not a phone's APU)",
        )
    shell = getattr(target, "shell", None)
    where = "the phone" if shell is not None else "this machine"
    if node is not None:
        return Counter(node, sysfs, f"the runtime-PM node {node} on {where} (given)", shell)
    return Counter(None, sysfs, f"the APU runtime-PM node under {sysfs} on {where}", shell)


def read(counter: Counter) -> mdla_witness.Reading | None:
    """One reading of the counter (None when there is no node to read)."""
    nodes = mdla_witness.find_power_nodes(counter.sysfs, counter.shell, counter.node)
    return nodes[0].reading if nodes else None


def witness_runs(
    target: mdla_runtime.Target,
    counter: Counter,
    run: Callable[[], Any],
    idle_s: float,
) -> mdla_witness.Witness:
    if target.name == "emu":
        target.devices()  # an engine process creates the node (suspended) before the control
    return mdla_witness.witness(
        run, idle_s=idle_s, sysfs=counter.sysfs, node=counter.node, shell=counter.shell
    )
