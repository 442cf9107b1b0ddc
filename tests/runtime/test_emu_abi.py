"""The whole Neuron Adapter ABI on the emulator: every function exported, each with its semantics.

What a host can do is done (device choice, deferred mapping failure, the support query on an
unfinished compilation, padded sizes, fd-backed memory, events, caching, hints stored and given
back, the debug report); what needs a vendor library (extensions other than the compiled network,
AHardwareBuffer) fails with a result code and one line on stderr naming why.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mdla_emu import CSRC, EmulatorError, build_emulator, target_for_soc
from tests.runtime.test_emu_api import conv_model
from tests.runtime.test_emu_support import (
    BAD_DATA,
    BAD_STATE,
    NO_ERROR,
    QUANT8_SIGNED,
    UNEXPECTED_NULL,
    UNMAPPABLE,
    Array,
    NeuronModelBuilder,
    compile_model,
    emu,
)

SQRT, PLACEHOLDER, NORMAL, BATCHED = 88, 10001, 0, 2
DOC = Path(__file__).resolve().parents[3] / "shared/docs/reference/neuron-adapter-abi.md"


def declared() -> list[str]:
    """Every function the ABI header declares (both X-macro lists)."""
    return re.findall(r"X\((Neuron\w+),", (CSRC / "neuron_abi.h").read_text())


def documented(text: str) -> set[str]:
    """The functions of the reference's section 1 tables, rows like `A / B / …C` expanded (a
    bare name takes A's `Module_` prefix, `…C` replaces A's last camel-case words), plus the C++
    restoreFromCompiledNetworkV2 that section 0 names."""
    section = text.split("## 1.", 1)[1].split("## 2.", 1)[0]
    names = {"NeuronModel_restoreFromCompiledNetworkV2"}
    for row in re.findall(r"^\| (Neuron\w*_\w+[^|]*)\|", section, re.M):
        parts = [p.strip() for p in row.split(" / ")]
        first = parts[0]
        names.add(first)
        prefix, stem = first.split("_", 1)
        for part in parts[1:]:
            if part.startswith("…"):
                tail = part[1:]
                words = re.findall(r"[A-Z][a-z0-9]*|^[a-z]+", stem)
                keep = len(words) - len(re.findall(r"[A-Z][a-z0-9]*", tail))
                names.add(f"{prefix}_{''.join(words[:keep])}{tail}")
            else:
                names.add(part if "_" in part else f"{prefix}_{part}")
    return names


def test_nm_lists_every_function_of_the_header() -> None:
    names = declared()
    assert len(names) == len(set(names)) == 85  # NeuronAdapter.h's count
    out = subprocess.run(
        ["nm", "-D", "--defined-only", str(build_emulator())],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    exported = {line.split()[-1] for line in out.splitlines() if " T " in line}
    assert set(names) - exported == set()


LISTED = Path(__file__).with_name("neuron_adapter_functions.txt")


def listed() -> set[str]:
    """The reference's function list, kept in the repo so the check runs on any clone."""
    lines = LISTED.read_text().splitlines()
    return {line for line in lines if line and not line.startswith("#")}


def test_the_header_declares_the_reference_list() -> None:
    assert listed() == set(declared())


@pytest.mark.skipif(not DOC.exists(), reason="the shared reference docs are not beside the repo")
def test_the_kept_list_is_the_reference_docs_list() -> None:
    assert documented(DOC.read_text()) == listed()


def test_version_devices_and_fixed_answers() -> None:
    lib = emu()
    version = (ctypes.c_uint8 * 3)()
    assert lib.Neuron_getVersion(version) == NO_ERROR
    assert tuple(version) == (8, 2, 24)  # >= 8.2.24: LiteRT asks getSupportedOperations
    dev, text = ctypes.c_void_p(), ctypes.c_char_p()
    assert lib.Neuron_getDevice(0, ctypes.byref(dev)) == NO_ERROR
    assert lib.NeuronDevice_getDescription(dev, ctypes.byref(text)) == NO_ERROR
    assert text.value == b"mtk-mdla emulated by libneuron_emu (target mdla3.5, SoC mt6886)"
    assert lib.NeuronDevice_getDescription(None, ctypes.byref(text)) == UNEXPECTED_NULL
    flag, kb = ctypes.c_bool(True), ctypes.c_uint32(7)
    assert (
        lib.NeuronDevice_getExtensionSupport(b"com.mediatek.compiled_network", ctypes.byref(flag))
        == 0
    )
    assert flag.value
    assert lib.NeuronDevice_getExtensionSupport(b"com.example.ops", ctypes.byref(flag)) == 0
    assert not flag.value
    assert lib.Neuron_getFeatureSupportedStatus(1, ctypes.byref(flag)) == NO_ERROR
    assert not flag.value  # no throughput mode
    assert lib.Neuron_getFeatureSupportedStatus(9, ctypes.byref(flag)) == BAD_DATA
    assert lib.Neuron_getL1MemorySizeKb(ctypes.byref(kb)) == NO_ERROR
    assert kb.value == 0  # no L1 is modeled: LiteRT then leaves setL1MemorySizeKb alone
    assert lib.Neuron_getDefaultLoopTimeout() == 2_000_000_000
    assert lib.Neuron_getMaximumLoopTimeout() == 15_000_000_000


