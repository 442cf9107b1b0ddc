"""One declaration of an option block, shared by every command that takes it.

Typer reads a command's options from its signature. `@options` rewrites the signature: a
parameter annotated with an option dataclass (every field an `Annotated[..., typer.Option]`
with its default, or another option dataclass) stands for all of its fields, and the
command's body receives the dataclass rebuilt from them.

    @dataclass(frozen=True)
    class Quant:
        method: Method = MethodName.percentile
        rounding: Rounding = RoundingName.double

    @options(count=4)                     # keyword: another default for a field, here
    def tune(model: Annotated[str, typer.Argument()], quant: Quant) -> None: ...

`tune --help` lists --method and --rounding with their help, as if declared in `tune`.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def is_group(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _fields(cls: type, defaults: dict[str, Any]) -> list[inspect.Parameter]:
    """The command parameters `cls` stands for (nested groups flattened, in field order)."""
    hints = typing.get_type_hints(cls, include_extras=True)
    params: list[inspect.Parameter] = []
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if is_group(tp):
            params += _fields(tp, defaults)
            continue
        default = defaults.get(f.name, f.default)
        if default is dataclasses.MISSING:
            raise TypeError(f"option field `{cls.__name__}.{f.name}` needs a default")
        params.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=default))
        params[-1] = params[-1].replace(annotation=tp)
    return params


def _build(cls: type, values: dict[str, Any]) -> Any:
    """`cls` from the command's keyword values (popping those it takes)."""
    hints = typing.get_type_hints(cls)
    kwargs = {
        f.name: _build(hints[f.name], values) if is_group(hints[f.name]) else values.pop(f.name)
        for f in dataclasses.fields(cls)
    }
    return cls(**kwargs)


def options(**defaults: Any) -> Callable[[F], F]:
    """Expand each option-dataclass parameter of the decorated command (module docstring);
    `defaults` replace fields' defaults for this command."""

    def decorate(fn: F) -> F:
        hints = typing.get_type_hints(fn, include_extras=True)
        groups: dict[str, type] = {}
        params: list[inspect.Parameter] = []
        for name, param in inspect.signature(fn).parameters.items():
            if is_group(hints[name]):
                groups[name] = hints[name]
                params += _fields(hints[name], defaults)
            else:
                params.append(param.replace(kind=param.KEYWORD_ONLY, annotation=hints[name]))
        names = [p.name for p in params]
        if len(set(names)) != len(names):
            raise TypeError(f"`{fn.__name__}` declares an option twice: {sorted(names)}")
        if set(defaults) - set(names):
            raise TypeError(f"`{fn.__name__}` has no option {sorted(set(defaults) - set(names))}")

        @functools.wraps(fn)
        def command(**values: Any) -> Any:
            built = {name: _build(cls, values) for name, cls in groups.items()}
            return fn(**values, **built)

        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return typing.cast(F, command)

    return decorate
