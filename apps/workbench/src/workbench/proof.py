"""`doctor`'s proof that a target runs int8 work: one CONV_2D, written as a .mdla on this
machine, run on the target's NPU device, its int8 output compared bit for bit with
`mdla_quant.run_int8` (where SELinux, an adapter version or a driver that lists a device it
cannot run shows up, which listing devices does not).

    step = prove(target)   # a doctor Step: ok, or missing with what differed and the fix

`shown(on)` is a target spec as titles and reports print it: an SSH spec as ssh://user@host
(its key, config and library paths are the user's business, not a log's).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np

import mdla_quant
import mdla_runtime
from mdla_ir.builders import act, const, qp
from mdla_ir.devices import NPU
from mdla_ir.graph import Graph, Op
from mdla_ir.kinds import OpKind
from mdla_runtime.engine.ssh.doctor import FAIL, OK, Step
from mdla_runtime.engine.ssh.spec import parse_spec

NAME = "npu run"
SHAPE, CHANNELS = (1, 8, 8, 3), 4  # NHWC input; a 3x3 same-padded conv to 4 channels
SEED = 32


def shown(on: str) -> str:
    """`on` as a title prints it: an SSH spec as ssh://user@host, without its options, port or
    paths; any other spec as given (`emu`, `lib:PATH` names the user's own library)."""
    if not on.startswith("ssh://"):
        return on
    try:
        return f"ssh://{parse_spec(on).destination}"
    except mdla_runtime.TargetSpecError:
        return "ssh://" + on[len("ssh://") :].split("?")[0].split(":")[0]


def one_op_graph() -> Graph:
    """One per-channel int8 CONV_2D with a fused RELU, its weights and quantization fixed by SEED
    (the input is NCHW at the boundary, so the target's layout change is exercised too)."""
    rng = np.random.default_rng(SEED)
    w_scale = rng.uniform(0.01, 0.05, CHANNELS).astype(np.float32)
    weights = rng.integers(-127, 128, (CHANNELS, 3, 3, SHAPE[3])).astype(np.int8)
    bias = rng.integers(-400, 400, CHANNELS).astype(np.int32)
    x_q, y_q = qp(0.02, 2), qp(0.2, -128)
    tensors = [
        act("x", SHAPE, x_q),
        const("w", weights, qp(w_scale, 0, 0)),
        const("b", bias, qp(w_scale * np.float32(0.02), 0, 0)),
        act("y", (*SHAPE[:3], CHANNELS), y_q),
    ]
    attrs = {"stride": (1, 1), "dilation": (1, 1), "padding": (1, 1, 1, 1), "fuse": "RELU"}
    conv = Op(OpKind.CONV_2D, "conv", ("x", "w", "b"), ("y",), attrs)
    return Graph(
        "doctor_conv",
        {t.name: t for t in tensors},
        (conv,),
        ("x",),
        ("y",),
        layout="NHWC",
        boundary={"x": (0, 2, 3, 1)},
    )


def one_op_input() -> np.ndarray[Any, Any]:
    """The input, NCHW float32: values across the int8 range of the input's quantization."""
    n, h, w, c = SHAPE
    return np.random.default_rng(SEED + 1).uniform(-2.5, 2.5, (n, c, h, w)).astype(np.float32)


def prove(target: mdla_runtime.Target, device: str = NPU) -> Step:
    """Write the one-op model, run it on `target`'s `device`, compare with run_int8."""
    graph, x = one_op_graph(), one_op_input()
    with tempfile.TemporaryDirectory(prefix="mdla-doctor-") as folder:
        path = mdla_runtime.save(graph, Path(folder) / "conv.mdla")
        try:
            result = target.run(path, [x], devices=(device,))
        except mdla_runtime.TargetError as exc:
            return Step(NAME, FAIL, f"one CONV_2D on {device} failed: {exc}", _fix(device))
    want = mdla_quant.run_int8(graph, [x], raw=True)[0]
    got = np.asarray(result.raw_outputs[0]).reshape(want.shape)
    what = f"one int8 CONV_2D {_dims(SHAPE)} -> {_dims(want.shape)} on {result.device}"
    differ = int(np.count_nonzero(got != want))
    if differ:
        worst = int(np.abs(got.astype(np.int32) - want.astype(np.int32)).max())
        return Step(
            NAME,
            FAIL,
            f"{what}: {differ} of {want.size} int8 values differ from mdla_quant.run_int8 "
            f"(at most by {worst})",
            "the device computes this op differently: report it with `workbench probe` "
            "output attached",
        )
    return Step(NAME, OK, f"{what}: all {want.size} int8 values equal mdla_quant.run_int8")


def _dims(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))


def _fix(device: str) -> str:
    return (
        f"`workbench devices` lists what the adapter offers; if {device} is there, the "
        "phone refused the run (SELinux, or the adapter's version): see the message"
    )
