"""A user's own model named by code: `file.py:name`, `package.module:name`, with arguments.

    my_net.py:build                 a function: called, returns a module or (module, inputs)
    my_net.py:Net                   a class: instantiated (with no arguments unless given some)
    my_net.py:net                   an instance: used as it is
    my_net.py:build(width=0.5, 3)   Python literals only (ast.literal_eval: nothing is evaluated)

`--arg key=value` (repeatable) adds keyword arguments; a value that is not a Python literal is
a string (`--arg act=relu`). While a file loads and its factory runs, the file's folder is first
on sys.path, so `import blocks` beside `my_net.py` works. Whatever the user's code raises
becomes one ZooError line naming the spec, the exception and the line of the user's file.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import inspect
import math
import os
import sys
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mdla_zoo.errors import SpecError, ZooError


@dataclass(frozen=True)
class CodeSpec:
    """`where:name(args)` split: `where` is a .py path or a dotted module name."""

    where: str
    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    called: bool = False  # the spec wrote parentheses (even empty ones)


MODEL_SUFFIXES = (".pt", ".pth", ".pt2", ".ts", ".torchscript", ".jit")
MAX_SPEC_CHARS = 4096  # a spec, or an --arg value, longer than this is refused unparsed
MAX_DEPTH = 32  # literal arguments nested deeper than this (lists of lists, unary minus) too


def is_code_spec(spec: str) -> bool:
    head = spec.split("(", 1)[0]
    return ":" in head


def is_model_file(spec: str) -> bool:
    """A whole-model file (`mdla_zoo.files`): named by its suffix, read by its contents."""
    return spec.lower().endswith(MODEL_SUFFIXES) and not is_code_spec(spec)


def parse_spec(spec: str) -> CodeSpec:
    """Split `spec`; arguments in parentheses must be Python literals (finite numbers, nested
    at most MAX_DEPTH deep, the spec at most MAX_SPEC_CHARS long): a SpecError otherwise."""
    head, paren, _ = spec.partition("(")
    where, _, name = head.rpartition(":")
    name = name.strip()
    if not where or not name.isidentifier():
        raise SpecError(
            f"model spec `{_short(spec)}`: expected `file.py:name` or `package.module:name`, "
            "optionally with literal arguments: `my_net.py:build(width=0.5)`"
        )
    if not paren:
        return CodeSpec(where, name)
    what = f"model spec `{_short(spec)}`"
    try:
        call = _tree(f"{name}{spec[len(head) :]}", what)
    except SyntaxError as exc:
        raise SpecError(f"{what}: its arguments do not parse ({exc.msg})") from None
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise SpecError(f"{what}: expected `{name}(arguments)` after the colon")
    if any(kw.arg is None for kw in call.keywords):
        raise SpecError(f"{what}: `**` arguments are not taken; name each one")
    args = tuple(_literal(a, what) for a in call.args)
    kwargs = {str(kw.arg): _literal(kw.value, what) for kw in call.keywords}
    return CodeSpec(where, name, args, kwargs, called=True)


def _short(text: str) -> str:
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"


def _tree(source: str, what: str) -> ast.expr:
    """`source` parsed as one expression; SpecError past MAX_SPEC_CHARS or MAX_DEPTH (checked
    before and after parsing: the parser itself recurses), SyntaxError as the parser says."""
    if len(source) > MAX_SPEC_CHARS:
        raise SpecError(f"{what}: more than {MAX_SPEC_CHARS} characters")
    try:
        tree = ast.parse(source, mode="eval").body
    except (RecursionError, MemoryError):
        raise SpecError(f"{what}: nested too deeply (at most {MAX_DEPTH} levels)") from None
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise SpecError(f"{what}: nested too deeply (at most {MAX_DEPTH} levels)")
        stack += [(child, depth + 1) for child in ast.iter_child_nodes(node)]
    return tree


def _literal(node: ast.expr, what: str) -> Any:
    try:
        return _value(node, what)
    except ValueError:
        raise SpecError(
            f"{what}: argument `{_short(ast.unparse(node))}` is not a Python literal "
            "(numbers, strings, tuples, lists, dicts, True/False/None); build other values "
            "inside the factory"
        ) from None


def _value(node: ast.expr, what: str) -> Any:
    """The literal `node` is; ValueError if it is no literal, SpecError if it is an invalid
    one (`{[1]: 2}`: a list as a dict key; an infinite number)."""
    try:
        value = ast.literal_eval(node)
    except TypeError as exc:
        raise SpecError(
            f"{what}: argument `{_short(ast.unparse(node))}` is not a valid literal ({exc})"
        ) from None
    _finite(value, what)
    return value


def _finite(value: Any, what: str) -> None:
    """SpecError for an infinite number anywhere in `value` (`1e400` reads as inf)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, float | complex) and not all(math.isfinite(x) for x in (v.real, v.imag)):
            raise SpecError(f"{what}: {v} is not a finite number")
        if isinstance(v, dict):
            stack += [*v.keys(), *v.values()]
        elif isinstance(v, list | tuple | set | frozenset):
            stack += list(v)


