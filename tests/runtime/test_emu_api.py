"""The emulator's ABI behaviour: devices, result codes on misuse, and every silicon fact."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from tests.runtime.test_emu_support import (
    BAD_DATA,
    BAD_STATE,
    BAD_VERSION,
    DEVICES,
    NO_ERROR,
    OUTPUT_INSUFFICIENT_SIZE,
    PER_CHANNEL,
    QUANT8_SIGNED,
    QUANT8_SYMM,
    TENSOR_INT32,
    UNEXPECTED_NULL,
    UNMAPPABLE,
    Array,
    NeuronModelBuilder,
    compile_model,
    device_array,
    emu,
)

CONV, FC, CONCAT, ADD, RELU = 3, 9, 2, 0, 19
UNSUPPORTED_ON_MDLA = {"SQRT": 88, "RSQRT": 83, "EXP": 49, "LOG": 60, "CHANNEL_SHUFFLE": 46}


def conv_model(
    h: int = 8,
    pads: tuple[int, int, int, int] | None = (1, 1, 1, 1),
    stride: int = 1,
    implicit: int = 0,
    extra: int | None = None,
) -> tuple[NeuronModelBuilder, tuple[int, ...]]:
    """x[1,h,h,4] -> CONV_2D 3x3 (4->8, per-channel) -> RELU [-> op `extra`]; pads l r t b."""
    rng = np.random.default_rng(h * 10 + stride)
    b = NeuronModelBuilder()
    x = b.operand(QUANT8_SIGNED, (1, h, h, 4), 0.05, -3)
    w = b.operand(PER_CHANNEL, (8, 3, 3, 4))
    assert b.per_channel(w, 0, [0.01 + 0.001 * i for i in range(8)]) == NO_ERROR
    assert b.value(w, rng.integers(-127, 128, (8, 3, 3, 4)).astype(np.int8)) == NO_ERROR
    bias = b.const(TENSOR_INT32, rng.integers(-500, 500, 8).astype(np.int32))
    if implicit:
        oh = -(-h // stride) if implicit == 1 else (h - 3) // stride + 1
        geo = [b.i32(implicit), b.i32(stride), b.i32(stride), b.i32(0)]
    else:
        assert pads is not None
        le, r, t, bo = pads
        oh = (h + t + bo - 3) // stride + 1
        geo = [*(b.i32(v) for v in (le, r, t, bo, stride, stride)), b.i32(0)]
    y = b.operand(QUANT8_SIGNED, (1, oh, oh, 8), 0.1, 2)
    assert b.operation(CONV, [x, w, bias, *geo], [y]) == NO_ERROR
    z = b.operand(QUANT8_SIGNED, (1, oh, oh, 8), 0.1, 2)
    assert b.operation(RELU, [y], [z]) == NO_ERROR
    last = z
    if extra is not None:
        last = b.operand(QUANT8_SIGNED, (1, oh, oh, 8), 0.1, 2)
        assert b.operation(extra, [z], [last]) == NO_ERROR
    assert b.identify([x], [last]) == NO_ERROR
    return b, (1, oh, oh, 8)


def test_devices_and_version() -> None:
    lib = emu()
    count = ctypes.c_uint32()
    assert lib.Neuron_getDeviceCount(ctypes.byref(count)) == NO_ERROR
    names = []
    for i in range(count.value):
        dev, name = ctypes.c_void_p(), ctypes.c_char_p()
        assert lib.Neuron_getDevice(i, ctypes.byref(dev)) == NO_ERROR
        assert lib.NeuronDevice_getName(dev, ctypes.byref(name)) == NO_ERROR
        names.append(name.value.decode() if name.value else "")
    assert names == list(DEVICES)
    dev = ctypes.c_void_p()
    assert lib.Neuron_getDevice(count.value, ctypes.byref(dev)) == BAD_DATA
    version = (ctypes.c_uint8 * 3)()
    assert lib.Neuron_getVersion(version) == NO_ERROR
    assert version[0] >= 1
    assert lib.Neuron_getVersion(None) == UNEXPECTED_NULL


def test_conv_relu_maps_on_mdla() -> None:
    b, _ = conv_model()
    assert b.finish() == NO_ERROR
    assert b.supported(["mtk-mdla"]) == [True, True]
    b.free()


@pytest.mark.parametrize("name", sorted(UNSUPPORTED_ON_MDLA))
def test_all_or_nothing_and_unmappable(name: str) -> None:
    """Facts 2, 4, 5: one unsupported op -> 0/N reported, createForDevices UNMAPPABLE."""
    b, shape = conv_model(extra=UNSUPPORTED_ON_MDLA[name])
    assert b.finish() == NO_ERROR
    assert b.supported(["mtk-mdla"]) == [False, False, False]
    rc, comp = compile_model(b, ["mtk-mdla"], [shape])
    assert rc == UNMAPPABLE
    assert comp.handle.value is None
    b.free()


@pytest.mark.parametrize(("code", "name"), [(72, "QUANTIZE"), (6, "DEQUANTIZE")])
def test_quantize_dequantize_not_on_mdla(code: int, name: str) -> None:
    b = NeuronModelBuilder()
    x = b.operand(QUANT8_SIGNED, (1, 4), 0.1, 0)
    y = b.operand(QUANT8_SIGNED, (1, 4), 0.2, 0)
    assert b.operation(code, [x], [y]) == NO_ERROR, name
    assert b.identify([x], [y]) == NO_ERROR
    assert b.finish() == NO_ERROR
    assert b.supported(["mtk-mdla"]) == [False]
    assert compile_model(b, ["mtk-mdla"], [(1, 4)])[0] == UNMAPPABLE
    b.free()


def test_implicit_same_is_tf_asymmetric() -> None:
    """Fact 6: SAME on an even input with stride 2 pads (0, 1), not PyTorch's (1, 1)."""
    x = np.random.default_rng(5).integers(-128, 128, (1, 8, 8, 4)).astype(np.int8)
    outs = {}
    for key, kwargs in {
        "same": {"implicit": 1, "stride": 2},
        "tf": {"pads": (0, 1, 0, 1), "stride": 2},
        "torch": {"pads": (1, 1, 1, 1), "stride": 2},
    }.items():
        b, shape = conv_model(**kwargs)  # type: ignore[arg-type]
        assert b.finish() == NO_ERROR
        on_mdla = b.supported(["mtk-mdla"])[0]
        assert on_mdla == (key != "torch")  # symmetric stride-2 pads do not map on the MDLA
        rc, comp = compile_model(b, ["mtk-gpu"], [shape])
        assert rc == NO_ERROR
        (outs[key],) = comp.run([x])
        comp.free()
        b.free()
    assert np.array_equal(outs["same"], outs["tf"])
    assert not np.array_equal(outs["same"], outs["torch"])


