"""Every package builds as a wheel and installs alone, non-editable, into a fresh venv, taking
its siblings from the wheel folder (the README's `pip install --find-links dist NAME` recipe);
each imports there, `mdla-emu` builds and loads its emulator from the C sources its wheel carries
(and `mdla-quant` its calibration histogram's kernel),
and `mdla-runtime` runs a manifest on the host emulator without torch.

Third-party dependencies come from the machine's package index (PyPI), as they would for a user.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# A deep check (`make deep`, run by .ci/run after `make test`): eleven fresh venvs and cold C
# builds, about two and a half minutes, for the packaging (each wheel's files and declared
# dependencies) that the editable install the other tests use cannot show.
pytestmark = pytest.mark.deep

ROOT = Path(__file__).resolve().parents[1]
# distribution -> (folder, import name)
PACKAGES = {
    "mdla-ir": ("packages/mdla-ir", "mdla_ir"),
    "mdla-target": ("packages/mdla-target", "mdla_target"),
    "mdla-legalize": ("packages/mdla-legalize", "mdla_legalize"),
    "mdla-quant": ("packages/mdla-quant", "mdla_quant"),
    "mdla-emu": ("packages/mdla-emu", "mdla_emu"),
    "mdla-runtime": ("packages/mdla-runtime", "mdla_runtime"),
    "mdla-witness": ("packages/mdla-witness", "mdla_witness"),
    "mdla-zoo": ("packages/mdla-zoo", "mdla_zoo"),
    "mdla-compile": ("packages/mdla-compile", "mdla_compile"),
    "mdla-workbench": ("apps/workbench", "workbench"),
    "mdla-lipread": ("apps/lipread", "lipread"),
}

RUN_A_MANIFEST = """
import importlib.util, sys
import numpy as np
assert importlib.util.find_spec("torch") is None, "torch came with mdla-runtime"
import mdla_runtime
from mdla_runtime.testing import chain_qgraph
m = mdla_runtime.load(mdla_runtime.save(chain_qgraph(), "m.mdla"))
x = np.linspace(-1, 1, int(np.prod(m.inputs[0].model_shape)), dtype=np.float32)
result = mdla_runtime.open_target("emu").run(m, [x.reshape(m.inputs[0].model_shape)])
print("ran", len(result.outputs), "outputs on", mdla_runtime.__file__)
"""

# mdla-emu alone: the wheel carries its C sources; the library builds and lists its devices.
LOAD_THE_EMULATOR = """
import ctypes, importlib.util
assert importlib.util.find_spec("mdla_runtime") is None, "mdla-runtime came with mdla-emu"
import mdla_emu
lib = mdla_emu.load_emulator()
n = ctypes.c_uint32()
assert lib.Neuron_getDeviceCount(ctypes.byref(n)) == 0
print("devices", n.value, "from", mdla_emu.__file__)
"""

# mdla-quant: the wheel carries the calibration histogram's C source and builds it.
BUILD_THE_HISTOGRAM = """
import mdla_quant
from mdla_quant import binning
assert binning._kernel() is not None, "the histogram kernel did not build"
print(mdla_quant.__file__)
"""


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=900
    )


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    src = tmp_path_factory.mktemp("src")  # copies: a build leaves build/ and .egg-info behind
    skip = shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    folders = [str(shutil.copytree(ROOT / f, src / f, ignore=skip)) for f, _ in PACKAGES.values()]
    proc = _pip("wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), *folders)
    assert proc.returncode == 0, proc.stderr
    return out


def test_every_package_builds_a_wheel_under_its_distribution_name(wheels: Path) -> None:
    built = {p.name.split("-")[0] for p in wheels.glob("*.whl")}
    assert built == {dist.replace("-", "_") for dist in PACKAGES}


@pytest.mark.parametrize("dist", sorted(PACKAGES))
def test_installs_alone_and_imports(wheels: Path, tmp_path: Path, dist: str) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    proc = _pip("--python", str(python), "install", "-q", "--find-links", str(wheels), dist)
    assert proc.returncode == 0, proc.stderr[-3000:]
    module = PACKAGES[dist][1]
    code = f"import {module}, sys; print({module}.__file__)"
    code = {
        "mdla-runtime": RUN_A_MANIFEST,
        "mdla-emu": LOAD_THE_EMULATOR,
        "mdla-quant": BUILD_THE_HISTOGRAM,
    }.get(dist, code)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["MDLA_CACHE_DIR"] = str(tmp_path / "cache")
    run = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert str(venv) in run.stdout  # imported from the wheel, not from the source tree
    if dist == "mdla-runtime":
        assert run.stdout.startswith("ran 1 outputs")
    if dist == "mdla-emu":
        assert run.stdout.startswith("devices 3 from")
