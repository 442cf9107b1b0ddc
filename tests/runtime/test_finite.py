"""Non-finite float32 constants (check 8: format/finite.py, C format/manifest_compute.c:chk_finite)
are refused by both readers alike: NaN, +inf and -inf in a TENSOR_FLOAT32 constant's data (the
GRU's weights of a float region), and a FLOAT32 scalar (SOFTMAX's beta) that is NaN, infinite or
beyond FLT_MAX; the finite files read."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from mdla_ir.builders import random_qgraph
from mdla_ir.ops import OpKind
from mdla_runtime import Budget, errors, load
from mdla_runtime.format.manifest import to_bytes
from mdla_runtime.testing import pack, split
from mdla_runtime.testing_float import float_region_qgraph
from tests.runtime.test_manifest_semantic import both

NAN_BITS = {"nan": 0x7FC00000, "-nan": 0xFFC12345, "inf": 0x7F800000, "-inf": 0xFF800000}


def _with_element(tmp: Path, bits: int, k: int = 5) -> tuple[Path, int]:
    """The float region's manifest with element k of its first float32 constant replaced."""
    header, data = split(to_bytes(float_region_qgraph()))
    i = next(i for i, o in enumerate(header["operands"]) if o["type"] == 3 and "data" in o)
    off = header["operands"][i]["data"][0] + 4 * k
    body = bytearray(data)
    body[off : off + 4] = struct.pack("<I", bits)
    path = tmp / "float.mdla"
    path.write_bytes(pack(header, bytes(body)))
    return path, i


@pytest.mark.parametrize("name", list(NAN_BITS))
def test_a_non_finite_weight_is_refused_by_both_readers(name: str, tmp_path: Path) -> None:
    path, i = _with_element(tmp_path, NAN_BITS[name])
    py, c = both(path, Budget())
    assert py == c
    assert py[:2] == ("NonFinite", f"operands[{i}].data")  # type: ignore[index]
    want = "nan" if "nan" in name else name  # a NaN's sign and payload are not shown
    with pytest.raises(errors.NonFiniteError, match=f"element 5 is {want};"):
        load(path)


def test_the_largest_finite_weight_reads(tmp_path: Path) -> None:
    path, _ = _with_element(tmp_path, 0x7F7FFFFF)  # FLT_MAX
    assert both(path, Budget()) == ("ok", "ok")


def _softmax(tmp: Path, beta: float) -> Path:
    header, data = split(to_bytes(random_qgraph(OpKind.SOFTMAX, np.random.default_rng(0))))
    (j,) = [j for j, o in enumerate(header["operands"]) if o["type"] == 0]
    header["operands"][j]["value"] = beta
    path = tmp / "softmax.mdla"
    path.write_bytes(pack(header, data))
    return path


@pytest.mark.parametrize("beta", [float("nan"), float("inf"), -float("inf"), 1e300, -3.5e38])
def test_a_non_finite_float32_scalar_is_refused_by_both_readers(
    beta: float, tmp_path: Path
) -> None:
    py, c = both(_softmax(tmp_path, beta), Budget())
    assert py == c
    assert py[0] == "NonFinite"  # type: ignore[index]
    assert str(py[1]).endswith(".value")  # type: ignore[index]


def test_finite_scalars_read(tmp_path: Path) -> None:
    assert both(_softmax(tmp_path, 3.4e38), Budget()) == ("ok", "ok")
