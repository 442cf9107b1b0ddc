"""`binding.options`: an option dataclass declared once becomes every command's options, with
their help; the body gets the dataclass back. The commands that compile share one block."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from dataclasses import dataclass, field
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from workbench.cli import app
from workbench.commands.binding import options
from workbench.commands.compile import compile_command
from workbench.commands.options import CompileFlags, InputFlags
from workbench.commands.tune import tune_command


@dataclass(frozen=True)
class Inner:
    level: Annotated[int, typer.Option("--level", help="How deep it goes.")] = 1


@dataclass(frozen=True)
class Outer:
    name: Annotated[str, typer.Option("--name", help="Who is asking.")] = "nobody"
    loud: Annotated[bool, typer.Option("--loud", help="Shout it.")] = False
    inner: Inner = field(default_factory=Inner)


def toy_app(**defaults: int) -> tuple[typer.Typer, list[tuple[str, Outer]]]:
    seen: list[tuple[str, Outer]] = []
    toy = typer.Typer()

    @toy.command()
    @options(**defaults)
    def greet(word: Annotated[str, typer.Argument()], flags: Outer) -> None:
        seen.append((word, flags))

    @toy.command()
    def other() -> None:  # a second command, so the first is named on the command line
        pass

    return toy, seen


def test_the_fields_are_options_with_their_help_and_come_back_as_the_dataclass() -> None:
    toy, seen = toy_app()
    runner = CliRunner()
    help_text = runner.invoke(toy, ["greet", "--help"], env={"COLUMNS": "120"}).output
    for flag, text in (("--name", "Who is asking."), ("--loud", "Shout it."), ("--level", "How")):
        assert flag in help_text
        assert text in help_text
    assert runner.invoke(toy, ["greet", "hi", "--name", "ann", "--level", "3"]).exit_code == 0
    assert runner.invoke(toy, ["greet", "yo", "--loud"]).exit_code == 0
    assert seen == [
        ("hi", Outer("ann", False, Inner(3))),
        ("yo", Outer("nobody", True, Inner(1))),
    ]


def test_a_command_may_change_a_default_but_not_invent_an_option() -> None:
    toy, seen = toy_app(level=7)
    assert CliRunner().invoke(toy, ["greet", "hi"]).exit_code == 0
    assert seen == [("hi", Outer(inner=Inner(7)))]
    with pytest.raises(TypeError, match="no option"):
        toy_app(levels=7)


def test_an_option_declared_twice_is_refused() -> None:
    def twice(name: Annotated[str, typer.Option("--name")], flags: Outer) -> None:
        pass

    with pytest.raises(TypeError, match="declares an option twice"):
        options()(twice)


def flag_names(cls: type) -> list[str]:
    """The command-line names of an option dataclass's fields (nested ones too), as their
    typer.Option declares them."""
    hints = typing.get_type_hints(cls, include_extras=True)
    names: list[str] = []
    for f in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[f.name]):  # a nested block
            names += flag_names(hints[f.name])
        else:
            (option,) = hints[f.name].__metadata__
            decls = (option.default, *(option.param_decls or ()))  # Annotated: the first is default
            names.append(next(d for d in decls if isinstance(d, str) and d.startswith("--")))
    return names


@pytest.mark.parametrize("command", ["compile", "tune", "validate", "export"])
def test_every_compiling_command_takes_the_whole_block(command: str) -> None:
    help_text = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"}).output
    missing = [f for f in flag_names(CompileFlags) if f not in help_text]
    assert len(flag_names(CompileFlags)) > 16
    assert not missing, f"{command} lacks {missing}"


def test_run_takes_the_input_block() -> None:
    help_text = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"}).output
    assert all(f in help_text for f in flag_names(InputFlags))


def test_tune_calibrates_on_four_by_default() -> None:
    assert inspect.signature(tune_command).parameters["count"].default == 4
    assert inspect.signature(compile_command).parameters["count"].default == 6
