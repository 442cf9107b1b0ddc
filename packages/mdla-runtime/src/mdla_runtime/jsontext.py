"""Strict JSON for every `--json` and JSON file the apps write: never `NaN` or `Infinity`.

    dumps(doc)            # one line; dumps(doc, indent=1) for a file or a pretty print
    jsonable(value)       # what dumps serializes

A non-finite number is written as the string "nan", "inf" or "-inf" (a value that exists but
is no finite number: an exact SQNR is "inf"); a value that does not exist is null. Python's
json writes NaN and Infinity, which strict parsers (JavaScript's JSON.parse, jq, Go, Rust)
reject. NumPy scalars and arrays become numbers and lists; tuples become lists.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np


def jsonable(value: Any) -> Any:
    """`value` with non-finite floats as "nan", "inf", "-inf" and NumPy values as Python's."""
    if isinstance(value, np.generic | np.ndarray):
        value = value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def dumps(doc: Any, indent: int | None = None) -> str:
    """`doc` as strict JSON (ValueError, never NaN, if `jsonable` missed a case)."""
    return json.dumps(jsonable(doc), allow_nan=False, indent=indent)