def parse_cli_args(items: Sequence[str]) -> dict[str, Any]:
    """`--arg key=value` items: the value as a Python literal, else as a string; a value that
    looks like a literal but is not a valid one (an unhashable key, an infinite number, too
    long or too deeply nested) is a SpecError, as in a spec."""
    out: dict[str, Any] = {}
    for item in items:
        key, eq, text = item.partition("=")
        key = key.strip()
        if not eq or not key.isidentifier():
            raise SpecError(f"--arg `{_short(item)}`: expected key=value (e.g. --arg width=0.5)")
        if key in out:
            raise SpecError(f"--arg `{key}` is given twice")
        what = f"--arg `{key}`"
        try:
            out[key] = _value(_tree(text.strip(), what), what)
        except (SyntaxError, ValueError):  # not a literal: the text itself
            out[key] = text.strip()
    return out


@contextmanager
def folder_on_path(folder: str | None) -> Iterator[None]:
    """`folder` first on sys.path for the duration, so its sibling imports resolve to its own
    files: a module of the same name cached from elsewhere (another model's `blocks.py`) is set
    aside meanwhile and put back after, and the folder's modules imported meanwhile are dropped
    from the cache after (the objects built from them keep them alive). Only the user's own
    files count as the folder's: a module installed in a virtual environment or site-packages
    inside the folder (a project's `.venv`) is a third-party one and stays cached."""
    if folder is None:
        yield
        return
    root = Path(folder).resolve()
    shadowed = {
        name: module
        for name, module in list(sys.modules.items())
        if _is_sibling(root, name.split(".")[0]) and not _own(module, root)
    }
    for name in shadowed:
        del sys.modules[name]
    before = set(sys.modules)
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
        for name in set(sys.modules) - before:
            if _own(sys.modules[name], root):
                del sys.modules[name]
        sys.modules.update(shadowed)


def _is_sibling(root: Path, top: str) -> bool:
    return (root / f"{top}.py").is_file() or (root / top / "__init__.py").is_file()


def _own(module: Any, root: Path) -> bool:
    """`module` is one of the user's files under `root`: not an installed one (under a
    site-packages, an interpreter prefix, or a folder holding a venv's `pyvenv.cfg`)."""
    file = getattr(module, "__file__", None)
    if not isinstance(file, str):
        return False
    path = Path(file).resolve()
    if not path.is_relative_to(root):
        return False
    parts = path.relative_to(root).parts
    if any(p in ("site-packages", "dist-packages") for p in parts):
        return False
    prefixes = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    if any(path.is_relative_to(p) for p in prefixes):
        return False
    venvs = (root.joinpath(*parts[:i]) / "pyvenv.cfg" for i in range(1, len(parts)))
    return not any(v.is_file() for v in venvs)


