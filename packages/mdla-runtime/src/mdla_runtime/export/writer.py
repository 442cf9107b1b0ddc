"""The .tflite writer: tensors, buffers, operator codes and operators of one subgraph.

Uses ai_edge_litert's flatc-generated schema object API (`ModelT`, `TensorT`, ... `.Pack`),
imported on first use so that `mdla_runtime` imports without LiteRT.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mdla_ir.graph import Graph, Op, QuantParams


class ExportError(ValueError):
    """The graph cannot be written as a .tflite file; the message names the op or tensor."""


class UnexportableOpError(ExportError):
    """An op kind with no .tflite form in this exporter (the CLIs: exit 3, unsupported)."""


class UnexportableRoundingError(ExportError):
    """A graph whose requantizations round once (TFLITE_SINGLE_ROUNDING): a .tflite file has no
    field for the rounding, and LiteRT's reference kernels round twice unless built with that
    macro, so the file would compute other values (the CLIs: exit 3, unsupported)."""


def check_rounding(rounding: str, name: str) -> None:
    """Refuse a graph that rounds once (`UnexportableRoundingError`); double passes."""
    if rounding != "double":
        raise UnexportableRoundingError(
            f"`{name}` rounds {rounding}, which a .tflite cannot carry: LiteRT's reference "
            "kernels round twice unless built with TFLITE_SINGLE_ROUNDING, so the file would "
            "compute other values than the .mdla; export with --rounding double (a .mdla alone "
            "keeps single)"
        )


_FUSE = {"NONE": "NONE", "RELU": "RELU", "RELU1": "RELU_N1_TO_1", "RELU6": "RELU6"}


def _schema() -> Any:
    try:
        from ai_edge_litert import schema_py_generated
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ExportError(
            "export_tflite needs the `ai-edge-litert` package: pip install 'mdla-runtime[tflite]'"
        ) from exc
    return schema_py_generated


def _same_before(n_in: int, k: int, s: int, d: int, n_out: int) -> int:
    """TFLite's SAME padding before the data: floor(total / 2)."""
    total = max((n_out - 1) * s + (k - 1) * d + 1 - n_in, 0)
    return total // 2


def padding_mode(
    in_hw: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    dilation: Sequence[int],
    padding: Sequence[int],
    out_hw: Sequence[int],
) -> str | None:
    """ "SAME" or "VALID" when either reproduces the explicit padding exactly, else None."""
    t, _, left, _ = padding
    eff = [(k - 1) * d + 1 for k, d in zip(kernel, dilation, strict=True)]
    valid = [(n - e) // s + 1 for n, e, s in zip(in_hw, eff, stride, strict=True)]
    if (t, left) == (0, 0) and list(out_hw) == valid:
        return "VALID"
    same = [math.ceil(n / s) for n, s in zip(in_hw, stride, strict=True)]
    befores = [
        _same_before(n, k, s, d, o)
        for n, k, s, d, o in zip(in_hw, kernel, stride, dilation, out_hw, strict=True)
    ]
    if list(out_hw) == same and [t, left] == befores:
        return "SAME"
    return None


class Writer:
    """Accumulates tensors, buffers, operator codes and operators of one subgraph."""

    def __init__(self, graph: Graph) -> None:
        self.S = _schema()
        self.graph = graph
        self.buffers: list[Any] = [self._buffer(None)]
        self.tensors: list[Any] = []
        self.index: dict[str, int] = {}
        self.codes: dict[int, int] = {}
        self.operators: list[Any] = []

    def _buffer(self, data: np.ndarray[Any, Any] | None) -> Any:
        b = self.S.BufferT()
        if data is not None:
            b.data = np.frombuffer(
                np.ascontiguousarray(data).astype(data.dtype.newbyteorder("<")).tobytes(), np.uint8
            )
        return b

    def _quant(self, q: QuantParams | None) -> Any:
        if q is None:
            return None
        p = self.S.QuantizationParametersT()
        p.scale = [float(np.float32(s)) for s in q.scale]
        p.zeroPoint = [int(z) for z in q.zero_point]
        p.quantizedDimension = int(q.channel_dim or 0)
        return p

    def add_tensor(
        self,
        name: str,
        shape: Sequence[int],
        dtype: str,
        quant: QuantParams | None,
        data: np.ndarray[Any, Any] | None = None,
    ) -> int:
        types = {
            "int8": self.S.TensorType.INT8,
            "int16": self.S.TensorType.INT16,  # 16x8 activations
            "int32": self.S.TensorType.INT32,
            "int64": self.S.TensorType.INT64,  # 16x8 biases
            "float32": self.S.TensorType.FLOAT32,  # a CPU float op's constants and steps
        }
        if dtype not in types:
            raise ExportError(
                f"tensor `{name}`: dtype {dtype} cannot be exported ({'/'.join(types)})"
            )
        t = self.S.TensorT()
        t.name, t.shape, t.type = name, [int(d) for d in shape], types[dtype]
        t.quantization = self._quant(quant)
        t.buffer = len(self.buffers)
        self.buffers.append(self._buffer(None if data is None else np.asarray(data, dtype=dtype)))
        self.tensors.append(t)
        self.index[name] = len(self.tensors) - 1
        return self.index[name]

    def tensor(self, name: str) -> int:
        if name not in self.index:
            t = self.graph.tensors[name]
            self.add_tensor(name, t.shape, t.dtype, t.quant, t.data)
        return self.index[name]

    def const_i32(self, name: str, values: Any) -> int:
        data = np.asarray(values, dtype=np.int32)
        return self.add_tensor(name, data.shape, "int32", None, data)

    def emit(
        self,
        code: str,
        inputs: Sequence[int],
        outputs: Sequence[int],
        options: tuple[str, Any] | None = None,
    ) -> None:
        builtin = getattr(self.S.BuiltinOperator, code)
        if builtin not in self.codes:
            self.codes[builtin] = len(self.codes)
        op = self.S.OperatorT()
        op.opcodeIndex, op.inputs, op.outputs = self.codes[builtin], list(inputs), list(outputs)
        if options is not None:
            op.builtinOptionsType = getattr(self.S.BuiltinOptions, options[0])
            op.builtinOptions = options[1]
        self.operators.append(op)

    def options(self, cls: str, **fields: Any) -> Any:
        o = getattr(self.S, cls + "T")()
        for k, v in fields.items():
            setattr(o, k, v)
        return o

    def fuse(self, op: Op) -> int:
        fuse = op.fuse
        if fuse not in _FUSE:
            raise ExportError(f"op `{op.name}`: unknown fused activation `{fuse}`")
        return int(getattr(self.S.ActivationFunctionType, _FUSE[fuse]))

    def model(self) -> bytes:
        import flatbuffers

        schema = self.S
        sg = schema.SubGraphT()
        sg.tensors, sg.operators = self.tensors, self.operators
        sg.inputs = [self.tensor(n) for n in self.graph.inputs]
        sg.outputs = [self.tensor(n) for n in self.graph.outputs]
        sg.name = self.graph.name
        m = schema.ModelT()
        m.version, m.description, m.subgraphs, m.buffers = 3, "mdla export", [sg], self.buffers
        m.operatorCodes = []
        for builtin in sorted(self.codes, key=self.codes.__getitem__):
            oc = schema.OperatorCodeT()
            oc.builtinCode, oc.deprecatedBuiltinCode, oc.version = builtin, min(builtin, 127), 1
            m.operatorCodes.append(oc)
        fb = flatbuffers.Builder(1024)
        fb.Finish(m.Pack(fb), file_identifier=b"TFL3")
        return bytes(fb.Output())
