"""Issue 18's int8 edge cases on the emulator and in the .tflite export (LiteRT BUILTIN_REF).

Accumulator: the emulator takes the target's `[arith] accumulator` fact (generated into
emu_targets.c), MDLA_EMU_ACCUMULATOR overriding it; both modes are bit-exact with run_int8, and
"wrap" is bit-exact with LiteRT's reference kernels.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from mdla_emu import EmulatorError, build_emulator, generate_targets
from mdla_ir.attrs import with_fuse
from mdla_ir.builders import (
    act,
    as_floats,
    const,
    qp,
    random_codes,
    random_qgraph,
    single_op_qgraph,
)
from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from mdla_quant import run_int8
from mdla_quant.errors import KernelError
from mdla_quant.reference import quantize_inputs
from mdla_runtime import ExportError, load, open_target, save
from mdla_runtime.errors import LoweringError
from mdla_runtime.export import ops as export_ops
from mdla_runtime.export.tflite import run_tflite_reference, tflite_bytes
from mdla_target import load_target, target_path
from tests.quant.test_int8_edge_cases import (
    CASE_INPUTS,
    DEGENERATE,
    LARGE_KINDS,
    calibration,
    quantized,
    with_large_multiplier,
)
from tests.runtime.test_emu_support import (
    BAD_DATA,
    lower_single_op,
    run_single_op,
)
from workbench.probe.arith import requant_wrap_graph


def _set_env(name: str, value: str | None) -> str | None:
    old = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    return old


@pytest.fixture
def arith_env(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """(accumulator, rounding) set for the emulator through its environment variables."""
    accumulator, rounding = request.param
    old = _set_env("MDLA_EMU_ACCUMULATOR", accumulator), _set_env("MDLA_EMU_ROUNDING", rounding)
    yield accumulator, rounding
    _set_env("MDLA_EMU_ACCUMULATOR", old[0])
    _set_env("MDLA_EMU_ROUNDING", old[1])


MODES = [(a, r) for a in ("saturate", "wrap") for r in ("double", "single")]


def emu_run(g: Graph, codes: list[np.ndarray]) -> np.ndarray:
    """The emulator's int8 output of single-op `g` for int8 `codes` (all three devices)."""
    return run_single_op(g, codes)


def _case_codes() -> list[np.ndarray]:
    return [np.concatenate([CASE_INPUTS, -CASE_INPUTS]).reshape(1, 1, 8, 1)]


@pytest.mark.parametrize("arith_env", MODES, indirect=True, ids=lambda m: "-".join(m))
def test_issue_case_on_the_emulator(arith_env: tuple[str, str]) -> None:
    accumulator, rounding = arith_env
    g = requant_wrap_graph(8)
    codes = _case_codes()
    want = run_int8(g, as_floats(g, codes), raw=True, rounding=rounding, accumulator=accumulator)[0]
    got = emu_run(g, codes)
    assert np.array_equal(got, want)
    if rounding == "double":
        expected = [127, 127, -128, -128] if accumulator == "wrap" else [127] * 4
        assert got.ravel()[:4].tolist() == expected


def test_the_emulator_defaults_to_the_target_fact() -> None:
    old = _set_env("MDLA_EMU_ACCUMULATOR", None), _set_env("MDLA_EMU_ROUNDING", None)
    try:
        got = emu_run(requant_wrap_graph(8), _case_codes())
    finally:
        _set_env("MDLA_EMU_ACCUMULATOR", old[0])
        _set_env("MDLA_EMU_ROUNDING", old[1])
    assert got.ravel()[:4].tolist() == [127] * 4  # mdla3.5: accumulator = "saturate"


@pytest.mark.parametrize("arith_env", MODES, indirect=True, ids=lambda m: "-".join(m))
def test_an_override_that_changes_the_arithmetic_says_so(
    arith_env: tuple[str, str], capfd: pytest.CaptureFixture[str]
) -> None:
    """The environment's overrides are for experiments: each compilation whose arithmetic they
    change says so on stderr (mdla3.5's facts: saturate; a compilation's default: double)."""
    accumulator, rounding = arith_env
    emu_run(requant_wrap_graph(8), _case_codes())
    err = capfd.readouterr().err
    acc_note = "MDLA_EMU_ACCUMULATOR=wrap overrides the target's accumulator `saturate`"
    round_note = "MDLA_EMU_ROUNDING=single overrides the compilation's rounding `double`"
    assert (acc_note in err) == (accumulator == "wrap")
    assert (round_note in err) == (rounding == "single")


