"""The C reader (csrc/format/manifest.c, via `mdla-engine --check`) on the same files as the Python
reader: every malformed case gives the same error kind, field and byte offset; valid files of
every op kind pass; the C sources are warning-free under gcc and clang."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mdla_ir.builders import random_qgraph
from mdla_ir.ops import OpKind
from mdla_runtime import errors, save
from mdla_runtime.build import (
    CSRC,
    ENGINE_FLAGS,
    ENGINE_INCLUDES,
    ENGINE_LIBS,
    ENGINE_SOURCES,
    engine_path,
    generated_dir,
)
from mdla_runtime.format.manifest import parse
from mdla_runtime.testing import malformed_cases, pack, sample_manifest, split

CASES = {c.name: c for c in malformed_cases()}


def check(path: Path) -> tuple[int, dict[str, object]]:
    proc = subprocess.run(
        [str(engine_path()), str(path), "--check", "--json"], capture_output=True, text=True
    )
    return proc.returncode, json.loads(proc.stdout)


@pytest.mark.parametrize("name", sorted(CASES))
def test_c_reader_reports_what_the_python_reader_reports(tmp_path: Path, name: str) -> None:
    case = CASES[name]
    path = tmp_path / f"{name}.mdla"
    path.write_bytes(case.data)
    with pytest.raises(errors.ManifestError) as info:
        parse(case.data)
    code, out = check(path)
    assert code == 1
    assert out["ok"] is False
    err = out["error"]
    assert isinstance(err, dict)
    assert (err["kind"], err["field"], err["offset"]) == (
        info.value.kind,
        case.field,
        info.value.offset,
    )


def test_c_reader_text_message_names_kind_field_and_offset(tmp_path: Path) -> None:
    path = tmp_path / "m.mdla"
    path.write_bytes(CASES["misaligned"].data)
    proc = subprocess.run(
        [str(engine_path()), str(path), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 1
    assert "Misaligned: `operands[1].data` at byte" in proc.stderr


@pytest.mark.parametrize("kind", [OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D, OpKind.MEAN])
def test_c_reader_accepts_valid_files(tmp_path: Path, kind: OpKind) -> None:
    graph = random_qgraph(kind, np.random.default_rng(3))
    code, out = check(save(graph, tmp_path / "g.mdla"))
    assert code == 0
    assert out["manifest"]["operations"] == 1  # type: ignore[index]
    assert out["ops"] == [{"code": kind.name, "name": graph.ops[0].name}]


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_c_sources_are_warning_free(tmp_path: Path, cc: str) -> None:
    if shutil.which(cc) is None:
        pytest.fail(f"{cc} is missing: apt-get install -y {cc}")
    flags = ["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic", f"-I{CSRC}"]
    flags += [f"-I{generated_dir()}", *ENGINE_FLAGS, *(f"-I{d}" for d in ENGINE_INCLUDES)]
    srcs = [str(s) for s in ENGINE_SOURCES]
    proc = subprocess.run(
        [cc, *flags, *srcs, "-o", str(tmp_path / "engine"), *ENGINE_LIBS],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("recorded", ["export", "fx", None])
def test_both_readers_take_the_import_path_and_files_without_one(
    tmp_path: Path, recorded: str | None
) -> None:
    """`model.import_path` ("export" or "fx") is read by both readers; a file written before
    it was recorded (no key) still reads, as not recorded."""
    header, data = split(sample_manifest())
    if recorded is None:
        header["model"].pop("import_path")
    else:
        header["model"]["import_path"] = recorded
    blob = pack(header, data)
    assert parse(blob).provenance.import_path == (recorded or "")
    path = tmp_path / "m.mdla"
    path.write_bytes(blob)
    assert check(path)[0] == 0


@pytest.mark.parametrize("a16", [["conv1"], ["conv1", "conv2"], []])
def test_both_readers_take_an_a16_list_of_names(tmp_path: Path, a16: list[str]) -> None:
    """`model.quant.a16` is an array of strings (the C checker's "strs" kind): a valid list
    passes both readers (the malformed cases only show that a wrong one fails)."""
    header, data = split(sample_manifest())
    header["model"]["quant"]["a16"] = a16
    blob = pack(header, data)
    quant = parse(blob).provenance.quant
    assert quant is not None
    assert quant.a16 == tuple(a16)
    path = tmp_path / "m.mdla"
    path.write_bytes(blob)
    assert check(path)[0] == 0