def fc_model(per_channel: bool) -> NeuronModelBuilder:
    rng = np.random.default_rng(3)
    b = NeuronModelBuilder()
    x = b.operand(QUANT8_SIGNED, (1, 1280), 0.02, -5)
    w_data = rng.integers(-127, 128, (1000, 1280)).astype(np.int8)
    if per_channel:
        w = b.operand(PER_CHANNEL, (1000, 1280))
        assert b.per_channel(w, 0, list(rng.uniform(0.001, 0.01, 1000))) == NO_ERROR
        assert b.value(w, w_data) == NO_ERROR
    else:
        w = b.const(QUANT8_SYMM, w_data, 0.005, 0)
    bias = b.const(TENSOR_INT32, np.zeros(1000, np.int32))
    y = b.operand(QUANT8_SIGNED, (1, 1000), 0.5, 0)
    assert b.operation(FC, [x, w, bias, b.i32(0)], [y]) == NO_ERROR
    assert b.identify([x], [y]) == NO_ERROR
    assert b.finish() == NO_ERROR
    return b


def test_fully_connected_per_channel_classifier_rejected_on_mdla() -> None:
    """Fact 3: FC 1280 -> 1000 with per-channel weights does not map on mtk-mdla."""
    b = fc_model(per_channel=True)
    assert b.supported(["mtk-mdla"]) == [False]
    assert compile_model(b, ["mtk-mdla"], [(1, 1000)])[0] == UNMAPPABLE
    assert b.supported(["mtk-gpu"]) == [True]
    b.free()
    b = fc_model(per_channel=False)
    assert b.supported(["mtk-mdla"]) == [True]
    b.free()


@pytest.mark.parametrize("scale", [0.1, 0.2])
def test_concatenation_needs_one_scale(scale: float) -> None:
    """Fact 7: inputs and output of CONCATENATION share one scale."""
    b = NeuronModelBuilder()
    x0 = b.operand(QUANT8_SIGNED, (1, 2, 2, 3), 0.1, 4)
    x1 = b.operand(QUANT8_SIGNED, (1, 2, 2, 5), scale, 4)
    y = b.operand(QUANT8_SIGNED, (1, 2, 2, 8), 0.1, 4)
    assert b.operation(CONCAT, [x0, x1, b.i32(3)], [y]) == NO_ERROR
    assert b.identify([x0, x1], [y]) == NO_ERROR
    assert b.finish() == NO_ERROR
    same = scale == 0.1
    assert b.supported(["mtk-mdla"]) == [same]
    assert (compile_model(b, ["mtk-mdla"], [(1, 2, 2, 8)])[0] == NO_ERROR) == same
    b.free()


