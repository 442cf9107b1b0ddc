"""LOGISTIC and TANH at 16 bits: run_int8 against LiteRT's reference kernels (BUILTIN_REF) on
every tensor, over input ranges from inside the table to far past its saturation and over
power-of-two input scales (LiteRT's other multiplier path); and the emulator's int16 kernel
against run_int8 on the same int16 codes."""

from __future__ import annotations

import ctypes
import dataclasses
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from mdla_emu.emulator import CSRC
from mdla_ir import Graph, OpKind, QuantParams
from mdla_ir.builder import GraphBuilder
from mdla_quant import run_int8
from mdla_quant.config import QuantConfig
from mdla_quant.kernels.a16_act import SIGMOID_TABLE, input_rescale, sigmoid16, tanh16
from mdla_quant.quantize import quantize
from tests.quant.test_a16_oracle import every_tensor
from tests.runtime.test_emu_support import DEVICES, NO_ERROR, NeuronModelBuilder, compile_model, emu

KINDS = (OpKind.LOGISTIC, OpKind.TANH)
QUANT16_SYMM = 7
SEEDS = range(10)
# the power-of-two input scales LiteRT takes as multiplier 3 << shift (LOGISTIC: 2^-12 only)
POT = {OpKind.LOGISTIC: (2.0**-12,), OpKind.TANH: (2.0**-12, 2.0**-11)}


def case(kind: OpKind, seed: int) -> tuple[Graph, list[list[Any]]]:
    """x -> kind -> y quantized with y int16; inputs spanning +-0.3 to +-24 (the table ends at
    10.6 for LOGISTIC, 5.3 for TANH); every third seed forces a power-of-two input scale."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder(f"act16_{kind.name.lower()}", layout="NHWC", seed=seed)
    graph = b.build(b.op(kind, [b.input("x", (1, 9, 9, 5))], name="y"))
    width = float(np.exp(rng.uniform(np.log(0.3), np.log(24.0))))
    samples = [[rng.uniform(-width, width, (1, 9, 9, 5)).astype(np.float32)] for _ in range(3)]
    qgraph = quantize(graph, samples, QuantConfig(a16=("y",), method="minmax"))
    if seed % 3 == 0:
        scale = POT[kind][seed // 3 % len(POT[kind])]
        x16 = qgraph.tensors["x/a16"]
        tensors = dict(qgraph.tensors)
        tensors["x/a16"] = dataclasses.replace(x16, quant=QuantParams((scale,), (0,)))
        qgraph = qgraph.with_(tensors=tensors)
    return qgraph, samples


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_int16_activation_matches_litert_on_every_tensor(kind: OpKind) -> None:
    saturated = compared = 0
    for seed in SEEDS:
        qgraph, samples = case(kind, seed)
        out_q = qgraph.tensors["y"].quant
        assert qgraph.tensors["y"].dtype == "int16"
        assert out_q is not None
        assert out_q.scale == (1.0 / 32768,)
        assert out_q.zero_point == (0,)
        for sample in samples:
            ours, theirs = every_tensor(qgraph, sample)
            for name, value in ours.items():
                assert theirs[name].dtype == value.dtype, name
                np.testing.assert_array_equal(value, theirs[name], err_msg=f"seed {seed} {name}")
                compared += value.size
            saturated += int((np.abs(ours["y"]) >= 32767).sum())
    assert compared > 5000
    assert saturated > 0  # the wide cases reach the table's saturated end


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_int16_activation_is_within_its_table_error_of_float(kind: OpKind) -> None:
    """The fixed-point path stays within a few 1/32768 steps of the float function."""
    x = np.arange(-32768, 32768, dtype=np.int64)
    for scale in (2.0**-12, 1.7e-4, 6.1e-4, 3e-3):
        m, shift = input_rescale(scale, kind)
        v = (x * m + ((1 << (shift - 1)) if shift > 0 else 0)) >> shift
        got = (sigmoid16(v) if kind is OpKind.LOGISTIC else tanh16(v)) / 32768.0
        real = x * np.float64(np.float32(scale))
        want = 1 / (1 + np.exp(-real)) if kind is OpKind.LOGISTIC else np.tanh(real)
        assert np.abs(got - want).max() < 8 / 32768, scale


def emulated(
    kind: OpKind,
    in_scale: float,
    codes: np.ndarray,
    scalars: Callable[[NeuronModelBuilder], list[int]] = lambda _b: [],
) -> np.ndarray:
    """The emulator's int16 output (scale 1/32768) of one `kind` op on int16 `codes` at
    `in_scale`, with the scalar operands `scalars` adds after the input."""
    b = NeuronModelBuilder()
    try:
        x = b.operand(QUANT16_SYMM, codes.shape, in_scale, 0)
        y = b.operand(QUANT16_SYMM, codes.shape, 1.0 / 32768, 0)
        assert b.operation(kind.value, [x, *scalars(b)], [y]) == NO_ERROR
        assert b.identify([x], [y]) == NO_ERROR
        assert b.finish() == NO_ERROR
        assert b.supported(list(DEVICES)) == [True]
        rc, comp = compile_model(b, DEVICES, [codes.shape])
        assert rc == NO_ERROR
        try:
            return run16(comp.handle, codes)
        finally:
            comp.free()
    finally:
        b.free()


def run16(compilation: ctypes.c_void_p, codes: np.ndarray) -> np.ndarray:
    lib, ex = emu(), ctypes.c_void_p()
    assert lib.NeuronExecution_create(compilation, ctypes.byref(ex)) == NO_ERROR
    x = np.ascontiguousarray(codes, dtype=np.int16)
    y = np.zeros_like(x)
    try:
        assert lib.NeuronExecution_setInput(ex, 0, None, x.ctypes.data, x.nbytes) == NO_ERROR
        assert lib.NeuronExecution_setOutput(ex, 0, None, y.ctypes.data, y.nbytes) == NO_ERROR
        assert lib.NeuronExecution_compute(ex) == NO_ERROR
    finally:
        lib.NeuronExecution_free(ex)
    return y


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_the_emulators_int16_kernel_equals_run_int8(kind: OpKind) -> None:
    for seed in SEEDS:
        qgraph, samples = case(kind, seed)
        x16 = qgraph.tensors["x/a16"].quant
        assert x16 is not None
        for sample in samples:
            ours: dict[str, Any] = {}
            run_int8(qgraph, sample, raw=True, observe=ours.__setitem__)
            got = emulated(kind, x16.scale[0], ours["x/a16"])
            np.testing.assert_array_equal(got, ours["y"], err_msg=f"seed {seed}")


def test_the_emulator_reads_the_same_sigmoid_table() -> None:
    """LiteRT's 256 tuned constants stand twice, as data: in run_int8's kernel and in the
    emulator's C (which imports nothing of mdla_quant). An entry that differs changes only
    the inputs that read it, which random cases may miss: compare them all."""
    source = (CSRC / "kernels" / "k_logistic.c").read_text()
    body = source[source.index("sigmoid_table[256] = {") :].split("};", 1)[0]
    c_table = [int(v) for v in re.findall(r"\d+", body.split("{", 1)[1])]
    assert c_table == SIGMOID_TABLE.tolist()