def _fc_per_channel() -> NeuronModelBuilder:
    from tests.runtime.test_emu_api import fc_model

    return fc_model(per_channel=True)  # finished


def _create(
    kind: str, b: NeuronModelBuilder, options: bytes = b"--opt 3"
) -> tuple[int, ctypes.c_void_p]:
    lib, c = emu(), ctypes.c_void_p()
    if kind == "create":
        rc = lib.NeuronCompilation_create(b.handle, ctypes.byref(c))
    elif kind == "options":
        rc = lib.NeuronCompilation_createWithOptions(b.handle, ctypes.byref(c), options)
    else:
        rc = getattr(lib, f"NeuronCompilation_createFor{kind}")(b.handle, ctypes.byref(c))
    return int(rc), c


def _sqrt_model() -> NeuronModelBuilder:
    b, _ = conv_model(extra=SQRT)
    assert b.finish() == NO_ERROR
    return b


def test_create_picks_a_device_that_maps_the_whole_model() -> None:
    lib = emu()
    b = _fc_per_channel()  # the MDLA refuses it (fact 3): another device maps all of it
    assert b.supported(["mtk-mdla"]) == [False]
    rc, c = _create("create", b)
    assert rc == NO_ERROR
    assert lib.NeuronCompilation_finish(c) == NO_ERROR
    lib.NeuronCompilation_free(c)
    flags = (ctypes.c_bool * 1)()
    assert lib.NeuronModel_getSupportedOperations(b.handle, flags, 1) == NO_ERROR
    assert list(flags) == [True]
    b.free()
    s = _sqrt_model()  # SQRT maps nowhere: create refuses at once
    rc, c = _create("create", s)
    assert (rc, c.value) == (UNMAPPABLE, None)
    flags3 = (ctypes.c_bool * 3)(True, True, True)
    assert lib.NeuronModel_getSupportedOperations(s.handle, flags3, 3) == NO_ERROR
    assert list(flags3) == [False, False, False]  # all or nothing (fact 4)
    assert lib.NeuronModel_getSupportedOperations(s.handle, flags3, 2) == BAD_DATA
    s.free()


@pytest.mark.parametrize("kind", ["options", "Batch", "MultiExecutions", "Debug"])
def test_deferred_kinds_fail_to_map_at_finish(kind: str) -> None:
    lib = emu()
    s = _sqrt_model()
    rc, c = _create(kind, s)
    assert rc == NO_ERROR  # no mapping failure at create
    assert lib.NeuronCompilation_finish(c) == UNMAPPABLE
    lib.NeuronCompilation_free(c)
    s.free()


def _with_placeholder() -> NeuronModelBuilder:
    """conv -> relu -> LiteRT's placeholder NEURON_UNKNOWN (an op left for the CPU)."""
    b = NeuronModelBuilder()
    x = b.operand(QUANT8_SIGNED, (1, 8, 8, 8), 0.1, 2)
    y = b.operand(QUANT8_SIGNED, (1, 8, 8, 8), 0.1, 2)
    z = b.operand(QUANT8_SIGNED, (1, 8, 8, 8), 0.1, 2)
    w = b.operand(QUANT8_SIGNED, (1, 8, 8, 8), 0.1, 2)
    assert b.operation(19, [x], [y]) == NO_ERROR  # RELU
    assert b.operation(PLACEHOLDER, [y], [z]) == NO_ERROR
    assert b.operation(21, [z], [w]) == NO_ERROR  # RELU6
    assert b.identify([x], [w]) == NO_ERROR
    assert b.finish() == NO_ERROR
    return b


