"""The semantic validation (format/semantic.py, C format/manifest_check.c:chk_semantics) beyond the
one-case-per-check table of `malformed_cases`: the budget limits and their flags in both readers,
errors that name the file, and every manifest the project writes passing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import msgpack  # type: ignore[import-untyped]
import numpy as np
import pytest

from mdla_ir.builders import random_qgraph
from mdla_ir.ops import OpKind
from mdla_runtime import Budget, ManifestError, errors, load, open_target
from mdla_runtime.build import engine_path
from mdla_runtime.format.manifest import parse, to_bytes
from mdla_runtime.format.msgpack_reader import Decoder, child, offset_of
from mdla_runtime.testing import chain_qgraph, pack, sample_manifest, split

KINDS = [
    OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D, OpKind.FULLY_CONNECTED, OpKind.AVERAGE_POOL_2D,
    OpKind.ADD, OpKind.MUL, OpKind.SOFTMAX, OpKind.CONCATENATION, OpKind.PAD, OpKind.RESHAPE,
    OpKind.MEAN, OpKind.RESIZE_BILINEAR,
]  # fmt: skip
LIPREAD = Path(__file__).parents[2] / "apps/lipread/src/lipread/weights"


def engine_check(path: Path, *flags: str) -> dict[str, object]:
    cmd = [str(engine_path()), str(path), "--check", "--json", *flags]
    out: dict[str, object] = json.loads(subprocess.run(cmd, capture_output=True, text=True).stdout)
    return out


def both(path: Path, budget: Budget, *flags: str) -> tuple[object, object]:
    """(kind, field, offset) from each reader, or "ok"."""
    try:
        load(path, budget)
        py: object = "ok"
    except ManifestError as exc:
        py = (exc.kind, exc.field, exc.offset)
    out = engine_check(path, *flags)
    err = out.get("error")
    c = "ok" if out["ok"] else tuple(err[k] for k in ("kind", "field", "offset"))  # type: ignore[index]
    return py, c


def test_a_raised_tensor_limit_lets_both_readers_accept(tmp_path: Path) -> None:
    header, data = split(sample_manifest())
    big = {"type": 14, "dims": [300, 1024, 1024], "scale": 0.5, "zero_point": 0}
    header["operands"].append(big)
    path = tmp_path / "big.mdla"
    path.write_bytes(pack(header, data))
    py, c = both(path, Budget())
    assert py == c
    assert py[:2] == ("OverBudget", f"operands[{len(header['operands']) - 1}].dims")  # type: ignore[index]
    with pytest.raises(errors.OverBudgetError, match="--max-tensor-mb"):
        load(path)
    assert both(path, Budget.of(max_tensor_mb=512), "--max-tensor-mb", "512") == ("ok", "ok")


def test_a_raised_total_limit_lets_both_readers_accept(tmp_path: Path) -> None:
    header, data = split(sample_manifest())
    header["operands"] += [{"type": 14, "dims": [200 << 20], "scale": 0.5}] * 6
    path = tmp_path / "many.mdla"
    path.write_bytes(pack(header, data))
    py, c = both(path, Budget())
    assert py == c
    assert py[0] == "OverBudget"  # type: ignore[index]
    assert both(path, Budget.of(max_total_mb=2048), "--max-total-mb", "2048") == ("ok", "ok")


def _values(blob: bytes) -> int:
    hlen = int.from_bytes(blob[12:20], "little")
    dec = Decoder(blob, 20, 20 + hlen)
    dec.decode()
    return dec.count


@pytest.mark.parametrize("limit", [1, 5, 100, -1, 0])
def test_a_lowered_header_value_limit_fails_identically(tmp_path: Path, limit: int) -> None:
    path = tmp_path / "m.mdla"
    path.write_bytes(sample_manifest())
    limit = limit if limit > 0 else _values(sample_manifest()) + limit  # one too few; exactly
    py, c = both(path, Budget.of(max_header_values=limit), "--max-header-values", str(limit))
    assert py == c
    assert py == "ok" if limit == _values(sample_manifest()) else py[0] == "OverBudget"  # type: ignore[index]


def test_errors_name_the_file(tmp_path: Path) -> None:
    header, data = split(sample_manifest())
    header["outputs"] *= 2
    path = tmp_path / "dup.mdla"
    path.write_bytes(pack(header, data))
    with pytest.raises(errors.DuplicateEntryError) as info:
        load(path)
    assert str(info.value).startswith(f"{path}: DuplicateEntry: `outputs[1].operand` at byte ")
    proc = subprocess.run(
        [str(engine_path()), str(path), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 1
    want = f"mdla-engine: {path}: DuplicateEntry: `outputs[1].operand` at byte {info.value.offset}:"
    assert proc.stderr.startswith(want)


def test_control_characters_never_reach_the_one_line_message(tmp_path: Path) -> None:
    header, data = split(sample_manifest())
    header["operands"][0] = {"a\nb\x00c\x7f": 1, **header["operands"][0]}
    path = tmp_path / "ctl.mdla"
    path.write_bytes(pack(header, data))
    with pytest.raises(errors.BadHeaderError) as info:
        load(path)
    assert "\n" not in str(info.value)
    assert info.value.field == "operands[0].a\\nb\\x00c\\x7f"
    proc = subprocess.run(
        [str(engine_path()), str(path), "--check"], capture_output=True, text=True
    )
    assert proc.stderr.count("\n") == 1
    assert "`operands[0].a\\nb\\x00c\\x7f`" in proc.stderr


def test_the_budget_reaches_the_engine() -> None:
    assert Budget().engine_args() == []
    budget = Budget.of(max_tensor_mb=512, max_header_values=7)
    assert budget.engine_args() == ["--max-tensor-mb", "512", "--max-header-values", "7"]
    assert open_target("emu", budget).budget == budget


def test_every_manifest_the_project_writes_passes(tmp_path: Path) -> None:
    blobs = [sample_manifest(), to_bytes(chain_qgraph())]
    blobs += [to_bytes(random_qgraph(k, np.random.default_rng(0))) for k in KINDS]
    blobs += [p.read_bytes() for p in LIPREAD.glob("*.mdla")]
    assert len(blobs) > 3
    for i, blob in enumerate(blobs):
        parse(blob)
        path = tmp_path / f"{i}.mdla"
        path.write_bytes(blob)
        assert engine_check(path)["ok"] is True


def test_every_field_path_names_one_value_even_with_keys_that_spell_paths() -> None:
    header = {
        "a.b": [1, {"dims[0]": 2, "dims": [3, 4]}],
        "x\n\x00\x7f": {"<key>": 5, "\\": 6, "k]": [[7]]},
        "dims": {"0": 8},
    }
    blob = msgpack.packb(header)
    values: list[tuple[str, object]] = []

    def walk(field: str, value: object) -> None:
        values.append((field, value))
        if isinstance(value, dict):
            for k, v in value.items():
                walk(child(field, k), v)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(f"{field}[{i}]", v)

    walk("header", header)
    assert len({f for f, _ in values}) == len(values)  # no two values share a path
    for field, value in values:
        at = offset_of(blob, 0, len(blob), field)
        unpacker = msgpack.Unpacker()
        unpacker.feed(blob[at:])
        assert next(unpacker) == value, field
