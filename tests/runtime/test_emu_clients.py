"""The emulator driven through the call sequences of two public Neuron clients.

ExecuTorch's MediaTek runtime (backends/mediatek/runtime/NeuronExecutor.cpp) loads a compiled
network through the com.mediatek.compiled_network extension: N placeholder TENSOR_FLOAT32 inputs of
rank 0, the network operand (extension operand 0x0100) holding the bytes, M placeholder outputs,
the extension operation 0 over all of them, identifyInputsAndOutputs without the network operand,
then createWithOptions, TURBO_BOOST, HIGH priority, finish, and an execution. LiteRT's dispatch
takes the same route when restoring fails, with operand code 0x0200 from Neuron 8 on. On the
emulator the route runs the emulator's own compiled networks; the bytes ExecuTorch really ships
are DLAs from MediaTek's host compiler, which only the vendor adapter runs: finish refuses them
and says so.

MNN's loader (source/backend/mtk_neuron_adapter/backend/NeuronAdapterBackend.cpp) lists every
device by name, builds the model (per-channel parameters before the weights), asks
getSupportedOperationsForDevices once per device and compiles with createForDevices on the first
that supports every operation, prefers SUSTAINED_SPEED, then sets inputs and outputs by pointer
and computes.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from tests.runtime.test_emu_api import compiled_blob, conv_model, fc_model
from tests.runtime.test_emu_support import (
    BAD_DATA,
    NO_ERROR,
    Array,
    NeuronModelBuilder,
    emu,
)

TENSOR_FLOAT32, TURBO_BOOST, SUSTAINED, HIGH = 3, 3, 2, 110
EXTENSION = b"com.mediatek.compiled_network"
RUNTIME_OPTIONS = b'--apusys-config "{ \\"high_addr\\": true, \\"import_forever\\": true }"'


def load_compiled_network(
    blob: bytes, n_in: int, n_out: int, operand_code: int
) -> tuple[int, ctypes.c_void_p, NeuronModelBuilder]:
    """ExecuTorch's LoadFromCompiledNetwork, call for call: (finish's result, the compilation,
    the model)."""
    lib = emu()
    b = NeuronModelBuilder()
    ins = [b.operand(TENSOR_FLOAT32) for _ in range(n_in)]  # placeholders: rank 0
    ext = ctypes.c_int32()
    rc = lib.NeuronModel_getExtensionOperandType(
        b.handle, EXTENSION, operand_code, ctypes.byref(ext)
    )
    assert rc == NO_ERROR
    net = b.operand(ext.value)
    outs = [b.operand(TENSOR_FLOAT32) for _ in range(n_out)]
    data = ctypes.create_string_buffer(blob, len(blob))
    b.keep.append(data)  # > 128 bytes: kept by pointer until compilation finish
    assert lib.NeuronModel_setOperandValue(b.handle, net, data, len(blob)) == NO_ERROR
    op = ctypes.c_int32()
    assert lib.NeuronModel_getExtensionOperationType(b.handle, EXTENSION, 0, ctypes.byref(op)) == 0
    assert b.operation(op.value, [*ins, net], outs) == NO_ERROR
    assert b.identify(ins, outs) == NO_ERROR
    assert b.finish() == NO_ERROR
    c = ctypes.c_void_p()
    assert lib.NeuronCompilation_createWithOptions(b.handle, ctypes.byref(c), RUNTIME_OPTIONS) == 0
    assert lib.NeuronCompilation_setPreference(c, TURBO_BOOST) == NO_ERROR
    assert lib.NeuronCompilation_setPriority(c, HIGH) == NO_ERROR
    return int(lib.NeuronCompilation_finish(c)), c, b


def execute(c: ctypes.c_void_p, xs: list[Array], out_shapes: list[tuple[int, ...]]) -> list[Array]:
    lib = emu()
    e = ctypes.c_void_p()
    assert lib.NeuronExecution_create(c, ctypes.byref(e)) == NO_ERROR
    ys = [np.zeros(s, np.int8) for s in out_shapes]
    for i, x in enumerate(xs):
        assert lib.NeuronExecution_setInput(e, i, None, x.ctypes.data, x.nbytes) == NO_ERROR
    for i, y in enumerate(ys):
        assert lib.NeuronExecution_setOutput(e, i, None, y.ctypes.data, y.nbytes) == NO_ERROR
    assert lib.NeuronExecution_compute(e) == NO_ERROR
    lib.NeuronExecution_free(e)
    return ys


@pytest.mark.parametrize("operand_code", [0x0100, 0x0200], ids=["executorch", "litert-np8"])
def test_executorch_loads_a_compiled_network_through_the_extension(operand_code: int) -> None:
    blob, x, y = compiled_blob()
    rc, c, b = load_compiled_network(blob, 1, 1, operand_code)
    assert rc == NO_ERROR
    size = ctypes.c_size_t()
    assert emu().NeuronCompilation_getInputPaddedSize(c, 0, ctypes.byref(size)) == NO_ERROR
    assert size.value == x.nbytes  # the network's input, not the rank-0 placeholder's 4 bytes
    (again,) = execute(c, [x], [y.shape])
    assert np.array_equal(again, y)
    emu().NeuronCompilation_free(c)
    b.free()


def test_the_extension_route_checks_the_placeholders_against_the_network() -> None:
    blob, _, _ = compiled_blob()
    rc, c, b = load_compiled_network(blob, 2, 1, 0x0100)  # the network has one input
    assert rc == BAD_DATA
    emu().NeuronCompilation_free(c)
    b.free()


def test_a_vendor_dla_is_refused_with_the_reason(capfd: pytest.CaptureFixture[str]) -> None:
    """Where only a vendor blob is missing: the bytes of a DLA from MediaTek's compiler."""
    fake_dla = b"\x7fDLA" + bytes(np.random.default_rng(0).integers(0, 256, 4096, np.uint8))
    rc, c, b = load_compiled_network(fake_dla, 1, 1, 0x0100)
    assert rc == BAD_DATA
    assert "not a network this emulator compiled" in capfd.readouterr().err
    emu().NeuronCompilation_free(c)
    b.free()


