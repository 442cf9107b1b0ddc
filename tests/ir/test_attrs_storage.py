"""`Op.attrs` holds the op family's frozen record: mappings are parsed at construction, reads
are typed, and the op stays comparable, hashable and picklable."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from mdla_ir import Op, OpKind
from mdla_ir.attrs import (
    AttrError,
    ConvAttrs,
    FuseAttrs,
    NoAttrs,
    PoolAttrs,
    with_fuse,
)
from mdla_ir.shapes import infer

K = OpKind


def _conv(**attrs: object) -> Op:
    return Op(K.CONV_2D, "c", ("x", "w"), ("y",), attrs)


def test_a_mapping_becomes_the_family_record_with_defaults() -> None:
    op = _conv(stride=[2, 2], fuse="RELU")
    assert isinstance(op.attrs, ConvAttrs)
    assert op.attrs == ConvAttrs(stride=(2, 2), fuse="RELU")
    assert op == Op(K.CONV_2D, "c", ("x", "w"), ("y",), ConvAttrs(stride=(2, 2), fuse="RELU"))
    assert Op(K.RELU, "r", ("x",), ("y",)).attrs == NoAttrs()


def test_with_takes_a_mapping_or_a_record() -> None:
    op = _conv(stride=(2, 2))
    assert op.with_(attrs={"groups": 4}).attrs == ConvAttrs(groups=4)
    moved = op.with_(attrs=dataclasses.replace(ConvAttrs.of(op), fuse="RELU6"))
    assert (moved.attrs.stride, moved.fuse, moved.label) == ((2, 2), "RELU6", "CONV_2D+RELU6")


def test_a_record_of_another_family_is_refused_naming_the_op() -> None:
    with pytest.raises(AttrError, match=r"op `c` \(CONV_2D\): attributes are a PoolAttrs"):
        Op(K.CONV_2D, "c", ("x",), ("y",), PoolAttrs(kernel=(2, 2)))
    with pytest.raises(AttrError, match=r"op `c` \(CONV_2D\).*not a PoolAttrs"):
        PoolAttrs.of(_conv())
    # changing the kind to another family keeps no stale record
    with pytest.raises(AttrError, match="want MeanAttrs"):
        _conv().with_(kind=K.MEAN)


def test_fuse_reads_every_family() -> None:
    assert _conv(fuse="RELU").fuse == "RELU"
    assert Op(K.ADD, "a", ("x", "y"), ("z",), FuseAttrs("RELU6")).fuse == "RELU6"
    assert Op(K.RELU, "r", ("x",), ("y",)).fuse == "NONE"
    with pytest.raises(AttrError, match="NoAttrs has no fused activation"):
        with_fuse(NoAttrs(), "RELU")


def test_ops_hash_compare_and_pickle_by_value() -> None:
    a, b = _conv(stride=(2, 2)), _conv(stride=[2, 2], padding=(0, 0, 0, 0))
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b, _conv(stride=(1, 1))}) == 2
    back = pickle.loads(pickle.dumps(a))
    assert back == a
    assert isinstance(back.attrs, ConvAttrs)


def test_shape_rules_take_a_record_or_a_mapping() -> None:
    shapes = [(1, 8, 8, 3), (4, 3, 3, 3)]
    record = ConvAttrs(stride=(2, 2), padding=(1, 1, 1, 1))
    mapping = {"stride": (2, 2), "padding": (1, 1, 1, 1)}
    assert infer(K.CONV_2D, record, shapes, "NHWC") == [(1, 4, 4, 4)]
    assert infer(K.CONV_2D, mapping, shapes, "NHWC") == [(1, 4, 4, 4)]
