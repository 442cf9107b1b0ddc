"""ConvNeXt-Tiny end to end with `--cpu LAYER_NORM,GELU` (issues 17, 33): only its LayerNorms
and GELUs on the CPU (its channels-last Linears are 1x1 CONV_2Ds in the device layout, its
permutes gone), the placement, then calibration of every boundary tensor, then the int8
reference of the whole partitioned graph against the float graph and the engine on the
emulator against it, bit for bit."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import mdla_ir
import mdla_legalize
import mdla_quant
import mdla_runtime
from mdla_ir.partitions import CPU
from mdla_legalize import LegalizeError, Placement
from tests.models_partitions import convnext_tiny_64

CPU_KINDS = ["LAYER_NORM,GELU"]


@pytest.fixture(scope="module")
def graph() -> mdla_ir.Graph:
    module, x = convnext_tiny_64()
    return mdla_ir.from_torch(module, (x,), name="convnext_tiny")


@pytest.fixture(scope="module")
def placed(graph: mdla_ir.Graph) -> Placement:
    return mdla_legalize.place(graph, mdla_legalize.load_target("mdla3.5"), "mtk-mdla", CPU_KINDS)


def test_only_layer_norm_and_gelu_do_not_map(graph: mdla_ir.Graph) -> None:
    target = mdla_legalize.load_target("mdla3.5")
    with pytest.raises(LegalizeError) as info:
        mdla_legalize.legalize(graph, target, "mtk-mdla")
    kinds = Counter(item.split("(")[1].split(")")[0] for item in info.value.items)
    assert kinds == {"LAYER_NORM": 23, "GELU": 18}


def test_the_placement(placed: Placement) -> None:
    on_cpu = Counter(o.kind for o in placed.ops if o.device == CPU)
    assert on_cpu == {"LAYER_NORM": 23, "GELU": 18}
    assert (placed.count("mtk-mdla"), placed.count(CPU)) == (98, 41)
    assert (len(placed.partitions), placed.switches) == (83, 82)
    assert placed.partitions[0].device == "mtk-mdla"
    assert placed.partitions[-1].ops[-2:] == ("classifier.2", "classifier.2.flatten")
    assert Counter(o.kind for o in placed.ops)["CONV_2D"] == 41  # 36 of them the Linears
    assert placed.warnings == ()


def test_int8_of_the_partitioned_graph_agrees_with_float(placed: Placement) -> None:
    rng = np.random.default_rng(0)
    calib = [[rng.uniform(-1, 1, (1, 3, 64, 64)).astype(np.float32)] for _ in range(3)]
    qgraph = mdla_quant.quantize(placed.graph, calib)
    boundary = {n for p in placed.partitions for n in (*p.inputs, *p.outputs)}
    assert all(qgraph.tensors[n].dtype == "int8" and qgraph.tensors[n].quant for n in boundary)
    x = rng.uniform(-1, 1, (1, 3, 64, 64)).astype(np.float32)
    (f,) = mdla_ir.run_float(placed.graph, [x])
    (q,) = mdla_quant.run_int8(qgraph, [x])
    cosine = float(np.dot(f.ravel(), q.ravel()) / np.linalg.norm(f) / np.linalg.norm(q))
    assert cosine > 0.99, cosine


def test_the_engine_runs_it_bit_exact_with_run_int8(placed: Placement, tmp_path: Path) -> None:
    """mdla-engine on the host emulator, 83 partitions (42 on mtk-mdla, 41 on the engine's cpu
    device): the output is run_int8's, bit for bit, and each partition reports its device."""
    rng = np.random.default_rng(1)
    calib = [[rng.uniform(-1, 1, (1, 3, 64, 64)).astype(np.float32)] for _ in range(2)]
    qgraph = mdla_quant.quantize(placed.graph, calib)
    path = mdla_runtime.save(qgraph, tmp_path / "convnext.mdla")
    x = rng.uniform(-1, 1, (1, 3, 64, 64)).astype(np.float32)
    r = mdla_runtime.open_target("emu").run(path, [x])
    assert [(p.device, p.ops) for p in r.partitions] == [
        (p.device, len(p.ops)) for p in placed.partitions
    ]
    assert len(r.npu_partitions) == 42
    (want,) = mdla_quant.run_int8(qgraph, [x], raw=True)
    np.testing.assert_array_equal(r.raw_outputs[0], want)
