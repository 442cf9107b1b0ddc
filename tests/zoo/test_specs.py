"""`file.py:name` specs: a function, a class, an instance; literal and --arg arguments; the
file's folder on sys.path; every failure of the user's code as one ZooError line."""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from mdla_zoo import ZooError, load_model
from mdla_zoo.errors import SpecError
from mdla_zoo.specs import is_model_file, parse_cli_args, parse_spec

NET = """
import torch
from torch import nn
from blocks import block   # a sibling module: the file's folder is on sys.path

class Net(nn.Module):
    def __init__(self, width=1.0, classes=10):
        super().__init__()
        c = max(1, int(8 * width))
        self.body = block(3, c)
        self.head = nn.Linear(c, classes)

    def forward(self, x):
        return self.head(self.body(x).mean((2, 3)))

def build(width=1.0, classes=10):
    return Net(width, classes)

def sized():
    return Net(), torch.zeros(1, 3, 16, 16)

def broken():
    return {}["missing"]

net = Net(0.5)
NOT_A_MODEL = 3
"""
BLOCKS = """
from torch import nn

def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU())
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("own")
    (root / "my_net.py").write_text(textwrap.dedent(NET))
    (root / "blocks.py").write_text(textwrap.dedent(BLOCKS))
    (root / "bad_import.py").write_text("import no_such_sibling\n")
    return root


def head_shape(spec: str, **kw: object) -> tuple[int, ...]:
    model = load_model(spec, **kw)  # type: ignore[arg-type]
    return tuple(model.module.state_dict()["head.weight"].shape)


def test_a_class_an_instance_and_a_function_each_give_their_module(folder: Path) -> None:
    f = folder / "my_net.py"
    assert head_shape(f"{f}:Net") == (10, 8)  # instantiated with no arguments
    assert head_shape(f"{f}:net") == (10, 4)  # the instance, as built at import (width 0.5)
    assert head_shape(f"{f}:build") == (10, 8)


def test_literal_arguments_and_cli_arguments_reach_the_factory(folder: Path) -> None:
    f = folder / "my_net.py"
    assert head_shape(f"{f}:build(width=0.5, classes=3)") == (3, 4)
    assert head_shape(f"{f}:Net(2.0)") == (10, 16)  # positional, to a class
    assert head_shape(f"{f}:build", args={"classes": 7}) == (7, 8)
    assert head_shape(f"{f}:build(0.5)", args={"classes": 7}) == (7, 4)


def test_the_sibling_folder_leaves_sys_path_after_loading(folder: Path) -> None:
    load_model(f"{folder / 'my_net.py'}:build")
    assert str(folder) not in sys.path


def test_a_factory_with_example_inputs_and_an_input_shape(folder: Path) -> None:
    f = folder / "my_net.py"
    assert load_model(f"{f}:sized").example_inputs[0].shape == (1, 3, 16, 16)
    reshaped = load_model(f"{f}:sized", input_shape=(1, 3, 24, 32))
    assert reshaped.example_inputs[0].shape == (1, 3, 24, 32)
    assert reshaped.preprocess is None  # a factory's own inputs record no image contract


def test_random_weights_are_told_for_every_form(folder: Path) -> None:
    f = folder / "my_net.py"
    assert load_model(f"{f}:net").random_weights  # the instance is re-made under another seed
    assert load_model(f"{f}:build(width=0.5)").random_weights


@pytest.mark.parametrize(
    ("tail", "kw", "words"),
    [
        (":build(width=x)", {}, ["argument `x` is not a Python literal"]),
        (":build(**k)", {}, ["`**` arguments are not taken"]),
        (":build(width=", {}, ["do not parse"]),
        (":Net(foo=1)", {}, ["Net() does not take these arguments", "--arg"]),
        (":build(width=1)", {"args": {"width": 2}}, ["`width` is given in model spec"]),
        (":net(1)", {}, ["is a model instance", "takes no arguments"]),
        (":NOT_A_MODEL", {}, ["is a int, not a model class"]),
        (":nothing", {}, ["has no `nothing`", "Net, block, broken, build, sized"]),
        (":broken", {}, ["failed while calling broken()", "KeyError", "my_net.py:"]),
        (":1bad", {}, ["expected `file.py:name`"]),
    ],
)
def test_each_mistake_is_one_line_naming_the_spec(
    folder: Path, tail: str, kw: dict[str, object], words: list[str]
) -> None:
    spec = f"{folder / 'my_net.py'}{tail}"
    with pytest.raises(ZooError) as err:
        load_model(spec, **kw)  # type: ignore[arg-type]
    text = str(err.value)
    assert "\n" not in text
    for word in words:
        assert word in text


def test_a_missing_sibling_names_the_file_and_the_line(folder: Path) -> None:
    with pytest.raises(
        ZooError, match=r"loading bad_import.py: ModuleNotFoundError.*bad_import.py:1"
    ):
        load_model(f"{folder / 'bad_import.py'}:x")


def test_a_missing_file_and_args_on_a_torchvision_name() -> None:
    with pytest.raises(ZooError, match=r"model file `nope/x\.py` does not exist"):
        load_model("nope/x.py:build")
    with pytest.raises(ZooError, match=r"--arg is for `file\.py:name` model specs"):
        load_model("resnet18", args={"width": 1})


def test_parse_spec_and_cli_args() -> None:
    spec = parse_spec("pkg.mod:build(1, (2, 3), name='a:b')")
    assert (spec.where, spec.name, spec.args, spec.kwargs) == (
        "pkg.mod",
        "build",
        (1, (2, 3)),
        {"name": "a:b"},
    )
    assert parse_cli_args(["width=0.5", "act=relu", "sizes=[1, 2]"]) == {
        "width": 0.5,
        "act": "relu",
        "sizes": [1, 2],
    }
    with pytest.raises(ZooError, match="expected key=value"):
        parse_cli_args(["width"])
    with pytest.raises(ZooError, match="given twice"):
        parse_cli_args(["a=1", "a=2"])
    assert is_model_file("net.pt2")
    assert is_model_file("x/full.PT")
    assert not is_model_file("my_net.py:load(path='w.pt')")


def test_a_package_module_spec_with_arguments() -> None:
    model = load_model("torch.nn:Conv2d(3, 4, 3)")
    assert isinstance(model.module, torch.nn.Conv2d)
    assert model.module.out_channels == 4


def test_two_folders_with_a_sibling_of_the_same_name(tmp_path: Path) -> None:
    heads = {}
    for width in (3, 5):
        folder = tmp_path / f"w{width}"
        folder.mkdir()
        (folder / "blocks.py").write_text(f"WIDTH = {width}\n")
        (folder / "net.py").write_text(
            "from torch import nn\nimport blocks\n\n"
            "def build():\n    return nn.Linear(2, blocks.WIDTH)\n"
        )
        heads[width] = load_model(f"{folder / 'net.py'}:build").module.out_features
    assert heads == {3: 3, 5: 5}
    assert "blocks" not in sys.modules


@pytest.mark.parametrize("marker", ["pyvenv.cfg", "site-packages"])
def test_a_venv_inside_the_project_folder_stays_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, marker: str
) -> None:
    """The common layout: the model file beside the project's `.venv`. The library it imports
    from there is third-party: building twice must not purge it; the user's sibling is."""
    lib = "mdla_test_venvlib"
    site = tmp_path / ".venv" / "lib" / "python3.11" / "site-packages"
    if marker == "site-packages":
        site = tmp_path / "env" / "site-packages"  # no pyvenv.cfg: the folder name says it
    (site / lib).mkdir(parents=True)
    if marker == "pyvenv.cfg":
        (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (site / lib / "__init__.py").write_text("WIDTH = 4\n")
    (tmp_path / "blocks.py").write_text("EXTRA = 1\n")
    (tmp_path / "net.py").write_text(
        f"from torch import nn\nimport blocks\nimport {lib}\n\n"
        f"def build():\n    return nn.Linear(2, {lib}.WIDTH + blocks.EXTRA)\n"
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, lib, raising=False)
    first = load_model(f"{tmp_path / 'net.py'}:build").module
    module = sys.modules.get(lib)
    assert module is not None  # the third-party module stays cached
    second = load_model(f"{tmp_path / 'net.py'}:build").module
    assert sys.modules[lib] is module
    assert first.out_features == second.out_features == 5
    assert "blocks" not in sys.modules  # the user's own file is dropped
    monkeypatch.delitem(sys.modules, lib)


HOSTILE = [
    ("{[1]: 2}", "is not a valid literal (unhashable type: 'list')"),  # was TypeError
    ("-" * 100_000 + "1", "more than 4096 characters"),  # was MemoryError
    ("+".join(["1"] * 40_000), "more than 4096 characters"),  # was RecursionError
    ("-" * 3000 + "1", "nested too deeply"),  # short, but the parser recursed
    ("[" * 40 + "]" * 40, "nested too deeply"),
    ("1e400", "inf is not a finite number"),
    ("[1, (2, -1e999j)]", "is not a finite number"),
]


@pytest.mark.parametrize(("text", "message"), HOSTILE)
def test_hostile_spec_arguments_are_spec_errors(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=re.escape(message)) as err:
        parse_spec(f"net.py:build({text})")
    assert len(str(err.value)) < 300  # the spec is shortened in the message


@pytest.mark.parametrize(("text", "message"), HOSTILE)
def test_hostile_arg_values_are_spec_errors(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=re.escape(message)):
        parse_cli_args([f"k={text}"])


def test_a_spec_error_is_a_usage_error_in_the_workbench(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from workbench.cli import app

    (tmp_path / "net.py").write_text("def build(**k):\n    raise SystemExit('ran')\n")
    for args in (
        [f"{tmp_path / 'net.py'}:build({{[1]: 2}})"],
        [f"{tmp_path / 'net.py'}:build(" + "-" * 100_000 + "1)"],
        [f"{tmp_path / 'net.py'}:build", "--arg", "k=" + "+".join(["1"] * 40_000)],
        [f"{tmp_path / 'net.py'}:build", "--arg", "k=1e400"],
    ):
        result = CliRunner().invoke(app, ["compile", *args, "-o", str(tmp_path / "x.mdla")])
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith("error: ")
        assert "internal error" not in result.stderr
        assert result.stderr.count("\n") == 1
        assert len(result.stderr) < 300