def test_support_query_on_an_unfinished_compilation_accepts_the_placeholder() -> None:
    lib = emu()
    b = _with_placeholder()
    rc, c = _create("options", b)
    assert rc == NO_ERROR
    flags = (ctypes.c_bool * 3)()
    assert lib.NeuronCompilation_getSupportedOperations(c, 3, flags) == NO_ERROR
    assert list(flags) == [True, False, True]  # per operation, the placeholder only is out
    assert lib.NeuronCompilation_getSupportedOperations(c, 2, flags) == BAD_DATA
    assert lib.NeuronCompilation_finish(c) == UNMAPPABLE
    lib.NeuronCompilation_free(c)
    assert _create("create", b)[0] == UNMAPPABLE
    b.free()


def _compiled(kind: str = "options") -> tuple[NeuronModelBuilder, ctypes.c_void_p, tuple[int, ...]]:
    b, shape = conv_model()
    assert b.finish() == NO_ERROR
    rc, c = _create(kind, b)
    assert rc == NO_ERROR
    return b, c, shape


def test_hints_are_stored_and_given_back() -> None:
    lib = emu()
    b, c, _ = _compiled()
    out, text = ctypes.c_int(), ctypes.c_char_p()
    assert lib.NeuronCompilation_getPriority(c, ctypes.byref(out)) == BAD_STATE  # before finish
    assert lib.NeuronCompilation_getOptimizationString(c, ctypes.byref(text)) == NO_ERROR
    assert text.value == b"--opt 3"  # createWithOptions'
    assert lib.NeuronCompilation_setOptimizationString(c, b"--opt-accuracy") == NO_ERROR
    assert lib.NeuronCompilation_getOptimizationString(c, ctypes.byref(text)) == NO_ERROR
    assert text.value == b"--opt-accuracy"
    assert lib.NeuronCompilation_setOptimizationHint(c, 1 | 2) == NO_ERROR
    assert lib.NeuronCompilation_setOptimizationHint(c, 8) == BAD_DATA
    hints = [
        ("setL1MemorySizeKb", 2048),
        ("setTrimIOAlignment", True),
        ("setSWDilatedConv", True),
        ("setOnlyAllowOptimizationString", True),
    ]
    for fn, value in hints:
        assert getattr(lib, f"NeuronCompilation_{fn}")(c, value) == NO_ERROR
    assert lib.NeuronCompilation_setPriority(c, 110) == NO_ERROR
    assert lib.NeuronCompilation_setPreference(c, 3) == NO_ERROR
    assert lib.NeuronCompilation_finish(c) == NO_ERROR
    assert lib.NeuronCompilation_getPriority(c, ctypes.byref(out)) == NO_ERROR
    assert out.value == 110
    assert lib.NeuronCompilation_getPreference(c, ctypes.byref(out)) == NO_ERROR
    assert out.value == 3
    assert lib.NeuronCompilation_setL1MemorySizeKb(c, 1) == BAD_STATE  # after finish
    lib.NeuronCompilation_free(c)
    assert lib.NeuronModel_relaxComputationFloat32toFloat16(b.handle, True) == NO_ERROR
    assert lib.NeuronModel_suppressInputConversion(b.handle, True) == BAD_STATE  # finished
    assert lib.NeuronModel_setName(b.handle, b"net") == NO_ERROR
    assert lib.NeuronModel_setName(b.handle, None) == UNEXPECTED_NULL
    b.free()


TRACED = """
import ctypes, sys
from tests.runtime.test_emu_api import conv_model
from tests.runtime.test_emu_support import emu
lib = emu()
b, _ = conv_model()
b.finish()
c, e = ctypes.c_void_p(), ctypes.c_void_p()
lib.NeuronCompilation_create(b.handle, ctypes.byref(c))
lib.NeuronCompilation_setL1MemorySizeKb(c, 512)
lib.NeuronCompilation_setPriority(c, 90)
lib.NeuronCompilation_finish(c)
lib.NeuronExecution_create(c, ctypes.byref(e))
lib.NeuronExecution_setBoostHint(e, 77)
"""


def test_trace_reports_calls_and_hints_in_order(tmp_path: Path) -> None:
    trace = tmp_path / "trace.txt"
    root = Path(__file__).resolve().parents[2]
    path = os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    env = os.environ | {"MDLA_EMU_TRACE": str(trace), "PYTHONPATH": path}
    subprocess.run([sys.executable, "-c", TRACED], env=env, check=True, cwd=root, timeout=120)
    lines = trace.read_text().splitlines()
    tail = lines[lines.index("NeuronModel_finish") :]
    assert tail == [
        "NeuronModel_finish",
        "NeuronCompilation_create",
        "NeuronCompilation_setL1MemorySizeKb 512",
        "NeuronCompilation_setPriority 90",
        "NeuronCompilation_finish",
        "NeuronExecution_create",
        "NeuronExecution_setBoostHint 77",
    ]
    assert lines[0] == "NeuronModel_create"


