"""The op schema (mdla_ir/schema.py) and the attribute records (mdla_ir/attrs.py)."""

from __future__ import annotations

import numpy as np
import pytest

from mdla_ir import ops
from mdla_ir.attrs import AttrError, ConvAttrs, PadAttrs, PoolAttrs, ResizeAttrs
from mdla_ir.builders import act, qp, single_op_qgraph
from mdla_ir.graph import Op
from mdla_ir.ops import OpKind
from mdla_ir.schema import BY_CODE, NEURON_OP_NAMES, SCHEMA, Form, arity_ok, match

K = OpKind


@pytest.mark.parametrize("kind", list(OpKind))
def test_every_kind_has_an_entry_with_its_code_and_abi_name(kind: OpKind) -> None:
    entry = SCHEMA[kind]
    assert entry.name == kind.name
    if kind.is_neuron:
        assert entry.code == kind.value
        assert NEURON_OP_NAMES[kind.value] == kind.name
        assert entry.forms, "a Neuron op needs its NNAPI operand forms"
        assert BY_CODE[kind.value] is entry
    else:  # the explicit pre-legalization marker
        assert entry.pre_legalization
        assert entry.forms == ()


def test_abi_names_cover_codes_0_to_107() -> None:
    assert len(NEURON_OP_NAMES) == 108
    assert NEURON_OP_NAMES[20] == "RELU1"
    assert NEURON_OP_NAMES[106:] == ("HYFBCTOYUV420", "YUV420TOAFBC")
    assert BY_CODE[20].name == "RELU1"  # an ABI-only entry (no OpKind)


def test_groups_are_derived_from_the_schema_and_unchanged() -> None:
    assert {K.CONV_2D, K.DEPTHWISE_CONV_2D} == ops.CONVS
    assert {K.AVERAGE_POOL_2D, K.MAX_POOL_2D} == ops.POOLS
    assert {
        K.RELU,
        K.RELU6,
        K.LOGISTIC,
        K.TANH,
        K.HARD_SWISH,
        K.SILU,
        K.HARD_SIGMOID,
        K.GELU,
        # the table group's smooth functions (a CPU partition's int8 tables)
        K.ELU,
        K.MISH,
        K.SOFTPLUS,
        K.CELU,
        K.SELU,
        K.LOG_SIGMOID,
        K.TANHSHRINK,
        K.SOFTSIGN,
        # torch's elementwise functions, tables too
        K.COS,
        K.SIN,
        K.TAN,
        K.ATAN,
        K.EXPM1,
        K.LOG1P,
    } == ops.ACTIVATIONS
    assert {K.ADD, K.MUL, K.SUB, K.DIV, K.PRELU} == ops.BINARY
    extra = {K.BATCH_NORM, K.RESIZE_BILINEAR, K.ADAPTIVE_AVG_POOL_2D, K.ADAPTIVE_MAX_POOL_2D}
    extra |= {K.RESIZE_NEAREST_NEIGHBOR, K.DEPTH_TO_SPACE, K.TRANSPOSE_CONV_2D}
    assert ops.CONVS | ops.POOLS | extra == ops.SPATIAL
    fusable = {K.ADD, K.MUL, K.SUB, K.FULLY_CONNECTED, K.TRANSPOSE_CONV_2D}
    assert ops.CONVS | ops.POOLS | fusable == ops.FUSABLE


def test_forms_parse_into_types_and_slot_names() -> None:
    form = Form.parse("x:a filter:w bias:t pad:i [nchw:B [dw:i dh:i]]")
    assert form.types == "awti[B[ii]]"
    assert form.slots == ("x", "filter", "bias", "pad", "nchw", "dw", "dh")
    assert Form.parse("inputs:a+ axis:i").letters == ("a+", "i")
    for bad in ("x:a [y:i", "x:a ]", "x:q", "x"):
        with pytest.raises(ValueError, match="form"):
            Form.parse(bad)


