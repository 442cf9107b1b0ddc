"""The TUI opens a model as `workbench compile` would: `workbench tui` takes compile's options
(weights, input shape, preset, labels, --arg, --import, --cpu, device), the compile form edits
them, a model opened at the default 224x224 or with random weights is warned about, and a .mdla
reopens with what it records (the form shows it; Calibrate imports the recorded spec once the
user accepts it, refusing a missing file or other weights with the fix)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import Input
from typer.testing import CliRunner

import mdla_compile
import mdla_zoo
from mdla_compile import CompileOptions
from mdla_compile.contract import Contract, apply, contract_from
from mdla_ir.stored import sidecar
from tests.workbench.conftest import TINY_IMAGES
from tests.workbench.own_model import save_weights
from tests.workbench.tui_pilot import sync, text, wait_for
from workbench import pipeline
from workbench.cli import app as cli
from workbench.tui.app import WorkbenchApp
from workbench.tui.calibrate import CalibrateScreen
from workbench.tui.forms import CompileForm, PathPrompt
from workbench.tui.state import Session, tui_options

HERE = Path(__file__).parent
OWN = f"{HERE / 'own_model.py'}:Net"
LABELS = ("apple", "banana", "cherry", "date")
SIZE = (100, 32)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("own")
    weights, labels = d / "net.pt", d / "labels.txt"
    save_weights(str(weights))
    labels.write_text("\n".join(LABELS) + "\n")
    return {"weights": weights, "labels": labels, "dir": d}


def own_options(files: dict[str, Path], spec: str = OWN) -> CompileOptions:
    contract = contract_from("1,3,64,64", "imagenet", labels=files["labels"])
    return tui_options(spec, weights=str(files["weights"]), contract=contract)


def messages(app: WorkbenchApp) -> str:
    return "\n".join(str(n.message) for n in app._notifications)


def opened(app: WorkbenchApp) -> bool:
    return bool(app.session.rows) and not app.screen.query_one("#loading").display


def test_tui_command_takes_compiles_options(
    monkeypatch: pytest.MonkeyPatch, files: dict[str, Path]
) -> None:
    seen: list[CompileOptions | None] = []
    monkeypatch.setattr(WorkbenchApp, "run", lambda self: seen.append(self.session.pending))
    args = [
        *("tui", OWN, "--weights", str(files["weights"]), "--input-shape", "1,3,64,64"),
        *("--preset", "imagenet", "--labels", str(files["labels"]), "--arg", "width=2"),
        *("--import", "export", "--cpu", "RELU", "--device", "mtk-gpu", "--count", "3"),
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    (got,) = seen
    assert got is not None
    assert (got.spec, got.weights, got.args) == (OWN, str(files["weights"]), ("width=2",))
    assert got.contract.input_shape == (1, 3, 64, 64)
    assert (got.contract.preset, got.contract.labels) == ("imagenet", LABELS)
    assert (got.import_path, got.cpu, got.device) == ("export", ("RELU",), "mtk-gpu")
    assert (got.calib, got.count) == ("auto", 3)  # the TUI's calibration default, as before


@sync
async def test_an_own_64x64_model_opens_with_its_contract(files: dict[str, Path]) -> None:
    app = WorkbenchApp(OWN, "emu", own_options(files))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: opened(app), 120)
        compiled = app.session.compiled
        assert compiled is not None
        assert compiled.source.input_shapes == ((1, 3, 64, 64),)
        assert not compiled.source.random_weights
        assert "random weights" not in text(app, "#summary")
        assert "input shape" not in messages(app)
        await pilot.press("c")
        form = app.screen
        assert isinstance(form, CompileForm)
        values = {k: form.query_one(f"#f-{k}").value for k in ("weights", "shape", "preset")}
        assert values == {
            "weights": str(files["weights"]),
            "shape": "1,3,64,64",
            "preset": "imagenet",
        }
        await pilot.press("escape", "5")
        app.screen.query_one("#runs", Input).value = "1"
        await pilot.press("s")
        await app.workers.wait_for_complete()
        line = next(iter(app.screen.predictions.values()))
        assert line.split()[0] in LABELS  # the labels file's names, top-5 of 4 classes


@sync
async def test_a_model_opened_at_the_default_shape_is_warned() -> None:
    app = WorkbenchApp(TINY_IMAGES)  # a module alone: traced at 224x224 without a word before
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: opened(app), 120)
        assert "no input shape given" in messages(app)
        assert "opened at 1,3,224,224" in messages(app)


@sync
async def test_a_model_that_needs_an_input_shape_says_so_in_one_line() -> None:
    app = WorkbenchApp(OWN)  # its head is sized for 64x64: torch fails at 224x224
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: "error" in {n.title for n in app._notifications}, 120)
        said = messages(app)
        assert said.startswith(f"`{OWN}` does not run at 1,3,224,224")
        assert "(mat1 and mat2 shapes cannot be multiplied" in said
        assert said.endswith("set its input shape (c: input shape, or --input-shape N,C,H,W)")
        assert len(said) < 300  # not torch's ShapeProp dump of the whole node


@sync
async def test_a_model_with_random_weights_is_warned_and_labelled() -> None:
    options = tui_options(OWN, contract=Contract(input_shape=(1, 3, 64, 64)))
    app = WorkbenchApp(OWN, "emu", options)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: opened(app), 120)
        assert "has random weights" in messages(app)
        assert "input shape" not in messages(app)  # it was given
        assert "(random weights)" in text(app, "#summary")


@pytest.fixture(scope="module")
def own_mdla(files: dict[str, Path]) -> Path:
    out = files["dir"] / "net.mdla"
    mdla_compile.compile(own_options(files)).save(out)
    return out


@sync
async def test_a_mdla_reopens_with_what_it_records(own_mdla: Path, files: dict[str, Path]) -> None:
    app = WorkbenchApp(str(own_mdla), "emu", tui_options(weights=str(files["weights"])))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: opened(app), 60)
        assert app.session.compiled is None  # opening the file imported nothing
        await pilot.press("c")
        form = app.screen
        assert isinstance(form, CompileForm)
        fields = ("spec", "weights", "shape", "preset")
        values = {k: form.query_one(f"#f-{k}").value for k in fields}
        assert values == {
            "spec": OWN,
            "weights": str(files["weights"]),
            "shape": "1,3,64,64",
            "preset": "imagenet",
        }


@sync
async def test_the_form_of_a_mdla_compiled_with_weights_asks_for_them(own_mdla: Path) -> None:
    app = WorkbenchApp(str(own_mdla))  # no --weights: the .mdla says it had some, not which
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: opened(app), 60)
        await pilot.press("c")
        weights = app.screen.query_one("#f-weights", Input)
        assert weights.value == ""
        assert weights.placeholder.startswith("compiled with weights the .mdla does not name")


@sync
async def test_calibrate_on_a_mdla_uses_its_stored_float_graph(
    own_mdla: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No weights given and nothing imported: the .mdla's stored float graph is the model."""

    def no_import(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("Calibrate imported the model")

    monkeypatch.setattr(mdla_zoo, "load_model", no_import)
    app = WorkbenchApp(str(own_mdla))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: opened(app), 60)
        await pilot.press("3", "a")
        assert isinstance(app.screen, CalibrateScreen)  # no prompt: nothing to import
        await wait_for(pilot, lambda: "top-1 agreement" in text(app, "#result"), 120)
        compiled = app.session.compiled
        assert compiled is not None
        assert compiled.source.input_shapes == ((1, 3, 64, 64),)
        assert compiled.source.labels == LABELS
        recorded = pipeline.load_manifest(own_mdla).provenance
        assert compiled.qgraph.provenance.preprocess == recorded.preprocess
        assert compiled.qgraph.provenance.spec == recorded.spec


