"""An execution's temporaries in one block planned at finish (abi/arena.c): two temporaries
share bytes only when no operation runs while both are live, and the compilation keeps the last
freed execution's block for the next one.

The graph below is a chain of convolutions with two values read long after they were written
(the residual ADDs' first operands) and a wider temporary in between, so the planner reuses
bytes; a plan that ended a value's life at its writer, or let an operation's output share bytes
with its input, changes the outputs. Each compiled model runs executions one after another
(the second takes the kept block, holding the first's values) and two at once (the second gets
a new block; freeing both keeps one and frees the other), on different inputs, each against
run_int8.
"""

from __future__ import annotations

import ctypes

import numpy as np

from mdla_ir.builders import act, as_floats, const, qp
from mdla_ir.graph import Graph, Op
from mdla_ir.ops import OpKind
from mdla_quant import run_int8
from tests.runtime.test_emu_support import (
    DEVICES,
    NO_ERROR,
    Array,
    Compiled,
    compile_model,
    emu,
    lower_graph,
)

SHAPE = (1, 6, 6, 8)
# name -> (input, output channels, kernel, output scale); each conv reads the tensor before it
CONVS = {
    "a": ("x", 8, 3, 0.5),
    "b": ("a", 8, 3, 0.5),
    "wide": ("b", 24, 1, 0.2),
    "d": ("wide", 8, 1, 0.3),
    "e": ("s1", 8, 3, 0.5),
}


def arena_graph(seed: int = 0) -> Graph:
    """x -> a -> b -> wide -> d; s1 = ADD(a, d); e = conv(s1); out = ADD(e, b)."""
    rng = np.random.default_rng(seed)
    tensors = [act("x", SHAPE, qp(0.05, -3))]
    scale = {"x": 0.05}
    ops = []
    for name, (src, co, k, s_out) in CONVS.items():
        ci = 24 if src == "wide" else 8
        ws = rng.uniform(0.005, 0.015, co).astype(np.float32)
        w = rng.integers(-127, 128, (co, k, k, ci)).astype(np.int8)
        bias = rng.integers(-300, 300, co).astype(np.int32)
        tensors += [
            const(f"{name}_w", w, qp(ws, 0, 0)),
            const(f"{name}_b", bias, qp(np.float32(scale[src]) * ws, 0, 0)),
            act(name, (*SHAPE[:3], co), qp(s_out, 2)),
        ]
        scale[name] = s_out
        pad = k // 2
        attrs = {"stride": (1, 1), "dilation": (1, 1), "padding": (pad, pad, pad, pad)}
        ops.append(
            Op(
                OpKind.CONV_2D,
                name,
                (src, f"{name}_w", f"{name}_b"),
                (name,),
                attrs | {"groups": 1, "fuse": "NONE"},
            )
        )
        if name == "d":  # the first residual: a, written by the first op, read here
            tensors.append(act("s1", SHAPE, qp(0.6, -1)))
            scale["s1"] = 0.6
            ops.append(Op(OpKind.ADD, "add1", ("a", "d"), ("s1",), {"fuse": "NONE"}))
    tensors.append(act("out", SHAPE, qp(0.7, 4)))
    ops.append(Op(OpKind.ADD, "add2", ("e", "b"), ("out",), {"fuse": "NONE"}))
    return Graph("arena", {t.name: t for t in tensors}, tuple(ops), ("x",), ("out",), layout="NHWC")


def compiled(g: Graph) -> Compiled:
    b = lower_graph(g)
    try:
        assert b.finish() == NO_ERROR
        rc, comp = compile_model(b, DEVICES, [SHAPE])
        assert rc == NO_ERROR
    finally:
        b.free()
    return comp


def inputs(count: int) -> list[Array]:
    rng = np.random.default_rng(21)
    return [rng.integers(-128, 128, SHAPE).astype(np.int8) for _ in range(count)]


def expected(g: Graph, x: Array) -> Array:
    (want,) = run_int8(g, as_floats(g, [x]), raw=True)
    assert np.unique(want).size > 20, "a case whose outputs are all clamped tests nothing"
    return np.asarray(want).reshape(SHAPE)


def test_executions_one_after_another_reuse_the_block() -> None:
    g = arena_graph()
    comp = compiled(g)
    try:
        for k, x in enumerate(inputs(3)):
            (got,) = comp.run([x])
            np.testing.assert_array_equal(got, expected(g, x), err_msg=f"execution {k}")
    finally:
        comp.free()


def test_executions_alive_at_once_compute_right() -> None:
    g = arena_graph(seed=1)
    comp = compiled(g)
    lib = emu()
    xs = inputs(2)
    outs = [np.zeros(SHAPE, np.int8) for _ in xs]
    exs = [ctypes.c_void_p() for _ in xs]
    try:
        for ex, x, y in zip(exs, xs, outs, strict=True):
            assert lib.NeuronExecution_create(comp.handle, ctypes.byref(ex)) == NO_ERROR
            assert lib.NeuronExecution_setInput(ex, 0, None, x.ctypes.data, x.nbytes) == NO_ERROR
            assert lib.NeuronExecution_setOutput(ex, 0, None, y.ctypes.data, y.nbytes) == NO_ERROR
        for ex in [*exs, exs[0]]:
            assert lib.NeuronExecution_compute(ex) == NO_ERROR
        for k, (x, y) in enumerate(zip(xs, outs, strict=True)):
            np.testing.assert_array_equal(y, expected(g, x), err_msg=f"execution {k}")
    finally:
        for ex in exs:
            lib.NeuronExecution_free(ex)
        comp.free()
