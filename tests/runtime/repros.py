"""The second audit's repros (issue 30) as files, each with the verdict both readers give: CI
replays them through both readers and the engine fuzz harness (`test_repros.py`), and `make fuzz`
starts from them (`fuzzing.write_corpus`).

    pool_window       960 bytes: MAX_POOL, a 384x384 window at stride 1 on 1x768x768x32
                      (7 x 10^11 compares; 90 s of `workbench run`)   -> OverBudget
    host_relu         704 bytes: RELU on 1x4096x2048x16, inside the device budget; `run`
                      peaked at 3.3 GB on the host                    -> read (run refuses it)
    nan_weight        a float region whose GRU weight holds a NaN      -> NonFinite
    inf_beta          SOFTMAX with beta = inf                          -> NonFinite
    gru_overflow      a float region whose GRU weights are +-FLT_MAX: finite constants whose
                      products overflow, so EXP meets NaN at run time  -> read
    spec_os_system    a manifest recording `os:system(...)` as its model spec (the readers
                      cannot know; `run` never imports it)             -> read
    mul_left_shift    MUL whose s1*s2/s_out is 4 (a left shift, s > 0): the emulator's
                      prepare shifted by -s, undefined behaviour (make fuzz found it)  -> read
"""

from __future__ import annotations

import dataclasses
import struct

import numpy as np

from mdla_ir.builders import act, qp, random_qgraph, single_op_qgraph
from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from mdla_runtime.format.manifest import to_bytes
from mdla_runtime.testing import pack, split
from mdla_runtime.testing_float import float_region_qgraph


def pool_window(side: int = 768, window: int = 384, channels: int = 32) -> bytes:
    header, data = split(to_bytes(random_qgraph(OpKind.MAX_POOL_2D, np.random.default_rng(0))))
    ops, out = header["operands"], side - window + 1
    ops[0]["dims"], ops[11]["dims"] = [1, side, side, channels], [1, out, out, channels]
    for k, v in zip(range(1, 10), [0, 0, 0, 0, 1, 1, window, window, 0], strict=True):
        ops[k]["value"] = v
    for io, operand in ((header["inputs"][0], ops[0]), (header["outputs"][0], ops[11])):
        io["shape"] = io["model_shape"] = operand["dims"]
    return pack(header, data)


def host_relu(shape: tuple[int, ...] = (1, 4096, 2048, 16)) -> bytes:
    q = qp(0.05, 0)
    return to_bytes(single_op_qgraph(OpKind.RELU, [act("x", shape, q)], shape, q))


def nan_weight() -> bytes:
    header, data = split(to_bytes(float_region_qgraph()))
    i = next(i for i, o in enumerate(header["operands"]) if o["type"] == 3 and "data" in o)
    off = header["operands"][i]["data"][0] + 20
    body = bytearray(data)
    body[off : off + 4] = struct.pack("<I", 0x7FC00000)
    return pack(header, bytes(body))


def overflow_graph() -> Graph:
    """The float region with its GRU's input weights +-FLT_MAX, alternating: finite, and every
    dot product overflows both ways (inf - inf: NaN)."""
    g = float_region_qgraph()
    w = g.tensors["w_ih"]
    assert w.data is not None
    signs = np.where(np.arange(w.data.size) % 2, -1.0, 1.0).astype(np.float32)
    data = (signs * np.finfo(np.float32).max).reshape(w.data.shape)
    return g.with_(tensors={**g.tensors, "w_ih": dataclasses.replace(w, data=data)})


def inf_beta() -> bytes:
    header, data = split(to_bytes(random_qgraph(OpKind.SOFTMAX, np.random.default_rng(0))))
    (j,) = [j for j, o in enumerate(header["operands"]) if o["type"] == 0]
    header["operands"][j]["value"] = float("inf")
    return pack(header, data)


def spec_os_system() -> bytes:
    q = qp(0.05, 0)
    graph = single_op_qgraph(OpKind.RELU, [act("x", [1, 3, 4, 4], q)], [1, 3, 4, 4], q)
    prov = dataclasses.replace(graph.provenance, spec="os:system('touch /tmp/mdla-pwned')")
    return to_bytes(graph.with_(provenance=prov))


def mul_left_shift() -> bytes:
    x, y = qp(1.0, 0), qp(0.25, 0)
    ins = [act("a", [1, 8], x), act("b", [1, 8], x)]
    return to_bytes(single_op_qgraph(OpKind.MUL, ins, [1, 8], y))


def repros() -> dict[str, tuple[bytes, str]]:
    """name -> (file, the verdict of both readers: "ok" or the error kind)."""
    return {
        "pool_window": (pool_window(), "OverBudget"),
        "host_relu": (host_relu(), "ok"),
        "nan_weight": (nan_weight(), "NonFinite"),
        "inf_beta": (inf_beta(), "NonFinite"),
        "gru_overflow": (to_bytes(overflow_graph()), "ok"),
        "spec_os_system": (spec_os_system(), "ok"),
        "mul_left_shift": (mul_left_shift(), "ok"),
    }
