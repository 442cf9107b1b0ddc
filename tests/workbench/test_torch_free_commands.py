"""`run` on an image file and `witness` with no IMAGE need neither torch nor scikit-image
(the phone under Termux has neither): both run in a process where importing them fails."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mdla_compile import CompileError
from mdla_runtime import ExportError, TargetError
from mdla_zoo import ZooError
from workbench.errors import exit_code

BLOCKED = """
import sys, importlib.abc
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("torch", "torchvision", "skimage"):
            raise ModuleNotFoundError(f"No module named '{name}'", name=name)
        return None
sys.meta_path.insert(0, Block())
from workbench.cli import main
sys.argv = ["workbench", *sys.argv[1:]]
main()
"""


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("notorch") / "blocked.py"
    path.write_text(textwrap.dedent(BLOCKED))
    return path


def blocked(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=300
    )


def test_run_on_a_photo_file_without_torch_or_skimage(
    script: Path, artifacts: dict[str, Path], tmp_path: Path
) -> None:
    photo = tmp_path / "p.png"
    pixels = np.random.default_rng(0).integers(0, 256, (40, 50, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(photo)
    done = blocked(script, "run", str(artifacts["images"]), str(photo), "--json")
    assert done.returncode == 0, done.stderr
    assert '"image": "p.png"' in done.stdout


def test_witness_without_an_image_needs_no_sample_photos(
    script: Path, artifacts: dict[str, Path]
) -> None:
    done = blocked(script, "witness", str(artifacts["images"]), "--idle", "0.2", "--runs", "300")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verdict: witnessed" in done.stdout


def test_run_without_images_says_what_the_samples_need(
    script: Path, artifacts: dict[str, Path]
) -> None:
    done = blocked(script, "run", str(artifacts["images"]))
    assert done.returncode == 2  # the install lacks it: usage, not a bad model
    (line,) = done.stderr.strip().splitlines()
    assert "pip install scikit-image (it needs no torch), or name image files" in line


@pytest.mark.parametrize(
    "spec", ["efficientnet_lite0", f"{Path(__file__).with_name('seg_model.py')}:segmenter"]
)
def test_compile_without_torch_names_the_install(script: Path, spec: str, tmp_path: Path) -> None:
    done = blocked(script, "compile", spec, "--calib", "random", "-o", str(tmp_path / "x.mdla"))
    assert done.returncode == 2, done.stderr  # STYLE.md's 3 is "unsupported on the target"
    (line,) = done.stderr.strip().splitlines()
    assert line == (
        "error: compiling, checking or validating a model spec needs PyTorch, which is not "
        "installed: pip install 'mdla-workbench[models]' (running, inspecting and witnessing a "
        ".mdla need none of it)"
    )


MISSING = ModuleNotFoundError("No module named 'x'", name="x")


def _raised(error: Exception, cause: BaseException | None) -> Exception:
    try:
        raise error from cause
    except Exception as exc:
        return exc


@pytest.mark.parametrize(
    ("error", "cause", "code"),
    [
        (ZooError("model `x` needs torchvision: pip install 'mdla-zoo[models]'"), MISSING, 2),
        (CompileError("the sample photos need scikit-image: pip install scikit-image"), MISSING, 2),
        (ExportError("export_tflite needs the `ai-edge-litert` package: pip install"), MISSING, 2),
        (ZooError("cannot import `m.py` for model spec `m.py:Net`"), None, 1),  # the user's
        (ZooError("unknown model"), ValueError("x"), 1),
        (TargetError("the host emulator is not available: No module named 'x'"), MISSING, 4),
    ],
)
def test_a_missing_optional_package_exits_2(
    error: Exception, cause: BaseException | None, code: int
) -> None:
    """A package's error raised from a missing module names the pip command: the install is
    what to change (2, usage), not the model (1) nor the target (3); the emulator missing from
    its own package stays a target failure."""
    assert exit_code(_raised(error, cause)) == code
