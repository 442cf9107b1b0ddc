"""Driving LiteRT's MediaTek compiler plugin against the emulator, and running what it compiled.

The real client is the `ai-edge-litert` wheel's own AOT tool, `tools/apply_plugin_main`, which
loads `vendors/mediatek/compiler/libLiteRtCompilerPlugin_MediaTek.so` through LiteRT's compiler
plugin C API (LiteRtCreateCompilerPlugin, ...Partition, ...Compile) exactly as
`ai_edge_litert.aot` does. The plugin dlopens `libneuron_adapter.so` by that bare name, so a
directory holding a symlink of that name to `libneuron_emu.so` on LD_LIBRARY_PATH makes the
emulator its adapter; MDLA_EMU_TRACE records every Neuron call it makes.

The compiled `.tflite` holds one DISPATCH_OP whose custom options (a flexbuffer map) give the
offset and size, in the file, of MediaTek's bytecode: a flatbuffer of LiteRT's
`neuron_schema.fbs` (Graphs: version, subgraphs, data, external, neuron_sdk_version; Subgraph:
entry_point, type, compiled_index (a union: its type slot, then the table), weight_share_index;
Buffer: identifier, data). `compiled_networks` reads it with a few lines of flatbuffer
arithmetic; `run_restored` restores a network through the emulator as LiteRT's dispatch does
(NeuronModel_restoreFromCompiledNetwork, NeuronMemory_createFromFd on memfds,
set{Input,Output}FromMemory, setBoostHint, compute).
"""

from __future__ import annotations

import ctypes
import os
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

PLUGIN = Path("vendors/mediatek/compiler/libLiteRtCompilerPlugin_MediaTek.so")
TOOL = Path("tools/apply_plugin_main")
COMPILED_TYPES = {0: "DLA", 1: "DLB", 2: "AdapterCache"}


def litert_dir() -> Path:
    import ai_edge_litert

    return Path(ai_edge_litert.__file__).parent


@dataclass(frozen=True)
class PluginRun:
    returncode: int
    log: str
    output: Path
    trace: list[str]


