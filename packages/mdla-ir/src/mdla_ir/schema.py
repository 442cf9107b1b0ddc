"""The op schema: per OpKind, its Neuron operation code, NNAPI operand forms, outputs, attribute
record, groups, and the pieces it has none of. Everything else reads this table: the op groups
of `mdla_ir.ops` and the CPU partitions' kinds (`mdla_ir.partitions`), lowering to `.mdla`
(`mdla_runtime/format/lower.py`), the manifest readers in Python and C, the host emulator's
signature check (the C tables are generated from it at build time, see `mdla_emu/codegen.py`)
and the `.tflite` exporter. The operand forms' grammar and matcher are `mdla_ir.forms`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mdla_ir.attrs import (
    AdaptivePoolAttrs,
    ArgmaxAttrs,
    AttrError,
    Attrs,
    AxisAttrs,
    BlockAttrs,
    ClampAttrs,
    ConvAttrs,
    FlattenAttrs,
    FunctionAttrs,
    FuseAttrs,
    GroupNormAttrs,
    GruAttrs,
    MatmulAttrs,
    MeanAttrs,
    NoAttrs,
    NormAttrs,
    PadAttrs,
    PoolAttrs,
    ReshapeAttrs,
    ResizeAttrs,
    SelectAttrs,
    ShuffleAttrs,
    SliceAttrs,
    SoftmaxAttrs,
    StridedSliceAttrs,
    TransposeAttrs,
    WhereAttrs,
)
from mdla_ir.forms import (  # re-exported: the schema's readers take them from here
    BOOL as BOOL,
)
from mdla_ir.forms import (
    FLOAT32 as FLOAT32,
)
from mdla_ir.forms import (
    INT32 as INT32,
)
from mdla_ir.forms import (
    LETTERS as LETTERS,
)
from mdla_ir.forms import (
    TENSOR_BOOL8 as TENSOR_BOOL8,
)
from mdla_ir.forms import (
    TENSOR_FLOAT32 as TENSOR_FLOAT32,
)
from mdla_ir.forms import (
    TENSOR_INT32 as TENSOR_INT32,
)
from mdla_ir.forms import (
    TENSOR_QUANT8_ASYMM as TENSOR_QUANT8_ASYMM,
)
from mdla_ir.forms import (
    TENSOR_QUANT8_ASYMM_SIGNED as TENSOR_QUANT8_ASYMM_SIGNED,
)
from mdla_ir.forms import (
    TENSOR_QUANT8_SYMM as TENSOR_QUANT8_SYMM,
)
from mdla_ir.forms import (
    TENSOR_QUANT8_SYMM_PER_CHANNEL as TENSOR_QUANT8_SYMM_PER_CHANNEL,
)
from mdla_ir.forms import (
    TENSOR_QUANT16_SYMM as TENSOR_QUANT16_SYMM,
)
from mdla_ir.forms import (
    Form as Form,
)
from mdla_ir.forms import (
    match as match,
)
from mdla_ir.kinds import OpKind


@dataclass(frozen=True, slots=True)
class OpSchema:
    """One op: `code` its Neuron operation code (None before legalization), `forms` its input
    forms (the first is the one lowering writes, every optional slot present), `outputs` its
    output form, `emu` whether the host emulator has an int8 kernel for the op (`emu_k_<name>`
    in mdla_emu's csrc/kernels, tabled from here) and enforces its forms (other ops it accepts
    as given and reports unsupported), `attrs` its attribute record,
    `none` the pieces of PIECES the op has none of, each with its reason (tests/ir/
    test_schema_complete.py holds every other op to having all of them)."""

    name: str
    code: int | None
    forms: tuple[Form, ...]
    outputs: Form
    attrs: type[Attrs]
    groups: frozenset[str]
    emu: bool
    none: tuple[tuple[str, str], ...] = ()

    @property
    def pre_legalization(self) -> bool:
        return self.code is None

    def none_reason(self, piece: str) -> str | None:
        """Why the op has no `piece` (one of PIECES), or None when it should have one."""
        return dict(self.none).get(piece)


# Neuron operation names, codes 0..107 (reference §3c; 106 and 107 are Neuron-only).
NEURON_OP_NAMES: tuple[str, ...] = (
    "ADD", "AVERAGE_POOL_2D", "CONCATENATION", "CONV_2D", "DEPTHWISE_CONV_2D", "DEPTH_TO_SPACE",
    "DEQUANTIZE", "EMBEDDING_LOOKUP", "FLOOR", "FULLY_CONNECTED", "HASHTABLE_LOOKUP",
    "L2_NORMALIZATION", "L2_POOL_2D", "LOCAL_RESPONSE_NORM", "LOGISTIC", "LSH_PROJECTION", "LSTM",
    "MAX_POOL_2D", "MUL", "RELU", "RELU1", "RELU6", "RESHAPE", "RESIZE_BILINEAR", "RNN", "SOFTMAX",
    "SPACE_TO_DEPTH", "SVDF", "TANH", "BATCH_TO_SPACE_ND", "DIV", "MEAN", "PAD",
    "SPACE_TO_BATCH_ND", "SQUEEZE", "STRIDED_SLICE", "SUB", "TRANSPOSE", "ABS", "ARGMAX", "ARGMIN",
    "AXIS_ALIGNED_BBOX_TRANSFORM", "BIDIRECTIONAL_SEQUENCE_LSTM", "BIDIRECTIONAL_SEQUENCE_RNN",
    "BOX_WITH_NMS_LIMIT", "CAST", "CHANNEL_SHUFFLE", "DETECTION_POSTPROCESSING", "EQUAL", "EXP",
    "EXPAND_DIMS", "GATHER", "GENERATE_PROPOSALS", "GREATER", "GREATER_EQUAL", "GROUPED_CONV_2D",
    "HEATMAP_MAX_KEYPOINT", "INSTANCE_NORMALIZATION", "LESS", "LESS_EQUAL", "LOG", "LOGICAL_AND",
    "LOGICAL_NOT", "LOGICAL_OR", "LOG_SOFTMAX", "MAXIMUM", "MINIMUM", "NEG", "NOT_EQUAL", "PAD_V2",
    "POW", "PRELU", "QUANTIZE", "QUANTIZED_16BIT_LSTM", "RANDOM_MULTINOMIAL", "REDUCE_ALL",
    "REDUCE_ANY", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "REDUCE_SUM", "ROI_ALIGN",
    "ROI_POOLING", "RSQRT", "SELECT", "SIN", "SLICE", "SPLIT", "SQRT", "TILE", "TOPK_V2",
    "TRANSPOSE_CONV_2D", "UNIDIRECTIONAL_SEQUENCE_LSTM", "UNIDIRECTIONAL_SEQUENCE_RNN",
    "RESIZE_NEAREST_NEIGHBOR", "QUANTIZED_LSTM", "IF", "WHILE", "ELU", "HARD_SWISH", "FILL",
    "RANK", "BATCH_MATMUL", "PACK", "MIRROR_PAD", "MIRROR_REVERSE", "HYFBCTOYUV420",
    "YUV420TOAFBC",
)  # fmt: skip
MAX_OP_CODE = len(NEURON_OP_NAMES) - 1
# Codes the adapter marks "not available": no manifest may use them (both readers refuse).
NOT_AVAILABLE = frozenset(
    {7, 10, 13, 15, 16, 24, 27, 42, 43, 47, 52, 60, 64, 74, 79, 82, 85}
    | {92, 93, 95, 98, 101, 103, 104, 105}
)


# What an op is made of beyond its schema line: a float kernel (mdla_ir.interp), an int8
# reference kernel (mdla_quant.kernels), a lowering to .mdla (mdla_runtime/format/lower.py), a
# .tflite emitter (mdla_runtime/export), an importer converter (mdla_ir.importer) and a place
# in a CPU partition (the `cpu*` groups). An entry states "none" with a reason per piece.
PIECES = ("float", "int8", "lower", "tflite", "import", "cpu")
# The groups that put an op in a CPU partition (mdla_ir.partitions): int8 reference kernels;
# int8 in and out around a float32 kernel; float32 in and out (a float region).
CPU_GROUPS = ("cpu", "cpu_float", "cpu_float32")


def _op(
    kind: OpKind | str,
    forms: Sequence[str],
    attrs: type[Attrs] = NoAttrs,
    groups: str = "",
    outputs: str = "y:*",
    emu: bool = True,
    none: Mapping[str, str] | None = None,
) -> OpSchema:
    """The entry of `kind`; its code is the OpKind's value (the ABI's index of its name for an
    ABI-only name), None for a pre-legalization kind."""
    code: int | None
    if isinstance(kind, str):
        name, code = kind, NEURON_OP_NAMES.index(kind)
    else:
        name, code = kind.name, kind.value if kind.is_neuron else None
    unknown = sorted(set(none or {}) - set(PIECES))
    if unknown:
        raise ValueError(f"schema entry {name}: none= names {unknown}, not pieces {PIECES}")
    parsed = tuple(Form.parse(f) for f in forms)
    group_set = frozenset(groups.split())
    pieces = tuple(sorted((none or {}).items()))
    return OpSchema(name, code, parsed, Form.parse(outputs), attrs, group_set, emu, pieces)


def _pre(rewrite: str, **more: str) -> dict[str, str]:
    """The pieces a pre-legalization construct has none of: `rewrite` replaces it first."""
    why = f"pre-legalization construct: {rewrite}"
    return {"int8": why, "lower": why, "tflite": why, "cpu": why, **more}


def _not_int8(why: str, **more: str) -> dict[str, str]:
    """No int8 kernel (so no .tflite op and no CPU partition either), because `why`."""
    return {"int8": why, "tflite": f"no int8 kernel: {why}", "cpu": f"no int8 kernel: {why}",
            **more}  # fmt: skip


_FLOAT_REGION = "a CPU float region's op; .tflite export writes no float regions"


CONV = "x:a filter:w bias:t"
PADS = "pad_left:i pad_right:i pad_top:i pad_bottom:i"
STRIDES = "stride_w:i stride_h:i"
CONV_TAIL = "[nchw:B [dilation_w:i dilation_h:i]]"
DW_TAIL = f"multiplier:i fuse:i {CONV_TAIL}"
POOL_TAIL = f"{STRIDES} filter_w:i filter_h:i fuse:i [nchw:B]"
RESIZE_TAIL = "[nchw:B [align_corners:B [half_pixel_centers:B]]]"
UNARY, BINARY = ("x:a",), ("a:a b:a fuse:i",)
K = OpKind
# torch's elementwise functions with no Neuron operation, all in the table group (below).
ELEMENTWISE_TABLES = (K.COS, K.SIN, K.TAN, K.ATAN, K.EXPM1, K.LOG1P)

# kind, input forms (NNAPI order), attribute record, groups, outputs, emulated, none
_ENTRIES: tuple[OpSchema, ...] = (
    _op(K.ADD, BINARY, FuseAttrs, "binary fusable cpu"),
    _op(K.AVERAGE_POOL_2D, (f"x:a {PADS} {POOL_TAIL}", f"x:a padding_code:i {POOL_TAIL}"),
        PoolAttrs, "pool spatial fusable cpu"),
    _op(K.CONCATENATION, ("inputs:a+ axis:i",), AxisAttrs, "cpu"),
    _op(K.CONV_2D, (f"{CONV} {PADS} {STRIDES} fuse:i {CONV_TAIL}",
                    f"{CONV} padding_code:i {STRIDES} fuse:i {CONV_TAIL}"),
        ConvAttrs, "conv spatial fusable cpu"),
    _op(K.DEPTHWISE_CONV_2D, (f"{CONV} {PADS} {STRIDES} {DW_TAIL}",
                              f"{CONV} padding_code:i {STRIDES} {DW_TAIL}"),
        ConvAttrs, "conv spatial fusable cpu",
        none={"import": "the mark_depthwise pass makes it from a CONV_2D, groups == channels"}),
    _op(K.DEPTH_TO_SPACE, ("x:a block_size:i [nchw:B]",), BlockAttrs, "spatial cpu", "y:a"),
    _op(K.DEQUANTIZE, ("x:*",), groups="cpu_float32", emu=False,
        none={"import": "the quantizer inserts it where a float region starts",
              "tflite": _FLOAT_REGION}),
    _op(K.FULLY_CONNECTED, ("x:a weights:w bias:t fuse:i",), FuseAttrs, "fusable cpu"),
    _op(K.LOGISTIC, UNARY, groups="activation cpu", outputs="y:a"),
    _op(K.MAX_POOL_2D, (f"x:a {PADS} {POOL_TAIL}", f"x:a padding_code:i {POOL_TAIL}"),
        PoolAttrs, "pool spatial fusable cpu"),
    _op(K.MUL, BINARY, FuseAttrs, "binary fusable cpu"),
    _op(K.RELU, UNARY, groups="activation cpu", outputs="y:a"),
    _op("RELU1", UNARY, outputs="y:a"),  # no OpKind: the ABI's only
    _op(K.RELU6, UNARY, groups="activation cpu", outputs="y:a"),
    _op(K.RESHAPE, ("x:a shape:t",), ReshapeAttrs, "cpu"),
    _op(K.RESIZE_BILINEAR, (f"x:a out_w:i out_h:i {RESIZE_TAIL}",
                            f"x:a scale_w:f scale_h:f {RESIZE_TAIL}"), ResizeAttrs, "spatial cpu"),
    _op(K.TRANSPOSE_CONV_2D, (f"{CONV} {PADS} {STRIDES} fuse:i nchw:B",
                              f"{CONV} output_shape:t padding_code:i {STRIDES} fuse:i nchw:B"),
        ConvAttrs, "spatial fusable cpu", "y:a"),
    _op(K.RESIZE_NEAREST_NEIGHBOR, (f"x:a out_w:i out_h:i {RESIZE_TAIL}",
                                    f"x:a scale_w:f scale_h:f {RESIZE_TAIL}"), ResizeAttrs,
        "spatial cpu"),
    _op(K.SOFTMAX, ("x:a beta:f [axis:i]",), SoftmaxAttrs, "cpu"),
    _op(K.TANH, UNARY, groups="activation cpu", outputs="y:a"),
    _op(K.DIV, BINARY, FuseAttrs, "binary", emu=False,
        none=dict.fromkeys(("int8", "tflite", "cpu"), "pre-legalization construct: legalize "
                           "makes every DIV a MUL, by 1/c (div_const_to_mul) or by the "
                           "divisor's RECIPROCAL (div_to_reciprocal_mul)")),
    _op(K.MEAN, ("x:a axes:t keep_dims:i",), MeanAttrs, "cpu"),
    _op(K.PAD, ("x:a paddings:t",), PadAttrs, "cpu"),
    _op(K.SUB, BINARY, FuseAttrs, "binary fusable cpu"),
    _op(K.TRANSPOSE, ("x:a perm:t",), TransposeAttrs, "cpu", emu=False),
    _op(K.CHANNEL_SHUFFLE, ("x:a groups:i axis:i",), ShuffleAttrs, emu=False,
        none=_pre("channel_shuffle_to_selection makes a 4-D channel shuffle a selection "
                  "CONV_2D, flat_channel_shuffle_to_selection any other (viewed as 4-D)")),
    _op(K.EXP, UNARY, groups="table cpu", outputs="y:a", emu=False),
    _op(K.LOG, UNARY, groups="table cpu", outputs="y:a", emu=False),
    _op(K.QUANTIZE, ("x:*",), groups="cpu",
        none={"int8": "only the int8 <-> int16 requantization QuantConfig.a16 inserts, which "
                      "is a 16x8 kernel (mdla_quant.kernels.a16_ops); no int8 -> int8 form",
              "import": "no importer emits it; the quantizer inserts it for QuantConfig.a16"}),
    _op(K.PRELU, ("x:a alpha:a",), groups="binary cpu", outputs="y:a"),
    _op(K.RSQRT, UNARY, groups="table cpu", outputs="y:a", emu=False),
    _op(K.SLICE, ("x:a begin:t size:t",), SliceAttrs, emu=False,
        none=_pre("the selection rules make a CONV_2D of it, else slice_to_strided_slice the "
                  "STRIDED_SLICE (unit steps) that computes it")),
    _op(K.STRIDED_SLICE, ("x:a begin:t end:t strides:t begin_mask:i end_mask:i "
                          "shrink_axis_mask:i",), StridedSliceAttrs, "cpu", emu=False),
    _op(K.SQRT, UNARY, groups="table cpu", outputs="y:a", emu=False),
    _op(K.HARD_SWISH, UNARY, groups="activation cpu", outputs="y:a"),
    _op(K.BATCH_MATMUL, ("lhs:a rhs:a [adj_x:B [adj_y:B]]",), MatmulAttrs, "cpu"),
    # Pre-legalization constructs: no Neuron operation, no operand forms.
    _op(K.BATCH_NORM, (), NormAttrs, "spatial",
        none=_pre("fold_batchnorm folds it into its conv, else batchnorm_to_mul_add")),
    _op(K.SILU, (), groups="activation", none=_pre("silu_to_logistic_mul")),
    _op(K.HARD_SIGMOID, (), groups="activation", none=_pre("hardsigmoid_to_relu6_mul")),
    _op(K.GELU, (), groups="activation table cpu_float"),
    _op(K.LAYER_NORM, (), NormAttrs, "cpu_float"),
    _op(K.CONV_3D, (), ConvAttrs, none=_pre("conv3d_to_conv2d makes CONV_2Ds over frames of "
                                            "every one (any temporal window, groups)")),
    _op(K.MAX_POOL_3D, (), PoolAttrs, "cpu",
        none={"tflite": "TFLite has no 3-D max pool builtin (pool3d_to_pool2d makes 2-D pools "
                        "over frames of every one)"}),
    _op(K.AVERAGE_POOL_3D, (), PoolAttrs,
        none=_pre("pool3d_to_pool2d makes 2-D average pools over frames of every one")),
    _op(K.ADAPTIVE_AVG_POOL_2D, (), AdaptivePoolAttrs, "spatial cpu",
        none={"tflite": "no TFLite op pools to a size that does not divide (those that divide "
                        "are AVERAGE_POOL_2D or MEAN after legalization)"}),
    _op(K.ADAPTIVE_MAX_POOL_2D, (), AdaptivePoolAttrs, "spatial cpu",
        none={"tflite": "no TFLite op pools to a size that does not divide (the importer makes "
                        "a MAX_POOL_2D of those that divide)"}),
    _op(K.FLATTEN, (), FlattenAttrs, none=_pre("canonicalize_reshapes makes it a RESHAPE")),
    _op(K.DROPOUT, (), NoAttrs, none=_pre("drop_identities removes it")),
    _op(K.IDENTITY, (), NoAttrs, none=_pre("drop_identities removes it")),
    _op(K.ARGMAX, (), ArgmaxAttrs, "cpu"),
    _op(K.GRU, (), GruAttrs, "cpu_float32",
        none={"import": "built by hand (lipread.fullmodel): no nn.GRU converter yet",
              "tflite": _FLOAT_REGION}),
    _op(K.GROUP_NORM, (), GroupNormAttrs, "cpu_float",
        none={"tflite": "no .tflite builtin sequence written for it yet (LAYER_NORM has one)"}),
    _op(K.FULLY_CONNECTED_F32, (), NoAttrs, "cpu_float32",
        none={"import": "the quantizer makes it of a FULLY_CONNECTED reading float32",
              "tflite": _FLOAT_REGION}),
    _op(K.CONCATENATION_F32, (), AxisAttrs, "cpu_float32",
        none={"import": "the quantizer makes it of an output CONCATENATION of unlike ranges",
              "tflite": _FLOAT_REGION}),
    # The table group's functions (mdla_ir.functions): a CPU partition's int8 tables.
    *(_op(k, (), FunctionAttrs, "activation table cpu") for k in (
        K.ELU, K.MISH, K.SOFTPLUS, K.CELU, K.SELU, K.LOG_SIGMOID, K.TANHSHRINK, K.SOFTSIGN,
        *ELEMENTWISE_TABLES)),
    _op(K.REDUCE_SUM, (), MeanAttrs, none=_pre("reduce_sum_to_mean_mul")),
    _op(K.REDUCE_MAX, (), MeanAttrs, none=_pre("reduce_max_to_pool")),
    _op(K.REDUCE_MIN, (), MeanAttrs, none=_pre("reduce_min_to_pool")),
    _op(K.CLAMP, (), ClampAttrs, none=_pre("clamp_to_relus")),
    _op(K.RECIPROCAL, (), FunctionAttrs, "table cpu"),
    _op(K.WHERE, (), WhereAttrs, "table cpu"),
    _op(K.SELECT, (), SelectAttrs, "cpu",
        none={"tflite": "LiteRT's GREATER/LESS/EQUAL compare int8 by their own fixed-point "
                        "rescaling and SELECT_V2 does not requantize its branches: not this "
                        "kernel's float32 comparison and requantized branches (no exporter)"}),
)  # fmt: skip

SCHEMA: dict[OpKind, OpSchema] = {
    OpKind[e.name]: e for e in _ENTRIES if e.name in OpKind.__members__
}
# Every operation code with known forms, the ABI-only ones (RELU1) included.
BY_CODE: dict[int, OpSchema] = {e.code: e for e in _ENTRIES if e.code is not None}

# Host operations: what only a CPU partition runs (issue 17, mdla_ir.partitions). They have no
# Neuron code; the manifest numbers them from HOST_OP_BASE, above every ABI code, and both
# readers accept them in a `cpu` partition only. LAYER_NORM's weight and bias are float32
# (`F`); GELU carries its 256-entry int8 table (computed by the reference when quantizing);
# ARGMAX writes int8 class indices (scale 1, zero point 0) along its `axis` operand. GRU and
# FULLY_CONNECTED_F32 read and write float32 tensors (`F`): a float region of a CPU partition,
# entered by a DEQUANTIZE (mdla_quant.kernels.gru); GRU's weights are [D, 3H, I] and
# [D, 3H, H], its biases [D, 3H], D = 2 when `bidirectional`, else 1. GROUP_NORM's weight and
# bias are float32 [C] (C the size of channel axis `axis`).
HOST_OP_BASE = 0x10000


# The table group (schema group `table`): unary functions a CPU partition runs as the 256-entry
# int8 table the quantizer attaches as their second input. Every host op of form TABLE_FORM is
# one, and the engine runs them all alike (y[i] = table[x[i] + 128]); GELU's code is older.
TABLE_FORM = "x:a table:a"
TABLE_HOSTS = (
    K.ELU, K.MISH, K.SOFTPLUS, K.CELU, K.SELU, K.LOG_SIGMOID, K.TANHSHRINK, K.SOFTSIGN,
    K.EXP, K.LOG, K.SQRT, K.RSQRT,
)  # fmt: skip


def _host(kind: OpKind, code: int, form: str, outputs: str = "y:a") -> OpSchema:
    entry = SCHEMA[kind]
    return OpSchema(
        kind.name, code, (Form.parse(form),), Form.parse(outputs), entry.attrs, frozenset(), False
    )


HOST_BY_CODE: dict[int, OpSchema] = {
    e.code: e
    for e in (
        _host(K.LAYER_NORM, HOST_OP_BASE, "x:a weight:F bias:F eps:f"),
        _host(K.GELU, HOST_OP_BASE + 1, TABLE_FORM),
        _host(K.ARGMAX, HOST_OP_BASE + 2, "x:a axis:i"),
        _host(K.GRU, HOST_OP_BASE + 3, "x:F w_ih:F w_hh:F b_ih:F b_hh:F bidirectional:B", "y:F"),
        _host(K.FULLY_CONNECTED_F32, HOST_OP_BASE + 4, "x:F weights:F bias:F", "y:F"),
        _host(K.CONCATENATION_F32, HOST_OP_BASE + 5, "inputs:F+ axis:i", "y:F"),
        _host(K.GROUP_NORM, HOST_OP_BASE + 6, "x:a weight:F bias:F groups:i axis:i eps:f"),
        *(_host(k, HOST_OP_BASE + 7 + i, TABLE_FORM) for i, k in enumerate(TABLE_HOSTS)),
        _host(K.ADAPTIVE_AVG_POOL_2D, HOST_OP_BASE + 19, "x:a out_h:i out_w:i"),
        _host(K.ADAPTIVE_MAX_POOL_2D, HOST_OP_BASE + 20, "x:a out_h:i out_w:i"),
        _host(
            K.MAX_POOL_3D,
            HOST_OP_BASE + 21,
            "x:a kernel_t:i kernel_h:i kernel_w:i stride_t:i stride_h:i stride_w:i pad_t:i "
            "pad_h:i pad_w:i",
        ),
        _host(K.RECIPROCAL, HOST_OP_BASE + 22, TABLE_FORM),
        _host(K.WHERE, HOST_OP_BASE + 23, TABLE_FORM),
        _host(K.SELECT, HOST_OP_BASE + 24, "x:a y:a a:a b:a compare:i"),
        *(_host(k, HOST_OP_BASE + 25 + i, TABLE_FORM) for i, k in enumerate(ELEMENTWISE_TABLES)),
    )
    if e.code is not None
}
HOST_CODES: dict[OpKind, int] = {OpKind[e.name]: c for c, e in HOST_BY_CODE.items()}


def op_name(code: int) -> str:
    """The name of a Neuron or host operation code ("UNKNOWN" for others)."""
    entry = HOST_BY_CODE.get(code)
    if entry is not None:
        return entry.name
    return NEURON_OP_NAMES[code] if 0 <= code <= MAX_OP_CODE else "UNKNOWN"


def group(name: str) -> frozenset[OpKind]:
    """The kinds whose schema entry lists group `name` (conv, pool, activation, binary, ...)."""
    return frozenset(k for k, e in SCHEMA.items() if name in e.groups)


def attrs_of(op_kind: OpKind) -> type[Attrs]:
    return SCHEMA[op_kind].attrs


def record_for(kind: OpKind, name: str, attrs: Attrs | Mapping[str, Any] | None) -> Attrs:
    """`attrs` as the record of `kind`'s family: a mapping is parsed (AttrError naming the op on
    unknown keys or wrong types), a record must be of the family's class."""
    family = SCHEMA[kind].attrs
    where = f"op `{name}` ({kind.name})"
    if isinstance(attrs, Attrs):
        if type(attrs) is not family:
            why = f"{where}: attributes are a {type(attrs).__name__}, want {family.__name__}"
            raise AttrError(why, where)
        return attrs
    return family.parse(attrs or {}, where)


def find_form(entry: OpSchema, types: Sequence[int | None] | int) -> Form | None:
    """The first of `entry`'s forms that `types` fit, or None."""
    return next((f for f in entry.forms if match(f.types, types)), None)


def arity_ok(code: int, n_inputs: int, n_outputs: int) -> bool:
    """Operand counts an operation may have: any count for codes without forms."""
    entry = BY_CODE.get(code) or HOST_BY_CODE.get(code)
    if entry is None:
        return True
    return find_form(entry, n_inputs) is not None and match(entry.outputs.types, n_outputs)
