"""The FP32 side given once: `compile` stores the float graph beside the `.mdla` (data, bound to
its bytes), and `run` compares FP32 and INT8 from any directory without --model, --weights or
an import; a missing, stale or unreadable store says why and leaves the INT8 side."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from typer.testing import CliRunner

import mdla_ir
import mdla_runtime
from mdla_ir import stored
from mdla_ir.testing import GraphBuilder
from tests.workbench.seg_model import segmenter
from tests.workbench.test_torch_free_commands import BLOCKED
from workbench import dense, pipeline
from workbench import images as imgs
from workbench.cli import app
from workbench.commands.run import manifest_inputs
from workbench.contract import Contract

CLASS = f"{Path(__file__).with_name('seg_model.py')}:Segmenter"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Segmenter compiled from its class with a state-dict --weights file at 64 x 64."""
    root = tmp_path_factory.mktemp("given_once")
    weights = root / "seg.pt"
    torch.save(segmenter().state_dict(), weights)
    out = root / "build" / "seg.mdla"
    out.parent.mkdir()
    args = ["compile", CLASS, "--weights", str(weights), "--input-shape", "1,3,64,64"]
    args += ["--preset", "imagenet", "--count", "2", "-o", str(out), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["fp32_graph"] == f"{out}.fp32"
    return out, weights


def _agree(out: Path, weights: Path, image: str = "chelsea") -> float:
    """Pixel agreement of FP32 and INT8 on `image`, computed here from the imported model."""
    manifest = mdla_runtime.load(out)
    ((_, x),) = manifest_inputs(manifest, [image])
    q = mdla_runtime.open_target("emu").run(manifest, [x]).outputs[0]
    shape = Contract(input_shape=(1, 3, 64, 64))
    graph = pipeline.load_source(CLASS, str(weights), shape).graph
    f = mdla_ir.run_float(graph, [x])[0]
    return round(float(np.mean(np.argmax(f[0], 0) == np.argmax(q[0], 0))), 4)


def test_run_elsewhere_compares_fp32_without_weights(
    built: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, weights = built
    monkeypatch.chdir(tmp_path)  # another directory: the spec's relative path means nothing
    modules = set(sys.modules)
    result = CliRunner().invoke(app, ["run", str(out), "chelsea", "--json"])
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["runs"]
    assert "no_fp32" not in entry
    assert entry["class_maps"][0]["fp32_int8_agree"] == _agree(out, weights)
    assert not {m for m in set(sys.modules) - modules if "seg_model" in m}


def test_without_torch_the_stored_graph_still_gives_fp32(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    script = tmp_path / "blocked.py"
    script.write_text(textwrap.dedent(BLOCKED))
    photo = tmp_path / "cat.png"
    Image.fromarray(imgs.read_image("chelsea")).save(photo)
    done = subprocess.run(
        [sys.executable, str(script), "run", str(built[0]), str(photo), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    (entry,) = json.loads(done.stdout)["runs"]
    assert entry["class_maps"][0]["fp32_int8_agree"] == _agree(*built, str(photo))


def _copy(built: tuple[Path, Path], tmp_path: Path) -> Path:
    out = tmp_path / "seg.mdla"
    out.write_bytes(built[0].read_bytes())
    stored.sidecar(out).write_bytes(stored.sidecar(built[0]).read_bytes())
    return out


def test_a_missing_store_is_the_int8_side_and_names_the_fix(
    built: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = _copy(built, tmp_path)
    stored.sidecar(out).unlink()
    result = CliRunner().invoke(app, ["run", str(out), "chelsea", "--json"])
    (entry,) = json.loads(result.stdout)["runs"]
    assert entry["class_maps"][0]["fp32_int8_agree"] is None
    assert entry["no_fp32"].startswith("not shown: a .mdla never names code to run")
    assert entry["no_fp32"].endswith("or compile it again to store its FP32 graph beside it")


def test_a_store_of_another_build_is_not_used(
    built: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = _copy(built, tmp_path)
    graph, _ = stored.loads(stored.sidecar(out).read_bytes())
    stored.sidecar(out).write_bytes(stored.dumps(graph, "0" * 64))
    result = CliRunner().invoke(app, ["run", str(out), "chelsea", "--json"])
    (entry,) = json.loads(result.stdout)["runs"]
    assert entry["no_fp32"] == (
        f"`{out}.fp32` was written for another build of `{out}`: compile it again, or give "
        "--model SPEC"
    )


def test_an_unreadable_store_says_so(
    built: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = _copy(built, tmp_path)
    stored.sidecar(out).write_bytes(b"garbage")
    result = CliRunner().invoke(app, ["run", str(out), "chelsea", "--json"])
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["runs"]
    assert entry["no_fp32"].startswith(f"cannot read `{out}.fp32`: not a stored float graph")


@pytest.mark.parametrize("off", [["--fp32", "off"], ["--no-fp32"]])
def test_fp32_off_skips_the_stored_graph(
    built: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, off: list[str]
) -> None:
    """The issue's spelling `--fp32 off`, and `--no-fp32` kept as its alias."""
    monkeypatch.chdir(tmp_path)
    out = _copy(built, tmp_path)
    stored.sidecar(out).write_bytes(b"garbage")  # would say `cannot read` if it were read
    args = ["run", str(out), "chelsea", *off, "--json", "--save-outputs", "o.npz"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["runs"]
    assert entry["no_fp32"] == "off (--fp32 off)"
    assert entry["class_maps"][0]["fp32_int8_agree"] is None
    with np.load("o.npz") as z:
        assert not [k for k in z.files if k.endswith("/fp32")]


def test_fp32_on_reads_the_stored_graph(
    built: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = _copy(built, tmp_path)
    result = CliRunner().invoke(app, ["run", str(out), "chelsea", "--fp32", "on", "--json"])
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["runs"]
    assert "no_fp32" not in entry
    assert entry["class_maps"][0]["fp32_int8_agree"] is not None


@pytest.mark.parametrize(
    ("args", "first"),
    [
        (["--fp32", "on", "--no-fp32"], "error: --fp32 on and --no-fp32 contradict each other"),
        (["--fp32", "maybe"], "Invalid value for '--fp32'"),
    ],
)
def test_fp32_usage_errors_exit_2(built: tuple[Path, Path], args: list[str], first: str) -> None:
    result = CliRunner().invoke(app, ["run", str(built[0]), "chelsea", *args])
    assert result.exit_code == 2, result.output
    assert first in result.stderr


def test_a_scalar_constant_held_as_one_element_round_trips() -> None:
    """A rule may hold a 0-d tensor's constant as [1] (YOLOv8's `div` by 2 as a MUL by 0.5):
    the store writes it in the shape the graph records, and reads it back."""
    b = GraphBuilder()
    x = b.input("x", (1, 2, 3, 3))
    half = b.const("half", np.asarray([0.5], np.float32))
    graph = b.build(b.op(mdla_ir.OpKind.MUL, [x, half], name="mul", fuse="NONE"))
    tensors = {**graph.tensors, "half": graph.tensors["half"].__class__("half", (), "float32",
               np.asarray([0.5], np.float32))}  # fmt: skip
    graph = graph.with_(tensors=tensors)
    back, bound = stored.loads(stored.dumps(graph, "abc"))
    assert bound == "abc"
    assert back.tensors["half"].shape == ()
    assert float(np.asarray(back.tensors["half"].data)) == 0.5


def test_a_store_over_the_limit_is_not_read(
    built: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = _copy(built, tmp_path)
    monkeypatch.setattr(stored, "MAX_BYTES", 1000)
    size = stored.sidecar(out).stat().st_size
    why, graph = dense.stored_graph(mdla_runtime.load(out))[::-1]
    assert graph is None
    assert why == f"cannot read `{out}.fp32`: {size} bytes, over the 1000 a stored graph may hold"


def test_a_stored_graph_for_other_inputs_is_not_used(built: tuple[Path, Path]) -> None:
    manifest = mdla_runtime.load(built[0])
    graph, why = dense.stored_graph(manifest)
    assert graph is not None
    assert why == ""
    (spec,) = manifest.inputs
    other = dataclasses.replace(
        manifest, inputs=(dataclasses.replace(spec, model_shape=(1, 3, 32, 32)),)
    )
    assert dense.same_io(graph, other, "it") == (None, "it's inputs are not the manifest's")