def test_padded_sizes_and_dimensions_are_the_operands() -> None:
    lib = emu()
    b, c, shape = _compiled()
    size, dims = ctypes.c_size_t(), (ctypes.c_uint32 * 4)()
    assert lib.NeuronCompilation_getInputPaddedSize(c, 0, ctypes.byref(size)) == BAD_STATE
    assert lib.NeuronCompilation_finish(c) == NO_ERROR
    assert lib.NeuronCompilation_getInputPaddedSize(c, 0, ctypes.byref(size)) == NO_ERROR
    assert size.value == 8 * 8 * 4
    assert lib.NeuronCompilation_getOutputPaddedSize(c, 0, ctypes.byref(size)) == NO_ERROR
    assert size.value == int(np.prod(shape))
    assert lib.NeuronCompilation_getInputPaddedDimensions(c, 0, dims) == NO_ERROR
    assert list(dims) == [1, 8, 8, 4]
    assert lib.NeuronCompilation_getOutputPaddedDimensions(c, 0, dims) == NO_ERROR
    assert tuple(dims) == shape
    assert lib.NeuronCompilation_getOutputPaddedSize(c, 1, ctypes.byref(size)) == BAD_DATA
    assert lib.NeuronCompilation_getInputPaddedDimensions(c, -1, dims) == BAD_DATA
    lib.NeuronCompilation_free(c)
    b.free()


def _memfd(data: bytes) -> int:
    fd = os.memfd_create("t")
    os.write(fd, data)
    return fd


def _reference(shape: tuple[int, ...], x: Array) -> Array:
    b, _ = conv_model()
    assert b.finish() == NO_ERROR
    rc, comp = compile_model(b, ["mtk-mdla"], [shape])
    assert rc == NO_ERROR
    (y,) = comp.run([x])
    comp.free()
    b.free()
    return y


def test_memory_from_fd_binds_inputs_and_outputs() -> None:
    lib = emu()
    b, c, shape = _compiled("create")
    assert lib.NeuronCompilation_finish(c) == NO_ERROR
    x = np.random.default_rng(3).integers(-128, 128, (1, 8, 8, 4)).astype(np.int8)
    n_out = int(np.prod(shape))
    # the input 100 bytes into its file (not page aligned), the output in a second file
    fd_in, fd_out = _memfd(bytes(100) + x.tobytes()), _memfd(bytes(n_out))
    m_in, m_out, m_ro = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    assert lib.NeuronMemory_createFromFd(x.nbytes, 1, fd_in, 100, ctypes.byref(m_in)) == 0
    assert lib.NeuronMemory_createFromFd(n_out, 3, fd_out, 0, ctypes.byref(m_out)) == 0
    assert lib.NeuronMemory_createFromFd(n_out, 1, fd_out, 0, ctypes.byref(m_ro)) == 0
    bad = ctypes.c_void_p(1)
    assert lib.NeuronMemory_createFromFd(16, 3, -1, 0, ctypes.byref(bad)) == BAD_DATA
    assert bad.value is None
    e = ctypes.c_void_p()
    assert lib.NeuronExecution_create(c, ctypes.byref(e)) == NO_ERROR
    assert lib.NeuronExecution_setInputFromMemory(e, 0, None, m_in, 1, x.nbytes) == BAD_DATA
    assert lib.NeuronExecution_setInputFromMemory(e, 0, None, m_in, 0, x.nbytes) == NO_ERROR
    rank = ctypes.c_uint32()
    assert lib.NeuronExecution_getOutputOperandRank(e, 0, ctypes.byref(rank)) == BAD_STATE
    assert lib.NeuronExecution_setOutputFromMemory(e, 0, None, m_ro, 0, n_out) == BAD_DATA
    assert lib.NeuronExecution_setOutputFromMemory(e, 0, None, m_out, 0, n_out) == NO_ERROR
    assert lib.NeuronExecution_setCacheFlushHint(e, 3) == NO_ERROR
    assert lib.NeuronExecution_setCacheFlushHint(e, 4) == BAD_DATA
    assert lib.NeuronExecution_setBoostHint(e, 101) == BAD_DATA
    assert lib.NeuronExecution_setBoostHint(e, 100) == NO_ERROR
    assert lib.NeuronExecution_setLoopTimeout(e, 10**12) == NO_ERROR
    assert lib.NeuronExecution_setRunnerPoolSize(e, 2) == BAD_STATE  # not a batched compilation
    assert lib.NeuronExecution_compute(e) == NO_ERROR
    y = np.frombuffer(os.pread(fd_out, n_out, 0), np.int8).reshape(shape)
    assert np.array_equal(y, _reference(shape, x))
    dims = (ctypes.c_uint32 * 4)()
    assert lib.NeuronExecution_getOutputOperandRank(e, 0, ctypes.byref(rank)) == NO_ERROR
    assert lib.NeuronExecution_getOutputOperandDimensions(e, 0, dims) == NO_ERROR
    assert (rank.value, tuple(dims)) == (4, shape)
    lib.NeuronExecution_free(e)
    for m in (m_in, m_out, m_ro):
        lib.NeuronMemory_free(m)
    os.close(fd_in)
    os.close(fd_out)
    lib.NeuronCompilation_free(c)
    b.free()


