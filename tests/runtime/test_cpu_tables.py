"""The table group on the engine and in the .tflite export: a model with every function of the
group between convs, placed with `--cpu auto` (each function on the CPU, the convs on the NPU),
runs bit-exact with run_int8 in mdla-engine (its cpu partitions index the tables the manifest
carries); each function's single-op export (CAST, ADD, GATHER) is bit-exact on LiteRT's
BUILTIN_REF over all 256 codes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import mdla_ir
import mdla_legalize
import mdla_quant
from mdla_emu import build_emulator
from mdla_ir.attrs import Attrs, FunctionAttrs, WhereAttrs
from mdla_ir.builders import act, qp, single_op_qgraph
from mdla_ir.functions import FUNCTIONS
from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from mdla_ir.partitions import CPU
from mdla_ir.schema import HOST_CODES
from mdla_quant import run_int8
from mdla_quant.kernels.functions import with_tables
from mdla_runtime import load, save
from mdla_runtime.export.tflite import run_tflite_reference, tflite_bytes
from tests.runtime.test_engine_partitions import engine, outputs
from tests.runtime.test_tflite_host_ops import operators


class AllFunctions(nn.Module):
    """Every function of the table group, each after a conv; log, sqrt, rsqrt, the
    reciprocal, a torch.where and log1p of an exp."""

    def __init__(self) -> None:
        super().__init__()
        self.convs = nn.ModuleList(nn.Conv2d(4, 4, 1) for _ in range(4))
        self.acts = nn.ModuleList(
            [nn.ELU(0.5), nn.Mish(), nn.Softplus(2.0, 5.0), nn.CELU(0.7), nn.SELU(),
             nn.LogSigmoid(), nn.Tanhshrink(), nn.Softsign()]
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ys = [a(self.convs[i % 4](x)) for i, a in enumerate(self.acts)]
        pos = torch.exp(self.convs[0](x) * 0.5)
        ys += [pos.log(), torch.sqrt(pos), torch.rsqrt(pos), torch.reciprocal(pos)]
        ys.append(torch.where(pos > 1.0, pos, 0.5 * pos))
        y = self.convs[1](x)
        ys += [y.cos(), torch.sin(y), torch.tan(y * 0.5), torch.atan(y), y.expm1(), pos.log1p()]
        return torch.cat(ys, 1)


def test_every_function_runs_on_the_engines_cpu_bit_exact(tmp_path: Path) -> None:
    torch.manual_seed(0)
    x = torch.randn(1, 4, 6, 6)
    # fx names each function; export sees Softsign and Tanhshrink as the arithmetic they are
    graph = mdla_ir.from_torch(AllFunctions().eval(), (x,), name="fns", path="fx")
    placed = mdla_legalize.place(graph, mdla_legalize.load_target("mdla3.5"), "mtk-mdla", ["auto"])
    on_cpu = {o.kind for o in placed.ops if o.device == CPU}
    assert on_cpu == {k.name for k in FUNCTIONS}  # Tanhshrink stays TANHSHRINK: no rule splits it
    assert placed.notes[0].startswith("--cpu auto: placed 20 op(s) on the CPU (ATAN, CELU, COS,")
    rng = np.random.default_rng(1)
    calib = [[rng.normal(size=(1, 4, 6, 6)).astype(np.float32)] for _ in range(4)]
    qgraph = mdla_quant.quantize(placed.graph, calib)
    path = save(qgraph, tmp_path / "fns.mdla")
    manifest = load(path)
    cpu_codes = {manifest.operations[i].code for p in manifest.partitions if p.on_cpu
                 for i in p.operations}  # fmt: skip
    assert cpu_codes == {HOST_CODES[k] for k in FUNCTIONS}
    lib = str(build_emulator())
    for seed in range(3):
        xs = [np.random.default_rng(seed).normal(size=s.model_shape).astype(np.float32)
              for s in manifest.inputs]  # fmt: skip
        code, out, err = engine(path, tmp_path, xs, "--lib", lib, "--json")
        assert code == 0, out + err
        parts = json.loads(out)["partitions"]
        assert sum(p["ops"] for p in parts if p["device"] == CPU) == 20
        want = run_int8(qgraph, xs, raw=True)
        for got, w in zip(outputs(path, tmp_path, want), want, strict=True):
            np.testing.assert_array_equal(got, w)


def table_graph(kind: OpKind, seed: int) -> Graph:
    rng = np.random.default_rng(seed)
    x_q = qp(float(rng.uniform(0.01, 0.1)), int(rng.integers(-60, 60)))
    y_q = qp(float(rng.uniform(0.01, 0.1)), int(rng.integers(-60, 60)))
    attrs: Attrs | None = None if kind.is_neuron else FunctionAttrs(0.8, 1.5, 4.0)
    if kind is OpKind.WHERE:
        attrs = WhereAttrs("le", 0.1, -2.0, 0.5, 0.25, 0.0)
    g = single_op_qgraph(kind, [act("x", (1, 16, 16, 1), x_q)], (1, 16, 16, 1), y_q, attrs)
    return with_tables(g)


@pytest.mark.parametrize("kind", list(FUNCTIONS), ids=lambda k: k.name)
def test_the_export_gathers_the_table_bit_exact_on_builtin_ref(kind: OpKind) -> None:
    g = table_graph(kind, abs(kind.value))
    assert operators(g) == ["CAST", "ADD", "GATHER"]
    codes = [np.arange(-128, 128, dtype=np.int8).reshape(1, 16, 16, 1)]
    (ours,) = run_int8(g, [mdla_ir.affine.dequantize_output(codes[0], *_xq(g))], raw=True)
    (theirs,) = run_tflite_reference(tflite_bytes(g), codes)
    np.testing.assert_array_equal(theirs, ours)
    table = g.tensors[f"{kind.name.lower()}0.table"].data
    assert table is not None
    np.testing.assert_array_equal(ours.ravel(), table)


def _xq(g: Graph) -> tuple[float, int]:
    q = g.tensors["x"].quant
    assert q is not None
    return float(q.scale[0]), int(q.zero_point[0])