def compiled_blob() -> tuple[bytes, Array, Array]:
    b, shape = conv_model()
    assert b.finish() == NO_ERROR
    rc, comp = compile_model(b, ["mtk-mdla"], [shape])
    assert rc == NO_ERROR
    lib = emu()
    size = ctypes.c_size_t()
    assert lib.NeuronCompilation_getCompiledNetworkSize(comp.handle, ctypes.byref(size)) == 0
    buf = ctypes.create_string_buffer(size.value)
    assert lib.NeuronCompilation_storeCompiledNetwork(comp.handle, buf, size.value - 1) == BAD_DATA
    assert lib.NeuronCompilation_storeCompiledNetwork(comp.handle, buf, size.value) == NO_ERROR
    x = np.random.default_rng(9).integers(-128, 128, (1, 8, 8, 4)).astype(np.int8)
    (y,) = comp.run([x])
    comp.free()
    b.free()
    return buf.raw, x, y


def restore(blob: bytes) -> tuple[int, ctypes.c_void_p, ctypes.c_void_p]:
    model, comp = ctypes.c_void_p(), ctypes.c_void_p()
    data = ctypes.create_string_buffer(blob, len(blob))
    rc = emu().NeuronModel_restoreFromCompiledNetwork(
        ctypes.byref(model), ctypes.byref(comp), data, len(blob)
    )
    return int(rc), model, comp


def test_compiled_network_round_trip() -> None:
    """Fact 10: the stored network restores through the adapter and computes the same."""
    blob, x, y = compiled_blob()
    rc, model, comp = restore(blob)
    assert rc == NO_ERROR
    from tests.runtime.test_emu_support import Compiled

    (again,) = Compiled(comp, [y.shape]).run([x])
    assert np.array_equal(again, y)
    emu().NeuronCompilation_free(comp)
    emu().NeuronModel_free(model)