def test_operand_orders_as_the_abi_reference_gives_them() -> None:
    conv = SCHEMA[K.CONV_2D].forms[0].slots
    assert conv[3:10] == (
        "pad_left",
        "pad_right",
        "pad_top",
        "pad_bottom",
        "stride_w",
        "stride_h",
        "fuse",
    )
    assert SCHEMA[K.DEPTHWISE_CONV_2D].forms[0].slots[9:11] == ("multiplier", "fuse")
    assert SCHEMA[K.RESIZE_BILINEAR].forms[0].slots[1:3] == ("out_w", "out_h")  # width first
    assert SCHEMA[K.MEAN].forms[0].types == "ati"  # keep_dims is an INT32 for MEAN


def test_counts_match_the_old_hand_written_tables() -> None:
    old = {0: {3}, 1: {7, 8, 10, 11}, 3: {7, 8, 10, 11, 13}, 4: {8, 9, 11, 12, 14}, 9: {4}}
    old |= {22: {2}, 23: {3, 4, 5, 6}, 25: {2, 3}, 31: {3}, 102: {2, 3, 4}, 19: {1}, 20: {1}}
    for code, counts in old.items():
        assert {n for n in range(20) if arity_ok(code, n, 1)} == counts, NEURON_OP_NAMES[code]
        assert not arity_ok(code, min(counts), 2)
    assert all(arity_ok(2, n, 1) for n in range(2, 40))
    assert not arity_ok(2, 1, 1)
    assert arity_ok(70, 7, 3)  # POW: no forms, any count
    assert match("a+i", 2)
    assert not match("a+i", 1)


def _op(kind: OpKind, **attrs: object) -> Op:
    return Op(kind, "op0", ("x",), ("y",), attrs)


def test_records_fill_defaults_once_and_coerce_sequences() -> None:
    a = ConvAttrs.of(_op(K.CONV_2D, stride=[2, np.int64(2)]))
    assert a.stride == (2, 2)
    assert (a.padding, a.dilation, a.groups, a.fuse, a.multiplier) == (
        (0,) * 4,
        (1, 1),
        1,
        "NONE",
        None,
    )
    assert PoolAttrs.of(_op(K.MAX_POOL_2D, kernel=(3, 3))).count_include_pad is False
    assert PadAttrs.of(_op(K.PAD, pads=[[0, 0], [1, 2]])).pads == ((0, 0), (1, 2))
    assert SCHEMA[K.RESIZE_BILINEAR].attrs is ResizeAttrs


@pytest.mark.parametrize(
    ("kind", "attrs", "why"),
    [
        (K.CONV_2D, {"strides": (1, 1)}, r"unknown attribute\(s\) \['strides'\]"),
        (K.CONV_2D, {"groups": "2"}, "attribute `groups` of ConvAttrs must be int"),
        (K.CONV_2D, {"groups": True}, "must be int"),
        (K.MAX_POOL_2D, {"stride": (1, 1)}, "missing attribute `kernel`"),
        (K.RESIZE_BILINEAR, {"size": (4, 4), "align_corners": 2}, "must be bool"),
        (K.SOFTMAX, {"beta": "1"}, "must be float"),
    ],
)
def test_records_reject_bad_attributes_naming_the_op(
    kind: OpKind, attrs: dict[str, object], why: str
) -> None:
    with pytest.raises(AttrError, match=rf"op `op0` \({kind.name}\).*{why}") as info:
        SCHEMA[kind].attrs.of(_op(kind, **attrs))
    assert info.value.op == f"op `op0` ({kind.name})"


def test_an_op_is_checked_against_its_family_record_when_built() -> None:
    q = qp(0.1, 0)
    with pytest.raises(AttrError, match=r"`relu0` \(RELU\): unknown attribute\(s\) \['alpha'\]"):
        single_op_qgraph(K.RELU, [act("x", (1, 4), q)], (1, 4), q, {"alpha": 0.1})