def test_events_wait_for_fences_and_carry_the_result() -> None:
    lib = emu()
    b, c, shape = _compiled()
    assert lib.NeuronCompilation_finish(c) == NO_ERROR
    x = np.random.default_rng(4).integers(-128, 128, (1, 8, 8, 4)).astype(np.int8)
    y = np.zeros(shape, np.int8)
    e, ev, fence = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    assert lib.NeuronExecution_create(c, ctypes.byref(e)) == NO_ERROR
    deps = (ctypes.c_void_p * 1)()
    start = lib.NeuronExecution_startComputeWithDependencies
    assert start(e, deps, 0, 0, ctypes.byref(ev)) == BAD_STATE  # inputs unset: not scheduled
    assert lib.NeuronExecution_setInput(e, 0, None, x.ctypes.data, x.nbytes) == NO_ERROR
    assert lib.NeuronExecution_setOutput(e, 0, None, y.ctypes.data, y.nbytes) == NO_ERROR
    r, w = os.pipe()
    os.write(w, b"!")  # a signalled fence: readable
    assert lib.NeuronEvent_createFromSyncFenceFd(r, ctypes.byref(fence)) == NO_ERROR
    os.close(r)  # the event holds its own duplicate
    deps[0] = fence.value
    assert start(e, deps, 1, 0, ctypes.byref(ev)) == NO_ERROR
    assert lib.NeuronEvent_wait(ev) == NO_ERROR
    assert np.array_equal(y, _reference(shape, x))
    fd = ctypes.c_int()
    assert lib.NeuronEvent_getSyncFenceFd(ev, ctypes.byref(fd)) == BAD_DATA
    assert fd.value == -1
    assert lib.NeuronEvent_getSyncFenceFd(fence, ctypes.byref(fd)) == NO_ERROR
    assert fd.value >= 0
    os.close(fd.value)
    lib.NeuronEvent_free(ev)
    lib.NeuronEvent_freeForce(fence)
    os.close(w)
    lib.NeuronExecution_free(e)
    lib.NeuronCompilation_free(c)
    b.free()


def test_vendor_only_features_say_so(capfd: pytest.CaptureFixture[str]) -> None:
    lib = emu()
    b = NeuronModelBuilder()
    t = ctypes.c_int32()
    operand_type = lib.NeuronModel_getExtensionOperandType
    assert operand_type(b.handle, b"com.example.x", 1, ctypes.byref(t)) == BAD_DATA
    operation_type = lib.NeuronModel_getExtensionOperationType
    assert operation_type(b.handle, b"com.mediatek.compiled_network", 0, ctypes.byref(t)) == 0
    assert t.value == 1 << 16
    x = b.operand(QUANT8_SIGNED, (1, 4), 0.1, 0)
    dev = ctypes.c_void_p()
    assert lib.Neuron_getDevice(0, ctypes.byref(dev)) == NO_ERROR
    ins = (ctypes.c_uint32 * 1)(x)
    add = lib.NeuronModel_addOperationExtension
    assert add(b.handle, b"Gelu", b"mtk", dev, 1, ins, 1, ins) == BAD_DATA
    with pytest.raises(ValueError, match="addOperand -> 4"):
        b.operand(9008, (4,))  # EXT_TENSOR_QUANT8_ASYMM_SIGNED_PER_CHANNEL
    mem = ctypes.c_void_p()
    ahwb = ctypes.c_void_p(8)  # any non-NULL handle: the host has none
    assert lib.NeuronMemory_createFromAHardwareBuffer(ahwb, ctypes.byref(mem)) == BAD_STATE
    err = capfd.readouterr().err
    assert "extension `com.example.x` is not supported by the emulator" in err
    assert "operation extension Gelu of vendor mtk is not supported by the emulator" in err
    assert "operand type 9008 (a Neuron extended type) is not supported by the emulator" in err
    assert "AHardwareBuffer exists only on Android" in err
    b.free()