def apply_plugin(model: Path, out: Path, emulator: Path, soc: str = "mt6886") -> PluginRun:
    """Run LiteRT's apply tool with the MediaTek plugin on `model`, the emulator as adapter."""
    libdir = out.parent / "adapter"
    libdir.mkdir(exist_ok=True)
    link = libdir / "libneuron_adapter.so"
    link.unlink(missing_ok=True)
    link.symlink_to(emulator)
    trace = out.with_suffix(".trace")
    trace.unlink(missing_ok=True)
    root = litert_dir()
    env = os.environ | {
        "LD_LIBRARY_PATH": str(libdir),
        "MDLA_EMU_TRACE": str(trace),
        "MTKNN_ADAPTER_DLA_PLATFORM": soc,
    }
    cmd = [
        str(root / TOOL),
        "--cmd=apply",
        f"--model={model}",
        f"--o={out}",
        "--soc_manufacturer=MediaTek",
        f"--soc_model={soc}",
        f"--libs={(root / PLUGIN).parent}",
        "--err=--",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    lines = trace.read_text().splitlines() if trace.exists() else []
    return PluginRun(proc.returncode, proc.stdout + proc.stderr, out, lines)


# ---- the bytecode: flatbuffer arithmetic over neuron_schema.fbs ----------------------------------


def _u32(b: bytes, at: int) -> int:
    return int(struct.unpack_from("<I", b, at)[0])


def _field(b: bytes, table: int, slot: int) -> int | None:
    """The absolute position of field `slot` of the table at `table`, None when absent."""
    vtable = table - struct.unpack_from("<i", b, table)[0]
    size = struct.unpack_from("<H", b, vtable)[0]
    if 4 + 2 * slot >= size:
        return None
    off = struct.unpack_from("<H", b, vtable + 4 + 2 * slot)[0]
    return table + off if off else None


def _ref(b: bytes, at: int) -> int:
    return at + _u32(b, at)


def _vector(b: bytes, at: int) -> tuple[int, int]:
    start = _ref(b, at)
    return start + 4, _u32(b, start)


def _string(b: bytes, at: int) -> str:
    start, n = _vector(b, at)
    return b[start : start + n].decode()


@dataclass(frozen=True)
class CompiledNetwork:
    entry_point: str
    kind: str  # DLA, DLB or AdapterCache
    data: bytes


def dispatch_ops(tflite: bytes) -> list[dict[str, Any]]:
    """The custom options of every DISPATCH_OP of the model's first subgraph."""
    from ai_edge_litert.tools import flatbuffer_utils
    from flatbuffers import flexbuffers

    m = flatbuffer_utils.read_model_from_bytearray(bytearray(tflite))
    codes = [oc.customCode for oc in m.operatorCodes]
    return [
        flexbuffers.Loads(bytes(op.customOptions))
        for op in m.subgraphs[0].operators
        if codes[op.opcodeIndex] == b"DISPATCH_OP"
    ]


def neuron_version(bytecode: bytes) -> tuple[int, int, int]:
    """Graphs.neuron_sdk_version: the adapter version the plugin stamped."""
    at = _field(bytecode, _ref(bytecode, 0), 4)
    if at is None:
        return (0, 0, 0)
    major, minor, patch = struct.unpack_from("<III", bytecode, at)
    return (major, minor, patch)


def compiled_networks(bytecode: bytes) -> list[CompiledNetwork]:
    """Every subgraph of MediaTek's bytecode with the bytes it points at (Graphs.data)."""
    b = bytecode
    root = _ref(b, 0)
    buffers: list[bytes] = []
    data_at = _field(b, root, 2)
    if data_at is not None:
        start, n = _vector(b, data_at)
        for i in range(n):
            buf = _ref(b, start + 4 * i)
            raw = _field(b, buf, 1)
            if raw is None:
                buffers.append(b"")
                continue
            s, length = _vector(b, raw)
            buffers.append(b[s : s + length])
    networks = []
    sub_at = _field(b, root, 1)
    start, n = _vector(b, sub_at) if sub_at is not None else (0, 0)
    for i in range(n):
        sg = _ref(b, start + 4 * i)
        entry = _field(b, sg, 0)
        kind = _field(b, sg, 1)
        union_type = _field(b, sg, 2)
        union = _field(b, sg, 3)
        if union is None or union_type is None or b[union_type] != 1:  # 1: Index
            raise ValueError(f"subgraph {i}: compiled_index is not an Index")
        value = _field(b, _ref(b, union), 0)
        index = struct.unpack_from("<i", b, value)[0] if value is not None else -1
        networks.append(
            CompiledNetwork(
                _string(b, entry) if entry is not None else "",
                COMPILED_TYPES.get(b[kind] if kind is not None else 0, "?"),
                buffers[index],
            )
        )
    return networks


def bytecode_of(tflite: bytes, options: dict[str, Any]) -> bytes:
    off, size = int(options["bytecode_offset"]), int(options["bytecode_size"])
    return tflite[off : off + size]


# ---- restore and run, as LiteRT's dispatch does -----------------------------------------------

SZ = ctypes.c_size_t


def _check(rc: int, what: str) -> None:
    if rc != 0:
        raise RuntimeError(f"{what} returned {rc}")


def _memory(lib: ctypes.CDLL, size: int, data: bytes | None) -> tuple[int, ctypes.c_void_p]:
    fd = os.memfd_create("neuron-io")
    os.ftruncate(fd, size)
    if data is not None:
        os.pwrite(fd, data, 0)
    mem = ctypes.c_void_p()
    _check(lib.NeuronMemory_createFromFd(size, 3, fd, 0, ctypes.byref(mem)), "createFromFd")
    return fd, mem


def run_restored(
    lib: ctypes.CDLL, network: bytes, inputs: list[np.ndarray[Any, Any]], out_dtype: Any = np.int8
) -> list[np.ndarray[Any, Any]]:
    """Restore `network`, bind every input and output through fd-backed NeuronMemory, compute
    (`lib` from mdla_emu.load_emulator, which types the whole ABI)."""
    model, comp, ex = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    blob = ctypes.create_string_buffer(network, len(network))
    _check(
        lib.NeuronModel_restoreFromCompiledNetwork(
            ctypes.byref(model), ctypes.byref(comp), blob, len(network)
        ),
        "restoreFromCompiledNetwork",
    )
    fds: list[int] = []
    mems: list[ctypes.c_void_p] = []
    try:
        _check(lib.NeuronExecution_create(comp, ctypes.byref(ex)), "Execution_create")
        _check(lib.NeuronExecution_setBoostHint(ex, 100), "setBoostHint")
        for i, x in enumerate(inputs):
            size = SZ()
            _check(lib.NeuronCompilation_getInputPaddedSize(comp, i, ctypes.byref(size)), "size")
            data = np.ascontiguousarray(x).tobytes()
            if size.value != len(data):
                raise RuntimeError(f"input {i}: padded size {size.value}, data {len(data)}")
            fd, mem = _memory(lib, size.value, data)
            fds.append(fd)
            mems.append(mem)
            _check(lib.NeuronExecution_setInputFromMemory(ex, i, None, mem, 0, size.value), "in")
        sizes = []
        for j in range(64):
            size = SZ()
            if lib.NeuronCompilation_getOutputPaddedSize(comp, j, ctypes.byref(size)) != 0:
                break
            fd, mem = _memory(lib, size.value, None)
            fds.append(fd)
            mems.append(mem)
            sizes.append((fd, size.value))
            _check(lib.NeuronExecution_setOutputFromMemory(ex, j, None, mem, 0, size.value), "out")
        _check(lib.NeuronExecution_compute(ex), "compute")
        return [np.frombuffer(os.pread(fd, n, 0), out_dtype) for fd, n in sizes]
    finally:
        lib.NeuronExecution_free(ex)
        for mem in mems:
            lib.NeuronMemory_free(mem)
        for fd in fds:
            os.close(fd)
        lib.NeuronCompilation_free(comp)
        lib.NeuronModel_free(model)