def device_names() -> list[tuple[ctypes.c_void_p, str]]:
    lib = emu()
    count = ctypes.c_uint32()
    assert lib.Neuron_getDeviceCount(ctypes.byref(count)) == NO_ERROR
    out = []
    for i in range(count.value):
        dev, name = ctypes.c_void_p(), ctypes.c_char_p()
        assert lib.Neuron_getDevice(i, ctypes.byref(dev)) == NO_ERROR
        assert lib.NeuronDevice_getName(dev, ctypes.byref(name)) == NO_ERROR
        out.append((dev, (name.value or b"").decode()))
    return out


def mnn_compile(b: NeuronModelBuilder) -> tuple[str, ctypes.c_void_p]:
    """MNN's buildModel after finish: the first device supporting every op, then compile."""
    lib = emu()
    for dev, name in device_names():
        flags = (ctypes.c_bool * b.n_ops)()
        one = (ctypes.c_void_p * 1)(dev.value)
        assert lib.NeuronModel_getSupportedOperationsForDevices(b.handle, one, 1, flags) == 0
        if all(flags):
            c = ctypes.c_void_p()
            assert lib.NeuronCompilation_createForDevices(b.handle, one, 1, ctypes.byref(c)) == 0
            assert lib.NeuronCompilation_setPreference(c, SUSTAINED) == NO_ERROR
            assert lib.NeuronCompilation_finish(c) == NO_ERROR
            return name, c
    raise AssertionError("no device supports every operation")


def test_mnn_picks_the_first_device_supporting_everything() -> None:
    b, shape = conv_model()
    assert b.finish() == NO_ERROR
    name, c = mnn_compile(b)
    assert name == "mtk-mdla"
    _, x0, y0 = compiled_blob()  # the same model through createForDevices, as the engine
    assert np.array_equal(execute(c, [x0], [shape])[0], y0)
    emu().NeuronCompilation_free(c)
    b.free()
    fc = fc_model(per_channel=True)  # the MDLA refuses it (fact 3): MNN moves on to the GPU
    name, c = mnn_compile(fc)
    assert name == "mtk-gpu"
    emu().NeuronCompilation_free(c)
    fc.free()