def test_per_channel_params_with_zero_points() -> None:
    lib = emu()

    class Params(ctypes.Structure):
        _fields_ = [
            ("channelDim", ctypes.c_uint32),
            ("scaleCount", ctypes.c_uint32),
            ("scales", ctypes.POINTER(ctypes.c_float)),
            ("zeroPointCount", ctypes.c_uint32),
            ("zeroPoints", ctypes.POINTER(ctypes.c_int32)),
        ]

    assert ctypes.sizeof(Params) == 32
    b = NeuronModelBuilder()
    w = b.operand(11, (2, 1, 1, 3))
    scales = (ctypes.c_float * 2)(0.1, 0.2)
    for zps, rc in [((0, 0), NO_ERROR), ((0, 1), BAD_DATA)]:
        arr = (ctypes.c_int32 * 2)(*zps)
        p = Params(0, 2, scales, 2, arr)
        assert lib.NeuronModel_setOperandPerChannelQuantParams(b.handle, w, ctypes.byref(p)) == rc
    b.free()


def test_platform_variable_names_a_soc_of_the_target(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    lib = emu()
    assert target_for_soc("MT6886") == "mdla3.5"
    with pytest.raises(EmulatorError, match="known SoCs: mt6886"):
        target_for_soc("mt6989")
    for soc, rc in [("mt6989", BAD_DATA), ("MT6886", NO_ERROR)]:
        monkeypatch.setenv("MTKNN_ADAPTER_DLA_PLATFORM", soc)
        b, c, _ = _compiled()
        assert lib.NeuronCompilation_finish(c) == rc
        lib.NeuronCompilation_free(c)
        b.free()
    assert "MTKNN_ADAPTER_DLA_PLATFORM=mt6989: this emulator is built for target mdla3.5" in (
        capfd.readouterr().err
    )


def _run_conv(cache_dir: Path | None, token: bytes, extra: int | None) -> Array:
    """conv_model(extra) compiled (with setCaching(cache_dir, token) when cache_dir is given)
    and run on a fixed input."""
    from tests.runtime.test_emu_support import Compiled

    lib = emu()
    x = np.random.default_rng(5).integers(-128, 128, (1, 8, 8, 4)).astype(np.int8)
    b, shape = conv_model(extra=extra)
    assert b.finish() == NO_ERROR
    rc, c = _create("create", b)
    assert rc == NO_ERROR
    if cache_dir is not None:
        assert lib.NeuronCompilation_setCaching(c, str(cache_dir).encode(), token) == 0
    assert lib.NeuronCompilation_finish(c) == NO_ERROR
    (y,) = Compiled(c, [shape]).run([x])
    lib.NeuronCompilation_free(c)
    b.free()
    return y


def test_caching_stores_then_restores_by_token(tmp_path: Path) -> None:
    """The first compilation with a token writes the entry; a later one with the same token
    loads it (a collision of tokens is the caller's, as the header says): a model that clamps
    with RELU6 then computes what the cached model without it did."""
    token = bytes(range(32))

    def run(extra: int | None, cache: bool) -> Array:
        return _run_conv(tmp_path if cache else None, token, extra)

    plain = run(None, cache=True)
    (entry,) = tmp_path.iterdir()
    assert entry.name == f"mdla-emu-{token.hex()}.bin"
    assert entry.read_bytes()[:8] == b"MDLAEMUC"
    clamped = run(21, cache=False)
    assert not np.array_equal(plain, clamped)
    assert np.array_equal(run(21, cache=True), plain)


def test_caching_follows_no_symlink_planted_at_a_predictable_name(tmp_path: Path) -> None:
    """The entry is written through a fresh mkstemp file, never through a name an attacker can
    plant in advance: a symlink at `<entry>.<pid>.tmp` (the name the store once opened with
    fopen "wb") is left alone, its target unchanged, and the entry lands whole with no temporary
    file left behind."""
    token = bytes(range(32))
    entry = tmp_path / f"mdla-emu-{token.hex()}.bin"
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious")
    planted = tmp_path / f"{entry.name}.{os.getpid()}.tmp"
    planted.symlink_to(victim)
    _run_conv(tmp_path, token, None)
    assert victim.read_bytes() == b"precious"
    assert planted.is_symlink()
    assert entry.read_bytes()[:8] == b"MDLAEMUC"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [entry.name, victim.name, planted.name]
    )