@sync
async def test_calibrate_on_a_mdla_with_a_stale_float_graph_says_so(
    own_mdla: Path, files: dict[str, Path], tmp_path: Path
) -> None:
    other = tmp_path / "other.mdla"  # another build: the same model, another quantizer
    options = own_options(files)
    mdla_compile.compile(replace(options, quant=replace(options.quant, method="minmax"))).save(
        other
    )
    copy = without_float_graph(own_mdla, tmp_path / "copy")
    shutil.copy(sidecar(other), sidecar(copy))
    app = WorkbenchApp(str(copy))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: opened(app), 60)
        await pilot.press("3", "a")
        await wait_for(pilot, lambda: "error" in {n.title for n in app._notifications}, 120)
        said = messages(app)
        assert said.startswith("Calibrate needs the model's float graph: ")
        assert "was written for another build" in said
        assert "compile it again" in said


def without_float_graph(mdla: Path, tmp: Path) -> Path:
    """A copy of `mdla` without the float graph stored beside it (an older .mdla)."""
    tmp.mkdir(exist_ok=True)
    out = tmp / mdla.name
    shutil.copy(mdla, out)
    return out


@sync
async def test_calibrate_on_an_older_mdla_imports_its_spec_once_accepted(
    own_mdla: Path, files: dict[str, Path], tmp_path: Path
) -> None:
    old = without_float_graph(own_mdla, tmp_path)
    app = WorkbenchApp(str(old), "emu", tui_options(weights=str(files["weights"])))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: opened(app), 60)
        await pilot.press("3", "a")
        prompt = app.screen
        assert isinstance(prompt, PathPrompt)
        assert prompt.query_one("#prompt-path").value == OWN  # shown, imported once accepted
        await pilot.press("enter")
        await wait_for(pilot, lambda: "top-1 agreement" in text(app, "#result"), 120)
        compiled = app.session.compiled
        assert compiled is not None
        assert compiled.source.input_shapes == ((1, 3, 64, 64),)
        assert compiled.source.labels == LABELS