def test_compiled_network_rejects_corrupt_and_foreign_blobs() -> None:
    blob, _, _ = compiled_blob()
    flipped = bytearray(blob)
    flipped[len(blob) // 2] ^= 0x40
    assert restore(bytes(flipped))[0] == BAD_DATA  # checksum
    assert restore(blob[:-3])[0] == BAD_DATA  # truncated
    assert restore(b"MDLA\x00\x01" + bytes(200))[0] == BAD_DATA  # a .mdla manifest, say
    assert restore(bytes(np.random.default_rng(1).integers(0, 256, 512, np.uint8)))[0] == BAD_DATA
    future = bytearray(blob)
    future[8] = 99
    assert restore(bytes(future))[0] == BAD_VERSION
    assert restore(blob)[0] == NO_ERROR


def test_misuse_result_codes() -> None:
    lib = emu()
    assert lib.NeuronModel_create(None) == UNEXPECTED_NULL
    assert lib.NeuronModel_finish(None) == UNEXPECTED_NULL
    b = NeuronModelBuilder()
    x = b.operand(QUANT8_SIGNED, (1, 4), 0.1, 0)
    y = b.operand(QUANT8_SIGNED, (1, 4), 0.1, 0)
    flags = (ctypes.c_bool * 1)()
    arr = device_array(["mtk-mdla"])
    assert lib.NeuronModel_getSupportedOperationsForDevices(b.handle, arr, 1, flags) == BAD_STATE
    assert b.value(x, np.zeros(3, np.int8)) == BAD_DATA  # wrong length
    assert b.value(7, np.zeros(4, np.int8)) == BAD_DATA  # no such operand
    assert b.operation(ADD, [x, y], [y]) == BAD_DATA  # ADD needs its fuse operand
    assert b.operation(RELU, [x], [99]) == BAD_DATA
    assert b.operation(CONV, [x, y, x], [y]) == BAD_DATA
    assert b.identify([x], [x]) == BAD_DATA  # both input and output
    assert b.finish() == BAD_DATA  # inputs and outputs never identified
    assert b.operation(RELU, [x], [y]) == NO_ERROR
    assert b.identify([x], [y]) == NO_ERROR
    assert b.finish() == NO_ERROR
    assert b.finish() == BAD_STATE
    assert b.operation(RELU, [x], [y]) == BAD_STATE
    with pytest.raises(ValueError, match="7"):
        b.operand(QUANT8_SIGNED, (1, 4), 0.1, 0)
    rc, comp = compile_model(b, ["mtk-mdla"], [(1, 4)])
    assert rc == NO_ERROR
    assert lib.NeuronCompilation_finish(comp.handle) == BAD_STATE
    assert lib.NeuronCompilation_setPreference(comp.handle, 1) == BAD_STATE
    ex = ctypes.c_void_p()
    assert lib.NeuronExecution_create(comp.handle, ctypes.byref(ex)) == NO_ERROR
    buf = np.zeros(8, np.int8)
    assert lib.NeuronExecution_compute(ex) == BAD_STATE  # nothing bound
    assert lib.NeuronExecution_setInput(ex, 0, None, buf.ctypes.data, 3) == BAD_DATA
    assert lib.NeuronExecution_setInput(ex, 1, None, buf.ctypes.data, 4) == BAD_DATA
    assert lib.NeuronExecution_setInput(ex, 0, None, None, 4) == UNEXPECTED_NULL
    assert lib.NeuronExecution_setOutput(ex, 0, None, buf.ctypes.data, 2) == (
        OUTPUT_INSUFFICIENT_SIZE
    )
    assert lib.NeuronExecution_setInput(ex, 0, None, buf.ctypes.data, 4) == NO_ERROR
    assert lib.NeuronExecution_setOutput(ex, 0, None, buf[4:].ctypes.data, 4) == NO_ERROR
    assert lib.NeuronExecution_compute(ex) == NO_ERROR
    lib.NeuronExecution_free(ex)
    comp.free()
    b.free()


def test_uncompiled_and_bad_settings() -> None:
    lib = emu()
    b, shape = conv_model()
    rc, _ = compile_model(b, ["mtk-mdla"], [shape])
    assert rc == BAD_STATE  # model not finished
    assert b.finish() == NO_ERROR
    c = ctypes.c_void_p()
    assert (
        lib.NeuronCompilation_createForDevices(
            b.handle, device_array(["mtk-mdla"]), 1, ctypes.byref(c)
        )
        == 0
    )
    assert lib.NeuronCompilation_setPreference(c, 7) == BAD_DATA
    assert lib.NeuronCompilation_setPriority(c, 3) == BAD_DATA
    assert lib.NeuronCompilation_setPriority(c, 110) == NO_ERROR
    ex = ctypes.c_void_p()
    assert lib.NeuronExecution_create(c, ctypes.byref(ex)) == BAD_STATE
    size = ctypes.c_size_t()
    assert lib.NeuronCompilation_getCompiledNetworkSize(c, ctypes.byref(size)) == BAD_STATE
    lib.NeuronCompilation_free(c)
    bogus = (ctypes.c_void_p * 1)(12345)
    assert lib.NeuronCompilation_createForDevices(b.handle, bogus, 1, ctypes.byref(c)) == BAD_DATA
    b.free()


def test_output_shape_mismatch_is_bad_data() -> None:
    b = NeuronModelBuilder()
    x = b.operand(QUANT8_SIGNED, (1, 8, 8, 4), 0.1, 0)
    y = b.operand(QUANT8_SIGNED, (1, 4, 4, 4), 0.1, 0)  # a 2x2/2 pool would give 4x4: use 3x3
    geo = [b.i32(v) for v in (0, 0, 0, 0, 2, 2, 3, 3, 0)]
    assert b.operation(17, [x, *geo], [y]) == NO_ERROR
    assert b.identify([x], [y]) == NO_ERROR
    assert b.finish() == BAD_DATA  # VALID 3x3 stride 2 on 8x8 gives 3x3
    b.free()


def test_large_values_are_kept_by_pointer_until_compilation_finish() -> None:
    x = np.random.default_rng(2).integers(-128, 128, (1, 8, 8, 4)).astype(np.int8)
    b, shape = conv_model()
    weights = b.keep[0]  # the per-channel filter array handed to setOperandValue (288 bytes)
    assert weights.nbytes > 128
    assert b.finish() == NO_ERROR
    rc, comp = compile_model(b, ["mtk-mdla"], [shape])
    (before,) = comp.run([x])
    comp.free()
    weights[...] = -weights  # the emulator reads the caller's buffer until compilation finish
    rc, comp = compile_model(b, ["mtk-mdla"], [shape])
    assert rc == NO_ERROR
    (changed,) = comp.run([x])
    weights[...] = 0  # after finish the compilation holds its own copy
    (after,) = comp.run([x])
    assert not np.array_equal(before, changed)
    assert np.array_equal(changed, after)
    comp.free()
    b.free()