def test_caching_with_a_corrupt_entry_compiles_as_usual(tmp_path: Path) -> None:
    """An entry for the token that does not restore (emu_cache_load's error path) is ignored:
    the compilation compiles its own model, so RELU6 clamps."""
    token = bytes(range(32))

    def run(extra: int | None, cache: bool) -> Array:
        return _run_conv(tmp_path if cache else None, token, extra)

    (tmp_path / f"mdla-emu-{token.hex()}.bin").write_bytes(b"MDLAEMUC" + b"\xff" * 56)
    clamped = run(21, cache=False)
    assert not np.array_equal(run(None, cache=False), clamped)
    assert np.array_equal(run(21, cache=True), clamped)


def test_debug_report_has_a_line_per_operation(tmp_path: Path) -> None:
    lib = emu()
    b, shape = conv_model()
    report = tmp_path / "report.txt"
    assert lib.NeuronDebug_setReportPath(b.handle, b"") == BAD_DATA
    assert lib.NeuronDebug_setReportPath(b.handle, str(report).encode()) == NO_ERROR
    assert b.finish() == NO_ERROR
    rc, c = _create("Debug", b)
    assert rc == NO_ERROR
    assert lib.NeuronCompilation_finish(c) == NO_ERROR
    from tests.runtime.test_emu_support import Compiled

    Compiled(c, [shape]).run([np.zeros((1, 8, 8, 4), np.int8)])
    rows = [line.split() for line in report.read_text().splitlines()]
    assert [(r[0], r[1]) for r in rows] == [("0", "3"), ("1", "19")]  # CONV_2D, RELU
    assert all(int(r[2]) >= 0 for r in rows)
    lib.NeuronCompilation_free(c)
    b.free()


def test_restore_v2_gives_a_batched_compilation() -> None:
    from tests.runtime.test_emu_api import compiled_blob

    lib = emu()
    blob, _, _ = compiled_blob()
    data = ctypes.create_string_buffer(blob, len(blob))
    for kind, rc_runners in [(BATCHED, NO_ERROR), (NORMAL, BAD_STATE)]:
        model, comp, e = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
        t = ctypes.c_int(kind)
        assert (
            lib.NeuronModel_restoreFromCompiledNetworkV2(
                ctypes.byref(model), ctypes.byref(comp), data, len(blob), ctypes.byref(t)
            )
            == NO_ERROR
        )
        assert lib.NeuronExecution_create(comp, ctypes.byref(e)) == NO_ERROR
        assert lib.NeuronExecution_setRunnerPoolSize(e, 2) == rc_runners
        assert lib.NeuronExecution_setBatchDone(e) == rc_runners
        assert lib.NeuronExecution_setIODone(e, 0) == BAD_STATE
        lib.NeuronExecution_free(e)
        lib.NeuronCompilation_free(comp)
        lib.NeuronModel_free(model)