def test_the_generated_table_carries_the_fact(tmp_path: Path) -> None:
    target = load_target("mdla3.5")
    assert "const bool emu_target_accumulator_wrap = false;" in generate_targets(target)
    wrapped = dataclasses.replace(target, accumulator="wrap")
    assert "const bool emu_target_accumulator_wrap = true;" in generate_targets(wrapped)
    text = target_path("mdla3.5").read_text(encoding="utf-8")
    bad = tmp_path / "clip.toml"  # mdla_target checks the fact; the emulator says which file
    bad.write_text(text.replace('accumulator = "saturate"', 'accumulator = "clip"', 1))
    with pytest.raises(EmulatorError, match=r"clip.toml \[arith\]: accumulator 'clip'"):
        build_emulator(str(bad))


def _large_cases(
    kind: OpKind, n: int, offset: float = 0.5
) -> Iterator[tuple[Graph, list[np.ndarray]]]:
    rng = np.random.default_rng(18_100 + kind.value)
    for _ in range(n):
        g = with_large_multiplier(random_qgraph(kind, rng), int(rng.integers(10, 30)), offset)
        yield g, random_codes(g, rng)


@pytest.mark.parametrize("offset", [0.5, 0.0], ids=["between", "power_of_two"])
@pytest.mark.parametrize("arith_env", MODES, indirect=True, ids=lambda m: "-".join(m))
@pytest.mark.parametrize("kind", LARGE_KINDS, ids=lambda k: k.name)
def test_large_multipliers_bit_exact_on_the_emulator(
    kind: OpKind, arith_env: tuple[str, str], offset: float
) -> None:
    accumulator, rounding = arith_env
    bad = total = 0
    for g, codes in _large_cases(kind, 12, offset):
        try:
            (want,) = run_int8(
                g, as_floats(g, codes), raw=True, rounding=rounding, accumulator=accumulator
            )
        except KernelError:  # an int32 accumulator overflow the saturating reference refuses
            continue
        got = emu_run(g, codes)
        bad, total = bad + int(np.count_nonzero(got != want)), total + want.size
    assert total > 0
    assert bad == 0, f"{kind.name} {arith_env}: {bad} of {total} outputs differ"


def _unfused(g: Graph) -> Graph:
    """`g` without its fused activation: RELU6's bound 6 / s_out leaves int32 at these output
    scales, which LiteRT refuses (the degenerate-scale case, tested on its own below)."""
    (op,) = g.ops
    if op.fuse == "NONE":
        return g
    return dataclasses.replace(g, ops=(dataclasses.replace(op, attrs=with_fuse(op.attrs, "NONE")),))


@pytest.mark.parametrize("offset", [0.5, 0.0], ids=["between", "power_of_two"])
@pytest.mark.parametrize("kind", LARGE_KINDS, ids=lambda k: k.name)
def test_wrap_is_litert_reference(kind: OpKind, offset: float) -> None:
    bad = total = differ = 0
    for fused, codes in _large_cases(kind, 12, offset):
        g = _unfused(fused)
        x = as_floats(g, codes)
        (wrap,) = run_int8(g, x, raw=True, accumulator="wrap")
        (sat,) = run_int8(g, x, raw=True, accumulator="saturate")
        (theirs,) = run_tflite_reference(tflite_bytes(g), codes)
        bad, total = bad + int(np.count_nonzero(theirs != wrap)), total + wrap.size
        differ += int(np.count_nonzero(theirs != sat))
    assert bad == 0, f"{kind.name}: {bad} of {total} outputs differ from LiteRT"
    assert differ > 0  # the cases do overflow: saturation would not have matched


def test_issue_case_is_litert_reference() -> None:
    g = requant_wrap_graph(256)
    codes = [np.arange(-128, 128, dtype=np.int8).reshape(1, 1, 256, 1)]
    (theirs,) = run_tflite_reference(tflite_bytes(g), codes)
    assert np.array_equal(theirs, run_int8(g, as_floats(g, codes), raw=True, accumulator="wrap")[0])
    assert theirs.ravel()[128 + CASE_INPUTS.astype(np.int64)].tolist() == [127, 127, -128, -128]


# ---- degenerate scales: LiteRT loads every quantized model; the exporter names what it cannot

LITERT_CHILD = """
import sys
import numpy as np
from mdla_runtime.export.tflite import run_tflite_reference
model = open(sys.argv[1], "rb").read()
codes = np.load(sys.argv[2])
outs = run_tflite_reference(model, [codes[k] for k in sorted(codes.files)])
np.savez(sys.argv[3], *outs)
"""


