"""Partitions in the .mdla (format 3, issue 17): what the writer records, how both readers read
a partitioned file and a format-2 one (one partition on the model's device), host operations,
and the engine running them partition by partition. The malformed partition classes are in
`mdla_runtime.testing.partition_cases`, run through both readers by test_manifest(_c).py and
seeded into the fuzz harnesses by test_fuzz.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mdla_emu import build_emulator
from mdla_ir.schema import HOST_BY_CODE, HOST_CODES, OpKind
from mdla_runtime import errors, save
from mdla_runtime.build import engine_path
from mdla_runtime.format import container as fmt
from mdla_runtime.format.manifest import PartitionSpec, parse, to_bytes
from mdla_runtime.testing import pack, partitioned_qgraph, sample_manifest, split
from tests.runtime.test_engine import inputs_for


def check(path: Path) -> dict[str, object]:
    proc = subprocess.run(
        [str(engine_path()), str(path), "--check", "--json"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out: dict[str, object] = json.loads(proc.stdout)
    return out


@pytest.fixture(scope="module")
def parts_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save(partitioned_qgraph(), tmp_path_factory.mktemp("parts") / "parts.mdla")


def test_the_writer_records_each_partition(parts_file: Path) -> None:
    graph = partitioned_qgraph()
    m = parse(parts_file.read_bytes())
    index = {o.name: i for i, o in enumerate(m.operands) if o.name}
    x, c, g, a = (index[n] for n in "xcga")
    assert m.version == fmt.FORMAT_VERSION == 3
    assert m.partitions == (
        PartitionSpec("mtk-mdla", (0,), (x,), (c,)),
        PartitionSpec("cpu", (1, 2), (c,), (g,)),
        PartitionSpec("mtk-mdla", (3,), (g, c), (a,)),
    )
    assert [p.on_cpu for p in m.partitions] == [False, True, False]
    ln, gelu = m.operations[1], m.operations[2]
    assert (ln.code, gelu.code) == (HOST_CODES[OpKind.LAYER_NORM], HOST_CODES[OpKind.GELU])
    assert (ln.code, gelu.code) == (0x10000, 0x10001)
    weight, bias, eps = (m.operands[i] for i in ln.inputs[1:])
    assert (weight.type_name, bias.type_name, eps.type_name) == (
        "TENSOR_FLOAT32", "TENSOR_FLOAT32", "FLOAT32"
    )  # fmt: skip
    assert np.array_equal(weight.data, graph.tensors["lw"].data)
    assert eps.value == pytest.approx(1e-5)
    table = m.operands[gelu.inputs[1]]
    assert np.array_equal(table.data, np.arange(-128, 128))
    assert HOST_BY_CODE[gelu.code].forms[0].types == "aa"


def test_the_c_reader_reads_the_same_partitions(parts_file: Path) -> None:
    out = check(parts_file)
    assert out["partitions"] == [
        {"device": "mtk-mdla", "operations": 1, "inputs": 1, "outputs": 1},
        {"device": "cpu", "operations": 2, "inputs": 1, "outputs": 1},
        {"device": "mtk-mdla", "operations": 1, "inputs": 2, "outputs": 1},
    ]
    assert [op["code"] for op in out["ops"]] == ["CONV_2D", "LAYER_NORM", "GELU", "ADD"]  # type: ignore[attr-defined, index]


def test_an_unplaced_graph_is_one_partition() -> None:
    m = parse(sample_manifest())
    assert m.partitions == (PartitionSpec("mtk-mdla", (0,), (0,), (m.outputs[0].operand,)),)


@pytest.mark.parametrize("device", [None, "mtk-gpu"])
def test_a_format_2_file_is_one_partition_on_its_device(tmp_path: Path, device: str | None) -> None:
    """Decided for old files: read them (they are what format 2 meant: one graph, forced on one
    device), not refuse them; the device is the one they were quantized for."""
    header, data = split(sample_manifest())
    header.pop("partitions")
    if device is None:
        header["model"].pop("quant")
    else:
        header["model"]["quant"]["device"] = device
    blob = pack(header, data, version=2)
    m = parse(blob)
    want = device or "mtk-mdla"
    assert m.version == 2
    assert m.partitions == (PartitionSpec(want, (0,), (0,), (m.outputs[0].operand,)),)
    path = tmp_path / "v2.mdla"
    path.write_bytes(blob)
    assert check(path)["partitions"] == [
        {"device": want, "operations": 1, "inputs": 1, "outputs": 1}
    ]


def test_format_1_and_4_are_refused() -> None:
    header, data = split(sample_manifest())
    for version, words in ((1, "rebuild with `workbench compile`"), (4, "newer than")):
        with pytest.raises(errors.FutureVersionError, match=words):
            parse(pack(header, data, version=version))


def test_a_host_op_without_its_table_does_not_lower() -> None:
    graph = partitioned_qgraph()
    gelu = graph.op("gelu0")
    ops = tuple(op.with_(inputs=op.inputs[:1]) if op is gelu else op for op in graph.ops)
    with pytest.raises(errors.LoweringError, match="no table input"):
        to_bytes(graph.with_(ops=ops))


def test_the_engine_runs_partitions_not_the_whole_model(parts_file: Path, tmp_path: Path) -> None:
    """No fallback: the engine never hands a partitioned model whole to the adapter; it runs
    each partition on its own device (tests/runtime/test_engine_partitions.py: bit-exact)."""
    cmd = [str(engine_path()), str(parts_file), "--lib", str(build_emulator()), "--json"]
    proc = subprocess.run([*cmd, *inputs_for(parts_file, tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    parts = json.loads(proc.stdout)["partitions"]
    assert [(p["device"], p["ops"]) for p in parts] == [
        ("mtk-mdla", 1),
        ("cpu", 2),
        ("mtk-mdla", 1),
    ]
