"""Errors that used to arrive late, mislead or overflow: each is one early line with the fix
(a --calib file, a zoo name's typo, an --input-shape of the wrong rank, weights that do not
fit, a .mdla of an old format, a Ctrl-C while a module imports)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch
from typer.testing import CliRunner

from mdla_compile import pipeline as compile_pipeline
from mdla_zoo import models as zoo_models
from mdla_zoo.detection import DECODERS
from mdla_zoo.names import OWN_NAMES, torchvision_names
from tests.workbench.conftest import TINY
from workbench.cli import app

OWN = str(Path(__file__).with_name("own_model.py"))


@pytest.fixture
def no_import(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model must not be loaded: the error comes before."""

    def never(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("the model was loaded before the error")

    monkeypatch.setattr(compile_pipeline, "load_source", never)


def first_line(result: Any) -> str:
    return str(result.stderr.splitlines()[0]) if result.stderr else ""


def test_a_calib_file_is_refused_before_the_import(
    runner: CliRunner, tmp_path: Path, no_import: None
) -> None:
    photo = tmp_path / "cat.png"
    photo.write_bytes(b"\x89PNG")
    out = tmp_path / "x.mdla"
    result = runner.invoke(app, ["compile", TINY, "--calib", str(photo), "-o", str(out)])
    assert result.exit_code == 1
    assert first_line(result) == (
        f"error: --calib `{photo}` is a file; it takes a folder of images or .npy/.npz arrays "
        f"(e.g. --calib {tmp_path}), `samples` or `random`"
    )
    assert not out.exists()


@pytest.mark.parametrize("command", ["compile", "check", "export", "validate"])
def test_a_zoo_name_typo_suggests_names_before_the_import(
    runner: CliRunner, tmp_path: Path, no_import: None, command: str
) -> None:
    args = [command, "resnet81"]
    if command in ("compile", "export"):
        args += ["-o", str(tmp_path / ("x.mdla" if command == "compile" else "x.tflite"))]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert first_line(result).startswith("error: unknown model `resnet81`: not a torchvision")
    assert "; did you mean resnet18, " in first_line(result), result.output


def test_the_name_check_imports_no_torch() -> None:
    code = textwrap.dedent(
        """
        import sys
        from mdla_zoo.names import check_name, ZooError
        check_name("resnet18")
        try:
            check_name("mobilenetv2")
        except ZooError as exc:
            print(exc)
        assert "torch" not in sys.modules, "torch was imported"
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "did you mean mobilenet_v2" in done.stdout


def test_the_names_read_from_torchvision_are_its_registry() -> None:
    import torchvision

    assert torchvision_names() == set(torchvision.models.list_models())
    own = {*zoo_models.LITE_SIZES, *zoo_models.MTCNN_SIZES, *DECODERS}
    assert set(OWN_NAMES) == own


def test_a_zoo_models_input_shape_is_checked_before_the_import(
    runner: CliRunner, tmp_path: Path, no_import: None
) -> None:
    out = str(tmp_path / "x.mdla")
    result = runner.invoke(app, ["compile", "resnet18", "--input-shape", "1,3,64", "-o", out])
    assert result.exit_code == 1
    assert first_line(result) == (
        "error: --input-shape `1,3,64`: `resnet18` takes one image, N,C,H,W = 1,3,H,W "
        "(e.g. 1,3,64,64)"
    )


@pytest.mark.parametrize("shape", ["1,3,64", "1,3,64,64,2"])
def test_an_own_models_input_rank_is_checked_before_torch_runs_it(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    def never(*_a: Any, **_k: Any) -> None:
        raise AssertionError("the model ran on the wrong shape")

    monkeypatch.setattr(zoo_models, "_runs_on", never)
    out = str(tmp_path / "x.mdla")
    result = runner.invoke(
        app, ["compile", f"{OWN}:Net", "--input-shape", shape, "--calib", "random", "-o", out]
    )
    assert result.exit_code == 1
    assert first_line(result) == (
        f"error: --input-shape `{shape}`: `{OWN}:Net` starts with a Conv2d, which takes 4 "
        "sizes N,C,H,W (e.g. 1,3,64,64)"
    )


def test_weights_that_do_not_fit_are_one_short_line(runner: CliRunner, tmp_path: Path) -> None:
    weights = tmp_path / "other.pt"
    torch.save({f"layer{i}.conv.weight": torch.zeros(2) for i in range(200)}, weights)
    args = ["compile", f"{OWN}:Net", "--input-shape", "1,3,64,64", "--weights", str(weights)]
    result = runner.invoke(app, [*args, "--calib", "random", "-o", str(tmp_path / "x.mdla")])
    assert result.exit_code == 1
    line = first_line(result)
    assert len(line) - len(str(weights)) - len(OWN) < 300, line
    assert line == (
        f"error: weights `{weights}` do not fit `{OWN}:Net`: 4 missing ('stem.0.weight', "
        "'stem.0.bias', 'head.weight', ... 1 more); 200 unexpected ('layer0.conv.weight', "
        "'layer1.conv.weight', 'layer2.conv.weight', ... 197 more); give this model's own state "
        "dict (torch.save(model.state_dict(), path))"
    )


@pytest.mark.parametrize("command", ["inspect", "run"])
def test_an_old_format_says_rebuild(
    runner: CliRunner, artifacts: dict[str, Path], tmp_path: Path, command: str
) -> None:
    old = tmp_path / "old.mdla"
    blob = bytearray(artifacts["tiny"].read_bytes())
    blob[8:12] = (1).to_bytes(4, "little")
    old.write_bytes(bytes(blob))
    result = runner.invoke(app, [command, str(old)])
    assert result.exit_code == 1
    assert first_line(result).startswith(
        f"error: `{old}` is format version 1, rebuild with `workbench compile MODEL -o {old}`"
    ), result.output


SLOW_IMPORT = """
import os, signal, sys, time
from mdla_runtime.interrupt import interrupt_guard
sys.path.insert(0, {folder!r})
with interrupt_guard() as check:
    import slow_mod
    print("imported", flush=True)
    check()
"""
SLOW_MODULE = """
import os, signal, time
for _ in range({presses}):
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.3)
print("import ended", flush=True)
"""


@pytest.mark.parametrize("presses", [1, 2])
def test_a_ctrl_c_during_an_import_is_said_at_once(tmp_path: Path, presses: int) -> None:
    """The first Ctrl-C says at once that the command stops when the import ends (`check()`
    raises it then: the CLIs' exit 130); a second one ends the process there and then."""
    (tmp_path / "slow_mod.py").write_text(SLOW_MODULE.format(presses=presses))
    code = SLOW_IMPORT.format(folder=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    notice = "interrupted: stopping once the import under way ends (Ctrl-C again: now)"
    lines = done.stderr.splitlines()
    assert lines[0] == notice, done.stderr
    if presses == 1:
        assert done.stdout == "import ended\nimported\n"
        assert done.returncode == -signal.SIGINT  # check() raised it once the import ended
        assert lines[-1] == "KeyboardInterrupt"
    else:
        assert done.stdout == ""  # ended during the import, not after it
        assert lines[1:] == ["error: interrupted"]
        assert done.returncode == 128 + signal.SIGINT


@pytest.mark.parametrize(("command", "name"), [("compile", "x.mdla"), ("export", "x.tflite")])
def test_an_output_folder_that_refuses_files_is_refused_before_the_import(
    runner: CliRunner, no_import: None, command: str, name: str
) -> None:
    """/proc passes a permission check for root, yet holds no new files: the write is tried
    (and undone) before any work, not found out after the compile on a hidden temp file."""
    result = runner.invoke(app, [command, TINY, "-o", f"/proc/{name}"])
    assert result.exit_code == 1
    assert first_line(result).startswith("error: output directory `/proc` is not writable")