def litert_in_child(model: bytes, codes: list[np.ndarray], tmp: Path) -> list[np.ndarray]:
    """LiteRT BUILTIN_REF in a child process: a refused or aborting Prepare (a CHECK failure
    kills the process) fails the test instead of the test run."""
    (tmp / "m.tflite").write_bytes(model)
    np.savez(tmp / "in.npz", **{f"a{i:03d}": c for i, c in enumerate(codes)})
    args = [str(tmp / "m.tflite"), str(tmp / "in.npz"), str(tmp / "out.npz")]
    r = subprocess.run(
        [sys.executable, "-c", LITERT_CHILD, *args], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, f"LiteRT exit {r.returncode}: {r.stderr[-400:]}"
    out = np.load(tmp / "out.npz")
    return [out[k] for k in sorted(out.files, key=lambda k: int(k.split("_")[1]))]


@pytest.mark.parametrize("case", DEGENERATE)
def test_degenerate_models_export_and_run_everywhere(case: str, tmp_path: Path) -> None:
    """Quantized with the floors, each model loads in LiteRT, and LiteRT, the emulator and
    run_int8 agree bit for bit."""
    g = quantized(case)
    x = calibration(1, 9)[0]
    (want,) = run_int8(g, x, raw=True)
    codes = list(quantize_inputs(g, x).values())
    (theirs,) = litert_in_child(tflite_bytes(g), codes, tmp_path)
    np.testing.assert_array_equal(theirs.reshape(want.shape), want)
    manifest = load(save(g, tmp_path / f"{case}.mdla"))
    result = open_target("emu").run(manifest, x)
    np.testing.assert_array_equal(result.raw_outputs[0].reshape(want.shape), want)


def test_without_the_check_litert_aborts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Why the exporter checks: the degenerate ADD written anyway kills LiteRT (SIGABRT)."""
    g = _single_add(1e-9)
    monkeypatch.setattr(export_ops, "check_loadable", lambda graph, op: None)
    with pytest.raises(AssertionError, match=f"LiteRT exit {-signal.SIGABRT}"):
        litert_in_child(tflite_bytes(g), [np.ones((1, 4), np.int8)] * 2, tmp_path)


def _single_add(s_out: float) -> Graph:
    ins = [act("a", (1, 4), qp(0.1, 0)), act("b", (1, 4), qp(0.05, 0))]
    return single_op_qgraph(OpKind.ADD, ins, (1, 4), qp(s_out, 0), {"fuse": "NONE"})


def test_the_exporter_names_the_op_and_why() -> None:
    with pytest.raises(ExportError, match=r"`add0` \(ADD\): output multiplier .* = 1(\.\d+)? >= 1"):
        tflite_bytes(_single_add(1.9073486e-07))  # 2 * 0.1 / 2^20 = 1.9073486e-07: exactly 1
    tflite_bytes(_single_add(1.908e-07))  # 0.9997: fine
    w = const("w", np.full((1, 1, 1, 1), 100, np.int8), qp(np.array([0.01], np.float32), 0, 0))
    attrs = {"stride": (1, 1), "dilation": (1, 1), "padding": (0,) * 4, "groups": 1}
    conv = single_op_qgraph(
        OpKind.CONV_2D,
        [act("x", (1, 1, 4, 1), qp(0.01, 0)), w],
        (1, 1, 4, 1),
        qp(2.7e-9, -128),
        {**attrs, "fuse": "RELU6"},
    )
    with pytest.raises(ExportError, match=r"`conv_2d0` \(CONV_2D\): fused RELU6 on output scale"):
        tflite_bytes(conv)
    sm = single_op_qgraph(
        OpKind.SOFTMAX, [act("x", (1, 4), qp(1e-9, 0))], (1, 4), qp(1 / 256, -128), {"axis": -1}
    )
    with pytest.raises(ExportError, match=r"`softmax0` \(SOFTMAX\): input multiplier"):
        tflite_bytes(sm)


# ---- a rank-1 FULLY_CONNECTED: computed by run_int8 and LiteRT, refused at save by name ------


def _fc_rank1() -> Graph:
    rng = np.random.default_rng(18)
    w = const("w", rng.integers(-127, 128, (5, 16)).astype(np.int8), qp(np.float32(0.01), 0))
    bias = const("b", rng.integers(-500, 500, 5).astype(np.int32), qp(0.0005, 0))
    ins = [act("x", (16,), qp(0.05, 3)), w, bias]
    return single_op_qgraph(OpKind.FULLY_CONNECTED, ins, (5,), qp(0.1, -4), {"fuse": "NONE"})


def test_rank1_fully_connected_matches_litert() -> None:
    g = _fc_rank1()
    codes = [np.random.default_rng(1).integers(-128, 128, 16).astype(np.int8)]
    (want,) = run_int8(g, as_floats(g, codes), raw=True)
    (theirs,) = run_tflite_reference(tflite_bytes(g), codes)
    assert theirs.shape == want.shape == (5,)
    np.testing.assert_array_equal(theirs, want)


def test_rank1_fully_connected_is_refused_at_save_by_name(tmp_path: Path) -> None:
    with pytest.raises(
        LoweringError,
        match=r"`fully_connected0`: op FULLY_CONNECTED: input `x` "
        r"has rank 1 \(16,\); .* reshape it to \(1, 16\)",
    ):
        save(_fc_rank1(), tmp_path / "fc.mdla")
    b, _ = lower_single_op(_fc_rank1())  # the emulator holds NNAPI's rank >= 2 as well, at
    try:  # NeuronModel_finish, where no op name reaches the caller: hence the check at save
        assert b.finish() == BAD_DATA
    finally:
        b.free()


# ---- SOFTMAX on another axis: TRANSPOSE, SOFTMAX, TRANSPOSE in the .tflite ---------------------


def _softmax(shape: tuple[int, ...], axis: int) -> Graph:
    q_out = qp(1 / 256, -128)
    attrs = {"beta": 1.3, "axis": axis}
    return single_op_qgraph(OpKind.SOFTMAX, [act("x", shape, qp(0.07, 5))], shape, q_out, attrs)


SOFTMAX_CASES = [((2, 5, 3, 4), a) for a in range(-4, 3)] + [((3, 7), 0), ((2, 3, 6), 1)]


@pytest.mark.parametrize(("shape", "axis"), SOFTMAX_CASES)
def test_softmax_on_any_axis_matches_litert(shape: tuple[int, ...], axis: int) -> None:
    from ai_edge_litert import schema_py_generated as schema
    from ai_edge_litert.tools import flatbuffer_utils

    g = _softmax(shape, axis)
    codes = [np.random.default_rng(axis + 7).integers(-128, 128, shape).astype(np.int8)]
    (want,) = run_int8(g, as_floats(g, codes), raw=True)
    blob = tflite_bytes(g)
    (theirs,) = run_tflite_reference(blob, codes)
    np.testing.assert_array_equal(theirs, want)
    model = flatbuffer_utils.read_model_from_bytearray(bytearray(blob))
    ops = [model.operatorCodes[o.opcodeIndex].builtinCode for o in model.subgraphs[0].operators]
    code = schema.BuiltinOperator
    last = axis % len(shape) == len(shape) - 1
    assert ops == ([code.SOFTMAX] if last else [code.TRANSPOSE, code.SOFTMAX, code.TRANSPOSE])


@pytest.mark.parametrize(("shape", "axis"), SOFTMAX_CASES)
def test_softmax_on_any_axis_on_the_emulator(shape: tuple[int, ...], axis: int) -> None:
    g = _softmax(shape, axis)
    codes = [np.random.default_rng(axis + 7).integers(-128, 128, shape).astype(np.int8)]
    (want,) = run_int8(g, as_floats(g, codes), raw=True)
    np.testing.assert_array_equal(emu_run(g, codes), want)


def test_random_init_mobilenet_v2_exports_and_loads(tmp_path: Path) -> None:
    """The issue's case: random-init mobilenet_v2 had fused-RELU6 output scales down to 2e-9
    (6 / s leaves int32: LiteRT refused the export). With the converter's range floor its
    smallest scale is 1e-6 / 255 and LiteRT BUILTIN_REF agrees with run_int8 bit for bit."""
    import torch

    import mdla_ir
    import mdla_legalize
    from mdla_quant import quantize
    from mdla_quant.config import QuantConfig
    from mdla_zoo import load_model

    torch.manual_seed(0)
    model = load_model("mobilenet_v2")
    graph = mdla_ir.from_torch(model.module, model.example_inputs, name="mobilenet_v2")
    device = mdla_legalize.legalize(graph, mdla_legalize.load_target("mdla3.5"))
    rng = np.random.default_rng(0)
    shape = tuple(model.example_inputs[0].shape)
    cal = [[rng.standard_normal(shape).astype(np.float32)] for _ in range(2)]
    q = quantize(device, cal, QuantConfig(method="minmax"))
    smallest = min(t.quant.scale[0] for t in q.tensors.values() if t.quant and t.data is None)
    assert smallest == pytest.approx(1e-6 / 255, rel=1e-6)
    (want,) = run_int8(q, cal[0], raw=True)
    codes = list(quantize_inputs(q, cal[0]).values())
    (theirs,) = litert_in_child(tflite_bytes(q), codes, tmp_path)
    np.testing.assert_array_equal(theirs.reshape(want.shape), want)
