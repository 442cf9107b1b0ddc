"""How libmdla_quant's entry points resolve: on x86-64 with GCC each C pass is an ifunc over its
target_clones builds (its AVX2 / AVX-512 and baseline builds), the CPU's own picked when loaded."""

from __future__ import annotations

import platform
import shutil
import subprocess

import pytest

from mdla_quant import native


def symbol_kinds() -> dict[str, str]:
    """nm's kind of each symbol libmdla_quant defines ("i": an ifunc); skips where no clones are
    built (not x86-64, no nm, or built by clang)."""
    if platform.machine() != "x86_64" or shutil.which("nm") is None:
        pytest.skip("x86-64 clones only")
    version = subprocess.run(["cc", "--version"], capture_output=True, text=True).stdout
    if "clang" in version.lower():
        pytest.skip("built by clang: one baseline build")
    lib = native.library()
    assert lib is not None
    symbols = subprocess.run(
        ["nm", "-D", "--defined-only", lib._name], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    return {line.split()[-1]: line.split()[1] for line in symbols if line.strip()}
