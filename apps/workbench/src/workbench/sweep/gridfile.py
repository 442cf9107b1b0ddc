"""`sweep --grid FILE`: the grid's axes from a TOML or JSON file, each key a list (an axis) or
one value (held fixed), checked with the key and its line named.

    methods = ["minmax", "mse"]               # or "minmax,mse"
    techniques = ["none", "cle", "cle+adaround"]
    a16 = ["none", "auto:10%", "auto:25%"]
    percentile = [99.9, 99.99]                # any of grid.FIELDS
    adaround = 300

    axes = read_grid(Path("grid.toml"), cli_methods, cli_techniques, cli_a16)
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import mdla_quant
from workbench.sweep.grid import FIELDS, TECHNIQUES, Axes, GridError, a16_axis, names

DEFAULTS = {"methods": "minmax,percentile,mse,entropy", "techniques": "none,cle,cle+adaround"}
KEYS = ("methods", "techniques", "a16", *FIELDS)
A16_SEP = ";"  # --a16 'none;auto:10%': the flag's entries (a pattern list has commas)


class GridFileError(GridError):
    """A grid file that does not parse or names a key or value wrongly."""


def _load(path: Path) -> tuple[dict[str, Any], str]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise GridFileError(f"--grid {path}: cannot read it ({exc.strerror})") from exc
    try:
        if path.suffix == ".toml":
            return tomllib.loads(text), text
        if path.suffix == ".json":
            doc = json.loads(text)
            if isinstance(doc, dict):
                return doc, text
            raise GridFileError(f"--grid {path}: expected one JSON object of axes")
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise GridFileError(f"--grid {path}: {exc}") from exc
    raise GridFileError(f"--grid {path}: write the grid as .toml or .json")


def line_of(text: str, key: str) -> int:
    """The line (from 1) where `key` is set, 0 if it cannot be found."""
    pattern = re.compile(rf"""^\s*["']?{re.escape(key)}["']?\s*[=:]""")
    for number, line in enumerate(text.splitlines(), 1):
        if pattern.match(line):
            return number
    return 0


def _values(key: str, raw: Any, where: str) -> tuple[Any, ...]:
    """The values of one key, each of its field's type (an int is a float too)."""
    want = FIELDS.get(key, str)
    items = raw if isinstance(raw, list) else [raw]
    out = []
    for item in items:
        ok = isinstance(item, want) and not isinstance(item, bool)
        if want is float and isinstance(item, int) and not isinstance(item, bool):
            item, ok = float(item), True
        if not ok:
            raise GridFileError(
                f"{where}: `{key}` takes {want.__name__} values (one, or a list), not {item!r}"
            )
        out.append(item)
    if not out:
        raise GridFileError(f"{where}: `{key}` is an empty list: give one value or more")
    return tuple(dict.fromkeys(out))


def read_grid(path: Path, methods: str | None, techniques: str | None, a16: str | None) -> Axes:
    """The axes `path` sets; a key also given as a flag is refused (say it in one place)."""
    doc, text = _load(path)
    flags = {"methods": methods, "techniques": techniques, "a16": a16}
    for key in doc:
        where = f"--grid {path}:{line_of(text, key)}"
        if key not in KEYS:
            raise GridFileError(f"{where}: unknown key `{key}`: expected one of {', '.join(KEYS)}")
        if flags.get(key) is not None:
            raise GridFileError(f"{where}: `{key}` is also given as --{key}: give it in one place")
    try:
        axes = _axes(path, doc, text)
    except GridFileError:
        raise
    except GridError as exc:
        raise GridFileError(str(exc)) from exc
    return flag_axes(methods, techniques, a16, axes)


def _axes(path: Path, doc: dict[str, Any], text: str) -> Axes:
    where = {k: f"--grid {path}:{line_of(text, k)}" for k in doc}
    got = {k: _values(k, v, where[k]) for k, v in doc.items()}
    fields = tuple((k, v) for k, v in got.items() if k in FIELDS)
    for key, values in fields:
        for value in values:
            _check_field(key, value, where[key])
    return Axes(
        names(got["methods"], mdla_quant.METHODS, where["methods"]) if "methods" in got else (),
        names(got["techniques"], list(TECHNIQUES), where["techniques"])
        if "techniques" in got
        else (),
        a16_axis(got["a16"], f"{where['a16']}: a16") if "a16" in got else (),
        fields,
    )


def _check_field(key: str, value: Any, where: str) -> None:
    """A field value QuantConfig would refuse, refused here with the line."""
    probe: dict[str, Any] = {key: value}
    if key == "reconstruction":
        probe["adaround"] = 1
    try:
        mdla_quant.QuantConfig(**probe)
    except (mdla_quant.QuantError, ValueError) as exc:
        raise GridFileError(f"{where}: `{key}` = {value!r}: {exc}") from exc


def flag_axes(
    methods: str | None, techniques: str | None, a16: str | None, axes: Axes | None = None
) -> Axes:
    """The axes the flags give (or the grid file's), the rest their defaults."""
    have = axes or Axes((), (), ())
    return Axes(
        have.methods or names(methods or DEFAULTS["methods"], mdla_quant.METHODS, "--methods"),
        have.techniques
        or names(techniques or DEFAULTS["techniques"], list(TECHNIQUES), "--techniques"),
        have.a16 or (a16_axis(a16.split(A16_SEP), "--a16") if a16 is not None else (None,)),
        have.fields,
    )
