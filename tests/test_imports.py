"""Package boundaries at run time: what runs on the phone imports without torch installed."""

from __future__ import annotations

import subprocess
import sys

import pytest

BLOCK_TORCH = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "torchvision"):
            raise ImportError(f"blocked: {name}")
        return None
sys.meta_path.insert(0, Block())
import {module}
assert not any(m.split(".")[0] == "torch" for m in sys.modules), "torch was imported"
print("ok")
"""


@pytest.mark.parametrize(
    "module",
    [
        "mdla_ir",
        "mdla_witness",
        "mdla_zoo",
        "mdla_zoo.preprocess",
        "mdla_zoo.detection",
        "mdla_compile",
        "workbench.boxes",
        "mdla_target",
        "mdla_runtime",
        "mdla_runtime.engine.target",
        "mdla_runtime.emu.emulator",
        "mdla_emu",
        "mdla_emu.emulator",
    ],
)
def test_imports_without_torch(module: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", BLOCK_TORCH.replace("{module}", module)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_from_torch_without_torch_says_so() -> None:
    code = BLOCK_TORCH.replace("{module}", "mdla_ir") + (
        "\ntry:\n    mdla_ir.from_torch(None, None)\nexcept ImportError as e:\n    print(e)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert "blocked: torch" in proc.stdout


def test_zoo_preprocessing_runs_without_torch_and_load_model_says_so() -> None:
    code = BLOCK_TORCH.replace("{module}", "mdla_zoo") + (
        "import numpy as np\n"
        "x = mdla_zoo.prepare(np.zeros((300, 400, 3), np.uint8), 'tf', (224, 224))\n"
        "print(x.shape, x.dtype)\n"
        "try:\n    mdla_zoo.load_model('squeezenet1_1')\nexcept ImportError as e:\n    print(e)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1:] == ["(1, 3, 224, 224) float32", "blocked: torch"]
