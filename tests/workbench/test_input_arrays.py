"""Input arrays (`run X.npy`, `--calib DIR` of .npy/.npz): a header is checked before numpy
allocates what it claims, and NaN or infinite values are refused with the place of the first."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest
from numpy.lib import format as npy
from typer.testing import CliRunner

import mdla_compile.inputs
from mdla_compile import CompileError
from mdla_compile.inputs import load_sample
from workbench.cli import app

SHAPE = ((1, 3, 8, 8),)


def lying_npy(count: int) -> bytes:
    """A .npy whose header claims `count` float32 values, followed by 16 bytes of data."""
    buf = io.BytesIO()
    npy.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False, "shape": (count,)})
    return buf.getvalue() + bytes(16)


def test_a_header_claiming_10_to_the_15_elements_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "huge.npy"
    path.write_bytes(lying_npy(10**15))
    with pytest.raises(
        CompileError,
        match=r"huge.npy`: its header claims shape \[1000000000000000\] of float32 "
        r"\(4000000000000000 bytes\); the file holds 16 bytes of data",
    ):
        load_sample(path, SHAPE, None, "m")


def test_the_same_inside_an_npz(tmp_path: Path) -> None:
    path = tmp_path / "huge.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("x.npy", lying_npy(10**15))
    with pytest.raises(CompileError, match=r"huge.npz` array `x`: its header claims shape"):
        load_sample(path, SHAPE, None, "m")


def test_a_header_past_the_array_cap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mdla_compile.inputs, "MAX_ARRAY_BYTES", 100)
    np.save(tmp_path / "x.npy", np.zeros(SHAPE[0], np.float32))
    with pytest.raises(CompileError, match="more than the 0 MiB an input array may have"):
        load_sample(tmp_path / "x.npy", SHAPE, None, "m")


@pytest.mark.parametrize(
    ("value", "dtype", "shown"),
    [(np.nan, np.float32, "nan"), (np.inf, np.float64, "inf"), (1e300, np.float64, "inf")],
)
def test_non_finite_inputs_are_refused(
    tmp_path: Path, value: float, dtype: type, shown: str
) -> None:
    x = np.zeros(SHAPE[0], dtype)
    x[0, 1, 2, 3] = value
    np.save(tmp_path / "x.npy", x)
    with pytest.raises(
        CompileError,
        match=rf"x.npy` array 0 holds 1 NaN or infinite value\(s\) in float32 \(the first at "
        rf"\[0, 1, 2, 3\]: {shown}\); a model's input must be finite numbers",
    ):
        load_sample(tmp_path / "x.npy", SHAPE, None, "m")


def test_run_refuses_them_with_exit_1(
    runner: CliRunner, artifacts: dict[str, Path], tmp_path: Path
) -> None:
    (tmp_path / "huge.npy").write_bytes(lying_npy(10**15))
    result = runner.invoke(app, ["run", str(artifacts["tiny"]), str(tmp_path / "huge.npy")])
    assert result.exit_code == 1, result.output
    assert "its header claims shape [1000000000000000]" in result.stderr
    assert "MemoryError" not in result.stderr