def build(spec: str, extra: Mapping[str, Any] | None = None) -> Any:
    """Load `spec`'s file or module afresh and call / instantiate / take its object."""
    code = parse_spec(spec)
    kwargs = dict(code.kwargs)
    for key, value in (extra or {}).items():
        if key in kwargs:
            raise ZooError(f"argument `{key}` is given in model spec `{spec}` and by --arg")
        kwargs[key] = value
    folder = _folder(code.where)
    with folder_on_path(folder):
        module = _import(code, spec)
        obj = getattr(module, code.name, None)
        if obj is None:
            found = sorted(n for n, v in vars(module).items() if _offers_model(n, v))
            raise ZooError(
                f"`{code.where}` has no `{code.name}` (model spec `{spec}`; it defines: "
                f"{', '.join(found) or 'no classes or functions'})"
            )
        return _make(obj, code, kwargs, spec)


def _offers_model(name: str, value: Any) -> bool:
    return not name.startswith("_") and (inspect.isclass(value) or inspect.isfunction(value))


def _folder(where: str) -> str | None:
    return str(Path(where).resolve().parent) if where.endswith(".py") else None


def _import(code: CodeSpec, spec: str) -> Any:
    where = code.where
    if not where.endswith(".py"):
        try:
            return importlib.import_module(where)
        except ModuleNotFoundError as exc:
            raise ZooError(f"cannot import `{where}` for model spec `{spec}`: {exc}") from None
        except Exception as exc:
            raise user_error(exc, spec, "importing it") from exc
    path = Path(where)
    if not path.is_file():
        raise ZooError(f"model file `{where}` does not exist (model spec `{spec}`)")
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    mod_name = f"_mdla_user_{path.stem}_{digest}"
    loader = importlib.util.spec_from_file_location(mod_name, path)
    if loader is None or loader.loader is None:
        raise ZooError(f"cannot load `{where}` as a Python module")
    module = importlib.util.module_from_spec(loader)
    sys.modules[mod_name] = module  # dataclasses and pickling look the module up by name
    try:
        loader.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(mod_name, None)
        raise user_error(exc, spec, f"loading {path.name}") from exc
    return module


def _make(obj: Any, code: CodeSpec, kwargs: dict[str, Any], spec: str) -> Any:
    import torch.nn as nn

    if isinstance(obj, nn.Module):
        if code.called or kwargs:
            raise ZooError(
                f"`{code.name}` in `{code.where}` is a model instance: it takes no arguments "
                f"(name `{code.where}:{type(obj).__name__}` to build one with arguments)"
            )
        return obj
    if not callable(obj):
        raise ZooError(
            f"`{code.name}` in `{code.where}` is a {type(obj).__name__}, not a model class, "
            "function or instance"
        )
    call: Callable[..., Any] = obj
    try:
        inspect.signature(call).bind(*code.args, **kwargs)
    except TypeError as exc:
        raise ZooError(
            f"model spec `{spec}`: {code.name}() does not take these arguments ({exc}); "
            f"give them as `{code.where}:{code.name}(key=value)` or --arg key=value"
        ) from None
    except ValueError:  # a builtin without a signature: let the call say
        pass
    try:
        return call(*code.args, **kwargs)
    except Exception as exc:
        raise user_error(exc, spec, f"calling {code.name}()") from exc


def user_error(exc: BaseException, spec: str, doing: str) -> ZooError:
    """One line for an exception the user's code raised: what, and the line of their file."""
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if f"{os.sep}mdla_zoo{os.sep}" not in f.filename and "importlib" not in f.filename
    ]
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    text = " ".join(str(exc).split()) or "(no message)"
    return ZooError(
        f"model spec `{spec}` failed while {doing}: {type(exc).__name__}: {text}{where}"
    )
