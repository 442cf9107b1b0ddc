"""The support queries and compilation agree on every operand form of every operation.

For each case of `forms_cases.cases()` (every operation, form, operand count and layout flag the
op schema lists): NeuronModel_finish accepts the model (each is a form NNAPI defines); on each
device alone and on all three, NeuronModel_getSupportedOperationsForDevices says true exactly
when createForDevices + NeuronCompilation_finish succeed, and
NeuronCompilation_getSupportedOperations (LiteRT's per-operation query) says the same on an
adapter-chosen compilation. A form the
emulator does not compute (an NCHW layout) is reported unsupported, never refused at finish, and
the per-operation query lets a client keep the rest of a model on the device.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest

from tests.runtime.forms_cases import FormCase, build, cases
from tests.runtime.test_emu_support import (
    DEVICES,
    NO_ERROR,
    QUANT8_SIGNED,
    QUANT8_SYMM,
    TENSOR_INT32,
    UNMAPPABLE,
    NeuronModelBuilder,
    compile_model,
    emu,
)

CASES = cases()
DEVICE_SETS = [[d] for d in DEVICES] + [list(DEVICES)]


def _compilation_query(b: NeuronModelBuilder) -> list[bool]:
    """NeuronCompilation_getSupportedOperations on an unfinished adapter-chosen compilation."""
    lib = emu()
    c = ctypes.c_void_p()
    assert lib.NeuronCompilation_createWithOptions(b.handle, ctypes.byref(c), b"") == NO_ERROR
    flags = (ctypes.c_bool * b.n_ops)()
    try:
        assert lib.NeuronCompilation_getSupportedOperations(c, b.n_ops, flags) == NO_ERROR
    finally:
        lib.NeuronCompilation_free(c)
    return [bool(f) for f in flags]


def test_the_cases_cover_every_form_of_the_schema() -> None:
    from mdla_ir.schema import BY_CODE

    forms = {(e.name, i) for e in BY_CODE.values() for i in range(len(e.forms))}
    assert {(c.entry.name, c.form) for c in CASES} == forms
    assert len(CASES) >= 97


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_support_query_and_compilation_agree(case: FormCase) -> None:
    b, shape, rc = build(case)
    try:
        assert rc == NO_ERROR, f"{case.name}: NeuronModel_finish refused a form NNAPI defines"
        answers = []
        for devices in DEVICE_SETS:
            (said,) = b.supported(devices)
            crc, compiled = compile_model(b, devices, [shape])
            compiled.free()
            assert (crc == NO_ERROR) == said, f"{case.name} on {devices}: {said} vs rc {crc}"
            answers.append(said)
        assert _compilation_query(b) == [answers[-1]]
        if case.nchw or not case.entry.emu:
            assert not any(answers), f"{case.name}: the emulator does not compute it"
    finally:
        b.free()


@pytest.mark.parametrize("form", [0, 1])
def test_both_transpose_conv_forms_map(form: int) -> None:
    """The bug a real client hit: LiteRT sends the implicit form (output shape, padding code)."""
    (case,) = [
        c for c in CASES if c.entry.name == "TRANSPOSE_CONV_2D" and c.form == form and not c.nchw
    ]
    b, _, rc = build(case)
    try:
        assert rc == NO_ERROR
        assert b.supported(list(DEVICES)) == [True]
    finally:
        b.free()


def _tconv(implicit: bool, same: bool) -> tuple[NeuronModelBuilder, tuple[int, ...]]:
    """A 3x3 stride-2 transposed conv of (1, 5, 5, 4) to 6 channels, in either form: SAME
    (output 10x10: 3 + 2 * 4 - 10 = 1 cropped, 0 before, 1 after) or VALID (11x11)."""
    b = NeuronModelBuilder()
    rng = np.random.default_rng(7)
    x = b.operand(QUANT8_SIGNED, (1, 5, 5, 4), 0.5, 3)
    w = b.const(QUANT8_SYMM, rng.integers(-127, 128, (6, 3, 3, 4)).astype(np.int8), 0.01)
    bias = b.const(TENSOR_INT32, rng.integers(-50, 50, 6).astype(np.int32), 0.005)
    size = 10 if same else 11
    shape = (1, size, size, 6)
    y = b.operand(QUANT8_SIGNED, shape, 0.25, -4)
    if implicit:
        out_shape = b.const(TENSOR_INT32, np.array(shape, dtype=np.int32))
        geometry = [out_shape, b.i32(1 if same else 2), b.i32(2), b.i32(2)]
    else:
        geometry = [b.i32(v) for v in ((0, 1, 0, 1) if same else (0, 0, 0, 0))]
        geometry += [b.i32(2), b.i32(2)]
    ins = [x, w, bias, *geometry, b.i32(0), b.boolean(False)]
    assert b.operation(91, ins, [y]) == NO_ERROR
    assert b.identify([x], [y]) == NO_ERROR
    assert b.finish() == NO_ERROR
    return b, shape


@pytest.mark.parametrize("same", [True, False], ids=["SAME", "VALID"])
def test_implicit_transpose_conv_computes_what_its_explicit_pads_do(same: bool) -> None:
    x = np.random.default_rng(8).integers(-128, 128, (1, 5, 5, 4)).astype(np.int8)
    outs: list[Any] = []
    for implicit in (False, True):
        b, shape = _tconv(implicit, same)
        rc, compiled = compile_model(b, ["mtk-mdla", "mtk-gpu"], [shape])
        assert rc == NO_ERROR
        outs.append(compiled.run([x])[0])
        compiled.free()
        b.free()
    assert len(np.unique(outs[0])) > 20
    np.testing.assert_array_equal(outs[0], outs[1])


def test_an_unsupported_form_is_one_operation_a_client_can_leave_to_its_cpu(capfd: Any) -> None:
    """CONV_2D then DEPTH_TO_SPACE with its NCHW flag set: the per-operation query keeps the
    conv (LiteRT partitions with it); the model query stays all-or-nothing (silicon fact 4);
    compiling the whole model fails UNMAPPABLE, naming operation 1 on the error log."""
    b = NeuronModelBuilder()
    rng = np.random.default_rng(1)
    x = b.operand(QUANT8_SIGNED, (1, 8, 8, 4), 0.5, 0)
    w = b.const(QUANT8_SYMM, rng.integers(-127, 128, (4, 1, 1, 4)).astype(np.int8), 0.01)
    bias = b.const(TENSOR_INT32, np.zeros(4, dtype=np.int32), 0.005)
    mid = b.operand(QUANT8_SIGNED, (1, 8, 8, 4), 0.5, 0)
    y = b.operand(QUANT8_SIGNED, (1, 1, 16, 16), 0.5, 0)
    geo = [b.i32(v) for v in (0, 0, 0, 0, 1, 1, 0)]
    assert b.operation(3, [x, w, bias, *geo], [mid]) == NO_ERROR
    assert b.operation(5, [mid, b.i32(2), b.boolean(True)], [y]) == NO_ERROR
    assert b.identify([x], [y]) == NO_ERROR
    try:
        assert b.finish() == NO_ERROR
        assert _compilation_query(b) == [True, False]
        assert b.supported(list(DEVICES)) == [False, False]
        assert compile_model(b, list(DEVICES), [(1, 1, 16, 16)])[0] == UNMAPPABLE
        lib = emu()
        c = ctypes.c_void_p()
        assert lib.NeuronCompilation_createWithOptions(b.handle, ctypes.byref(c), b"") == 0
        assert lib.NeuronCompilation_finish(c) == UNMAPPABLE
        lib.NeuronCompilation_free(c)
    finally:
        b.free()
    err = capfd.readouterr().err
    assert "NeuronCompilation_finish: operation 1 (DEPTH_TO_SPACE) maps on no device" in err


def test_finish_names_the_operation_whose_operands_are_wrong(capfd: Any) -> None:
    b = NeuronModelBuilder()
    x = b.operand(QUANT8_SIGNED, (1, 8, 8, 4), 0.5, 0)
    mid = b.operand(QUANT8_SIGNED, (1, 8, 8, 4), 0.5, 0)
    y = b.operand(QUANT8_SIGNED, (1, 4, 4, 4), 0.5, 0)  # VALID 3x3 / 2 on 8x8 gives 3x3
    assert b.operation(19, [x], [mid]) == NO_ERROR  # RELU
    geo = [b.i32(v) for v in (0, 0, 0, 0, 2, 2, 3, 3, 0)]
    assert b.operation(17, [mid, *geo], [y]) == NO_ERROR  # MAX_POOL_2D
    assert b.identify([x], [y]) == NO_ERROR
    try:
        assert b.finish() != NO_ERROR
    finally:
        b.free()
    err = capfd.readouterr().err
    assert "NeuronModel_finish: operation 1 (MAX_POOL_2D): its operands are not a valid" in err
