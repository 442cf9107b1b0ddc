"""Each target and device name is written once, in `mdla_ir.devices`: product code uses the
constants (usage examples in docstrings may show the names)."""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

from mdla_ir import devices

ROOT = Path(__file__).resolve().parents[2]
NAMES = {devices.DEFAULT_TARGET, *devices.DEVICES}
# Files that still write a name as a literal (the emulator and engine, moved by another
# change meanwhile); this list may only shrink.
ALLOWED = {
    "packages/mdla-emu/src/mdla_emu/emulator.py",
    "packages/mdla-runtime/src/mdla_runtime/engine/ssh/doctor.py",
    "packages/mdla-runtime/src/mdla_runtime/engine/target.py",
}


def _literals(path: Path) -> list[int]:
    """Lines of `path` holding a string token that is exactly a target or device name."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return [
        t.start[0]
        for t in tokens
        if t.type == tokenize.STRING and t.string.strip("\"'") in NAMES and len(t.string) > 2
    ]


def test_product_code_names_targets_and_devices_by_constant() -> None:
    found = {}
    for path in sorted(ROOT.glob("packages/*/src/**/*.py")) + sorted(
        ROOT.glob("apps/*/src/**/*.py")
    ):
        rel = str(path.relative_to(ROOT))
        if rel == "packages/mdla-ir/src/mdla_ir/devices.py" or rel in ALLOWED:
            continue
        lines = _literals(path)
        if lines:
            found[rel] = lines
    assert found == {}, f"use mdla_ir.devices' constants: {found}"