async def calibrate_error(app: WorkbenchApp) -> str:
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: opened(app), 60)
        await pilot.press("3", "a")
        assert isinstance(app.screen, PathPrompt)
        await pilot.press("enter")
        assert isinstance(app.screen, CalibrateScreen)
        await wait_for(pilot, lambda: "error" in {n.title for n in app._notifications}, 120)
        return messages(app)


@sync
async def test_calibrate_on_an_older_mdla_without_its_weights_says_so(
    own_mdla: Path, tmp_path: Path
) -> None:
    said = await calibrate_error(WorkbenchApp(str(without_float_graph(own_mdla, tmp_path))))
    assert "it was compiled with weights: give them" in said


@sync
async def test_calibrate_on_a_mdla_whose_model_file_is_gone_says_which(
    files: dict[str, Path], tmp_path: Path
) -> None:
    gone = tmp_path / "gone.py"
    shutil.copy(HERE / "own_model.py", gone)
    out = tmp_path / "gone.mdla"
    mdla_compile.compile(own_options(files, f"{gone}:Net")).save(out)
    gone.unlink()
    sidecar(out).unlink()  # an older .mdla: only the recorded spec could give the model
    said = await calibrate_error(WorkbenchApp(str(out)))
    assert f"the model file `{gone}`" in said
    assert "is missing" in said


def test_the_recorded_contract_is_the_compiled_one(own_mdla: Path, files: dict[str, Path]) -> None:
    """What the .mdla records gives back its preprocessing, shape, labels and quantizer."""
    session = Session()
    session.compile(tui_options(str(own_mdla)))
    recorded, manifest = session.recorded, session.manifest
    session.close()
    assert recorded is not None
    assert manifest is not None
    contract = recorded.contract
    assert (contract.input_shape, contract.labels) == ((1, 3, 64, 64), LABELS)
    record = apply(contract, None, ((1, 3, 64, 64),), OWN)
    assert record == manifest.provenance.preprocess
    assert record is not None
    assert record.mode == "imagenet"
    assert recorded.quant == mdla_compile.compile(own_options(files)).config