ABI_DRIVER = r"""
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "neuron_abi.h"
#define OK(x) do { int rc_ = (x); if (rc_) { printf("%s -> %d\n", #x, rc_); return 1; } } while (0)

static NeuronModel *relu_model(void) { /* x[1,4,4,8] -> RELU -> y */
    NeuronModel *m = NULL;
    uint32_t dims[4] = {1, 4, 4, 8}, x = 0, y = 1;
    NeuronOperandType t = {NEURON_TENSOR_QUANT8_ASYMM_SIGNED, 4, dims, 0.1f, 1};
    if (NeuronModel_create(&m) || NeuronModel_addOperand(m, &t) || NeuronModel_addOperand(m, &t) ||
        NeuronModel_setName(m, "relu") ||
        NeuronModel_addOperation(m, NEURON_RELU, 1, &x, 1, &y) ||
        NeuronModel_identifyInputsAndOutputs(m, 1, &x, 1, &y) || NeuronModel_finish(m))
        return NULL;
    return m;
}

int main(int argc, char **argv) {
    (void)argc;
    NeuronModel *m = relu_model();
    if (m == NULL) return 2;
    NeuronCompilation *c;
    uint8_t token[32] = {7};
    OK(NeuronCompilation_createWithOptions(m, &c, "--opt 3"));
    OK(NeuronCompilation_setOptimizationString(c, "--opt-accuracy"));
    OK(NeuronCompilation_setCaching(c, argv[1], token));
    OK(NeuronCompilation_finish(c));
    size_t size; OK(NeuronCompilation_getCompiledNetworkSize(c, &size));
    void *blob = malloc(size); OK(NeuronCompilation_storeCompiledNetwork(c, blob, size));
    /* ExecuTorch's extension route */
    NeuronModel *e_m; OK(NeuronModel_create(&e_m));
    int32_t ext, op;
    OK(NeuronModel_getExtensionOperandType(e_m, "com.mediatek.compiled_network", 0x100, &ext));
    OK(NeuronModel_getExtensionOperationType(e_m, "com.mediatek.compiled_network", 0, &op));
    NeuronOperandType ph = {NEURON_TENSOR_FLOAT32, 0, NULL, 0.f, 0}, net = {ext, 0, NULL, 0.f, 0};
    OK(NeuronModel_addOperand(e_m, &ph)); OK(NeuronModel_addOperand(e_m, &net));
    OK(NeuronModel_addOperand(e_m, &ph));
    OK(NeuronModel_setOperandValue(e_m, 1, blob, size));
    uint32_t ins[2] = {0, 1}, out = 2;
    OK(NeuronModel_addOperation(e_m, op, 2, ins, 1, &out));
    OK(NeuronModel_identifyInputsAndOutputs(e_m, 1, ins, 1, &out));
    OK(NeuronModel_finish(e_m));
    NeuronCompilation *e_c; OK(NeuronCompilation_createWithOptions(e_m, &e_c, ""));
    OK(NeuronCompilation_finish(e_c));
    /* fd memory, a fence dependency, an event */
    int fd = memfd_create("io", 0);
    if (fd < 0 || ftruncate(fd, 4096)) return 3;
    NeuronMemory *mem; OK(NeuronMemory_createFromFd(256, PROT_READ | PROT_WRITE, fd, 0, &mem));
    NeuronExecution *ex; OK(NeuronExecution_create(e_c, &ex));
    OK(NeuronExecution_setBoostHint(ex, 100));
    OK(NeuronExecution_setInputFromMemory(ex, 0, NULL, mem, 0, 128));
    OK(NeuronExecution_setOutputFromMemory(ex, 0, NULL, mem, 128, 128));
    int p[2]; if (pipe(p) || write(p[1], "!", 1) != 1) return 4;
    NeuronEvent *fence, *done;
    OK(NeuronEvent_createFromSyncFenceFd(p[0], &fence));
    const NeuronEvent *deps[1] = {fence};
    OK(NeuronExecution_startComputeWithDependencies(ex, deps, 1, 0, &done));
    OK(NeuronEvent_wait(done));
    NeuronEvent_free(done); NeuronEvent_freeForce(fence); close(p[0]); close(p[1]);
    NeuronExecution_free(ex); NeuronMemory_free(mem); close(fd);
    NeuronCompilation_free(e_c); NeuronModel_free(e_m);
    /* the cached entry restores into a second compilation */
    NeuronModel *m2 = relu_model();
    NeuronCompilation *c2; OK(NeuronCompilation_create(m2, &c2));
    OK(NeuronCompilation_setCaching(c2, argv[1], token));
    OK(NeuronCompilation_finish(c2));
    NeuronCompilation_free(c2); NeuronModel_free(m2);
    free(blob); NeuronCompilation_free(c); NeuronModel_free(m);
    printf("ok\n");
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_the_new_paths_leak_nothing_under_valgrind(tmp_path: Path) -> None:
    """Extension route, fd memory, fence events, caching and the trace, in C, under valgrind."""
    lib = build_emulator()
    src, exe = tmp_path / "driver.c", tmp_path / "driver"
    src.write_text(ABI_DRIVER)
    cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
    build = [cc, "-std=c11", "-Wall", "-Wextra", "-Werror", f"-I{CSRC}", str(src), "-o", str(exe)]
    subprocess.run([*build, str(lib), f"-Wl,-rpath,{lib.parent}"], check=True, capture_output=True)
    trace = tmp_path / "trace.txt"
    env = os.environ | {"MDLA_EMU_TRACE": str(trace)}
    grind = ["valgrind", "--leak-check=full", "--show-leak-kinds=all"]
    grind += ["--errors-for-leak-kinds=all", "--error-exitcode=9", str(exe), str(tmp_path)]
    proc = subprocess.run(grind, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert proc.stdout.strip() == "ok"
    lines = trace.read_text().splitlines()
    assert "NeuronCompilation_createWithOptions --opt 3" in lines
    assert "NeuronExecution_startComputeWithDependencies 1" in lines
    assert len(list(tmp_path.glob("mdla-emu-07*.bin"))) == 1
