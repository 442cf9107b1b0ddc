"""The emulator as a ctypes library, every Neuron ABI function typed (`neuron_abi.h`).

lib = load_emulator()              # builds (once) and loads libneuron_emu.so
lib.Neuron_getDeviceCount(ctypes.byref(n))
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

from mdla_emu.emulator import build_emulator


def _more_signatures() -> dict[str, tuple[Any, list[Any]]]:
    """ctypes types of the rest of the ABI (neuron_abi.h's MDLA_NEURON_MORE_FUNCTIONS)."""
    p, u32, i32, sz, i = (
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int32,
        ctypes.c_size_t,
        ctypes.c_int,
    )
    b, u8, u16, u64 = ctypes.c_bool, ctypes.c_uint8, ctypes.c_uint16, ctypes.c_uint64
    return {
        "Neuron_getFeatureSupportedStatus": (i, [i, p]),
        "Neuron_getL1MemorySizeKb": (i, [p]),
        "NeuronDevice_getDescription": (i, [p, p]),
        "NeuronDevice_getExtensionSupport": (i, [ctypes.c_char_p, p]),
        "Neuron_getDefaultLoopTimeout": (u64, []),
        "Neuron_getMaximumLoopTimeout": (u64, []),
        "NeuronModel_setOperandValueFromModel": (i, [p, i32, p]),
        "NeuronModel_setOperandPerChannelQuantParams": (i, [p, i32, p]),
        "NeuronModel_addOperationExtension": (
            i,
            [p, ctypes.c_char_p, ctypes.c_char_p, p, u32, p, u32, p],
        ),
        "NeuronModel_relaxComputationFloat32toFloat16": (i, [p, b]),
        "NeuronModel_suppressInputConversion": (i, [p, b]),
        "NeuronModel_suppressOutputConversion": (i, [p, b]),
        "NeuronModel_getSupportedOperations": (i, [p, p, u32]),
        "NeuronModel_setName": (i, [p, ctypes.c_char_p]),
        "NeuronModel_getExtensionOperandType": (i, [p, ctypes.c_char_p, u16, p]),
        "NeuronModel_getExtensionOperationType": (i, [p, ctypes.c_char_p, u16, p]),
        "NeuronModel_setOperandExtensionData": (i, [p, i32, p, sz]),
        "NeuronModel_restoreFromCompiledNetworkV2": (i, [p, p, p, sz, p]),
        "NeuronCompilation_create": (i, [p, p]),
        "NeuronCompilation_createWithOptions": (i, [p, p, ctypes.c_char_p]),
        "NeuronCompilation_createV2": (i, [p, i, ctypes.c_char_p, p]),
        "NeuronCompilation_createForBatch": (i, [p, p]),
        "NeuronCompilation_createForMultiExecutions": (i, [p, p]),
        "NeuronCompilation_createForDebug": (i, [p, p]),
        "NeuronCompilation_setOptimizationHint": (i, [p, u32]),
        "NeuronCompilation_setOptimizationString": (i, [p, ctypes.c_char_p]),
        "NeuronCompilation_setOnlyAllowOptimizationString": (i, [p, b]),
        "NeuronCompilation_getOptimizationString": (i, [p, p]),
        "NeuronCompilation_setL1MemorySizeKb": (i, [p, u32]),
        "NeuronCompilation_setCaching": (i, [p, ctypes.c_char_p, p]),
        "NeuronCompilation_setTrimIOAlignment": (i, [p, b]),
        "NeuronCompilation_setSWDilatedConv": (i, [p, b]),
        "NeuronCompilation_getSupportedOperations": (i, [p, u32, p]),
        "NeuronCompilation_getInputPaddedDimensions": (i, [p, i32, p]),
        "NeuronCompilation_getOutputPaddedDimensions": (i, [p, i32, p]),
        "NeuronCompilation_getInputPaddedSize": (i, [p, i32, p]),
        "NeuronCompilation_getOutputPaddedSize": (i, [p, i32, p]),
        "NeuronCompilation_getPreference": (i, [p, p]),
        "NeuronCompilation_getPriority": (i, [p, p]),
        "NeuronExecution_setInputFromMemory": (i, [p, u32, p, p, sz, sz]),
        "NeuronExecution_setOutputFromMemory": (i, [p, u32, p, p, sz, sz]),
        "NeuronExecution_startComputeWithDependencies": (i, [p, p, u32, u64, p]),
        "NeuronExecution_setBoostHint": (i, [p, u8]),
        "NeuronExecution_setCacheFlushHint": (i, [p, u8]),
        "NeuronExecution_getOutputOperandRank": (i, [p, i32, p]),
        "NeuronExecution_getOutputOperandDimensions": (i, [p, i32, p]),
        "NeuronExecution_setLoopTimeout": (i, [p, u64]),
        "NeuronExecution_setRunnerPoolSize": (i, [p, u8]),
        "NeuronExecution_setBatchDone": (i, [p]),
        "NeuronExecution_setIODone": (i, [p, i]),
        "NeuronMemory_createFromFd": (i, [sz, i, i, sz, p]),
        "NeuronMemory_createFromAHardwareBuffer": (i, [p, p]),
        "NeuronMemory_free": (None, [p]),
        "NeuronEvent_wait": (i, [p]),
        "NeuronEvent_free": (None, [p]),
        "NeuronEvent_freeForce": (None, [p]),
        "NeuronEvent_createFromSyncFenceFd": (i, [i, p]),
        "NeuronEvent_getSyncFenceFd": (i, [p, p]),
        "NeuronDebug_setReportPath": (i, [p, ctypes.c_char_p]),
        "MdlaEmu_setRounding": (i, [p, i32]),  # the emulator's own extension (numerics.h)
    }


def load_emulator(path: Path | None = None) -> ctypes.CDLL:
    """The emulator as a ctypes library, with the Neuron ABI's argument and result types."""
    lib = ctypes.CDLL(str(path or build_emulator()))
    p, u32, i32, sz = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int32, ctypes.c_size_t
    signatures: dict[str, tuple[Any, list[Any]]] = {
        "Neuron_getVersion": (ctypes.c_int, [p]),
        "Neuron_getDeviceCount": (ctypes.c_int, [p]),
        "Neuron_getDevice": (ctypes.c_int, [u32, p]),
        "NeuronDevice_getName": (ctypes.c_int, [p, p]),
        "NeuronModel_create": (ctypes.c_int, [p]),
        "NeuronModel_free": (None, [p]),
        "NeuronModel_addOperand": (ctypes.c_int, [p, p]),
        "NeuronModel_setOperandValue": (ctypes.c_int, [p, i32, p, sz]),
        "NeuronModel_setOperandSymmPerChannelQuantParams": (ctypes.c_int, [p, i32, p]),
        "NeuronModel_addOperation": (ctypes.c_int, [p, i32, u32, p, u32, p]),
        "NeuronModel_identifyInputsAndOutputs": (ctypes.c_int, [p, u32, p, u32, p]),
        "NeuronModel_finish": (ctypes.c_int, [p]),
        "NeuronModel_getSupportedOperationsForDevices": (ctypes.c_int, [p, p, u32, p]),
        "NeuronModel_restoreFromCompiledNetwork": (ctypes.c_int, [p, p, p, sz]),
        "NeuronCompilation_createForDevices": (ctypes.c_int, [p, p, u32, p]),
        "NeuronCompilation_setPreference": (ctypes.c_int, [p, i32]),
        "NeuronCompilation_setPriority": (ctypes.c_int, [p, ctypes.c_int]),
        "NeuronCompilation_finish": (ctypes.c_int, [p]),
        "NeuronCompilation_free": (None, [p]),
        "NeuronCompilation_getCompiledNetworkSize": (ctypes.c_int, [p, p]),
        "NeuronCompilation_storeCompiledNetwork": (ctypes.c_int, [p, p, sz]),
        "NeuronExecution_create": (ctypes.c_int, [p, p]),
        "NeuronExecution_free": (None, [p]),
        "NeuronExecution_setInput": (ctypes.c_int, [p, i32, p, p, sz]),
        "NeuronExecution_setOutput": (ctypes.c_int, [p, i32, p, p, sz]),
        "NeuronExecution_compute": (ctypes.c_int, [p]),
        **_more_signatures(),
    }
    for name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib
