"""The zoo's model names, known without importing torch: a typo is refused in milliseconds, with
the nearest names, instead of after torch's and torchvision's imports.

    check_name("resnet81")   # ZooError: unknown model `resnet81`; did you mean resnet18, ...?
    zoo_names()              # the zoo's own names and torchvision's builders

torchvision's builders are read from its source files (each is a function decorated with
`@register_model()`, or `@register_model(name="...")`), found with `importlib.util.find_spec`,
which locates the package without running it. When torchvision is absent, or its files yield no
names, nothing is refused here: the import that follows says what is wrong.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import re
from pathlib import Path

from mdla_zoo.errors import ZooError

# The zoo's own names (mdla_zoo.models: MTCNN_SIZES, LITE_SIZES; mdla_zoo.detection: DECODERS);
# a test holds them equal to those tables.
OWN_NAMES = (
    "efficientnet_lite0",
    "efficientnet_lite1",
    "efficientnet_lite2",
    "mtcnn_pnet",
    "mtcnn_rnet",
    "mtcnn_onet",
    "ssdlite320_mobilenet_v3_large",
)
_REGISTERED = re.compile(r"@register_model\(\s*(?:name\s*=\s*[\"']([\w.]+)[\"'])?\s*\)")
_DEF = re.compile(r"^def\s+(\w+)\s*\(", re.MULTILINE)
SUGGESTED = 3  # names a typo's line offers


@functools.cache
def torchvision_names() -> frozenset[str]:
    """torchvision's model builders, from its source files (empty without torchvision)."""
    try:
        spec = importlib.util.find_spec("torchvision")
    except (ImportError, ValueError):
        return frozenset()
    roots = list(spec.submodule_search_locations or ()) if spec is not None else []
    names: set[str] = set()
    for root in roots:
        for path in sorted((Path(root) / "models").rglob("*.py")):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            names.update(_registered(text))
    return frozenset(names)


def _registered(text: str) -> list[str]:
    """The names a torchvision source file registers: each `@register_model(...)`'s `name`,
    else the function defined next after it (other decorators may span lines between)."""
    names = []
    for match in _REGISTERED.finditer(text):
        defined = _DEF.search(text, match.end())
        name = match.group(1) or (defined.group(1) if defined else None)
        if name:
            names.append(name)
    return names


def zoo_names() -> frozenset[str]:
    return frozenset(OWN_NAMES) | torchvision_names()


def check_name(spec: str) -> None:
    """Refuse a bare model name (an identifier: not a file, nor `file.py:name`) the zoo does
    not know, naming the closest ones; anything else, and any name while torchvision's list is
    unknown, passes."""
    if not spec.isidentifier() or Path(spec).exists():
        return
    tv = torchvision_names()
    if not tv or spec in tv or spec in OWN_NAMES:
        return
    close = difflib.get_close_matches(spec, sorted(tv | set(OWN_NAMES)), n=SUGGESTED, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise ZooError(
        f"unknown model `{spec}`: not a torchvision builder, `efficientnet_lite0`, nor "
        f"`file.py:factory` / `package.module:factory`{hint}"
    )


def check_shape(spec: str, shape: tuple[int, ...] | None) -> None:
    """A zoo model takes one image, N,C,H,W = 1,3,H,W: another --input-shape is refused before
    anything is imported (a user's own model is checked once built, `mdla_zoo.models`)."""
    if shape is None or not spec.isidentifier() or spec not in zoo_names():
        return
    if len(shape) != 4 or shape[:2] != (1, 3):
        text = ",".join(map(str, shape))
        side = shape[-1]
        raise ZooError(
            f"--input-shape `{text}`: `{spec}` takes one image, N,C,H,W = 1,3,H,W "
            f"(e.g. 1,3,{side},{side})"
        )
