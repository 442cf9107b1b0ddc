"""Typed op attributes: one frozen record per op family, every default written once.

    a = ConvAttrs.of(op)          # op.attrs as a ConvAttrs (AttrError for another family)
    a.stride, a.padding, a.fuse   # typed, defaults filled in
    op.with_(attrs=dataclasses.replace(a, fuse="RELU"))

`Op.attrs` holds the record of the op's family (`mdla_ir.schema.SCHEMA[kind].attrs`); a mapping
given to `Op` (the importer and the rewrite rules may build dicts) is parsed into it by
`parse`: unknown keys and wrong types raise AttrError naming the op. A field's kind
says what it accepts: `int`, `ints` (a sequence of ints), `pairs` (a sequence of int pairs),
`bool`, `float`, `str`, `opt_int`, `opt_str`, `opt_ints`; a field without a default is required.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from mdla_ir.errors import IRError

if TYPE_CHECKING:
    from mdla_ir.graph import Op

MISSING = dataclasses.MISSING


class AttrError(IRError):
    """An op's attributes do not fit its family's record; `op` names the op."""

    def __init__(self, message: str, op: str | None = None) -> None:
        super().__init__(message)
        self.op = op


def _f(kind: str, default: Any = MISSING) -> Any:
    return field(default=default, metadata={"kind": kind})


def _int(v: Any) -> int:
    if isinstance(v, bool | np.bool_) or not isinstance(v, int | np.integer):
        raise TypeError(f"{v!r} is not an int")
    return int(v)


def _ints(v: Any) -> tuple[int, ...]:
    if isinstance(v, str | bytes) or not isinstance(v, Sequence | np.ndarray):
        raise TypeError(f"{v!r} is not a sequence of ints")
    return tuple(_int(x) for x in v)


def _bool(v: Any) -> bool:
    if isinstance(v, bool | np.bool_) or (isinstance(v, int | np.integer) and v in (0, 1)):
        return bool(v)
    raise TypeError(f"{v!r} is not a bool")


def _float(v: Any) -> float:
    if isinstance(v, bool | np.bool_) or not isinstance(v, int | float | np.integer | np.floating):
        raise TypeError(f"{v!r} is not a number")
    return float(v)


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError(f"{v!r} is not a str")
    return v


_KINDS: dict[str, Any] = {
    "int": _int,
    "ints": _ints,
    "pairs": lambda v: tuple(_ints(p) for p in v),
    "bool": _bool,
    "float": _float,
    "str": _str,
    "opt_int": lambda v: None if v is None else _int(v),
    "opt_str": lambda v: None if v is None else _str(v),
    "opt_ints": lambda v: None if v is None else _ints(v),
}


class Attrs:
    """Base of the attribute records (frozen dataclasses with slots)."""

    __slots__ = ()

    @classmethod
    def kinds(cls) -> dict[str, str]:
        """{field name: kind} of the record."""
        return {f.name: f.metadata["kind"] for f in dataclasses.fields(cls)}  # type: ignore[arg-type]

    @classmethod
    def parse(cls, given: Mapping[str, Any], where: str = "op") -> Self:
        """The record of mapping `given`; AttrError naming `where` on unknown keys or wrong
        types."""
        kinds = cls.kinds()
        unknown = sorted(set(given) - set(kinds))
        if unknown:
            raise AttrError(
                f"{where}: unknown attribute(s) {unknown} for {cls.__name__} "
                f"(fields: {', '.join(kinds)})",
                where,
            )
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.name not in given:
                if f.default is MISSING:
                    why = f"{where}: missing attribute `{f.name}` ({cls.__name__})"
                    raise AttrError(why, where)
                continue
            try:
                values[f.name] = _KINDS[f.metadata["kind"]](given[f.name])
            except (TypeError, ValueError) as exc:
                raise AttrError(
                    f"{where}: attribute `{f.name}` of {cls.__name__} must be "
                    f"{f.metadata['kind']}: {exc}",
                    where,
                ) from exc
        return cls(**values)

    @classmethod
    def of(cls, op: Op) -> Self:
        """`op.attrs`, which must be a `cls` (AttrError naming the op and its kind if not)."""
        attrs = op.attrs
        if not isinstance(attrs, cls):
            where = f"op `{op.name}` ({op.kind.name})"
            why = f"{where}: attributes are a {type(attrs).__name__}, not a {cls.__name__}"
            raise AttrError(why, where)
        return attrs


@dataclass(frozen=True, slots=True)
class NoAttrs(Attrs):
    """Ops without attributes (unary activations, QUANTIZE, ...)."""


@dataclass(frozen=True, slots=True)
class FuseAttrs(Attrs):
    """ADD, SUB, MUL, DIV, FULLY_CONNECTED: a fused activation (a FUSE_CODES name)."""

    fuse: str = _f("str", "NONE")


@dataclass(frozen=True, slots=True)
class ConvAttrs(Attrs):
    """CONV_2D, DEPTHWISE_CONV_2D (and CONV_3D): (h, w[, d]) pairs, padding (t, b, l, r)."""

    stride: tuple[int, ...] = _f("ints", (1, 1))
    padding: tuple[int, ...] = _f("ints", (0, 0, 0, 0))
    dilation: tuple[int, ...] = _f("ints", (1, 1))
    groups: int = _f("int", 1)
    fuse: str = _f("str", "NONE")
    multiplier: int | None = _f("opt_int", None)  # DEPTHWISE: Cout // Cin when absent
    folded_bn: str | None = _f("opt_str", None)  # the BATCH_NORM folded into it
    depthwise: bool = _f("bool", False)


@dataclass(frozen=True, slots=True)
class PoolAttrs(Attrs):
    """AVERAGE/MAX_POOL_2D (and _3D: (t, h, w) triples, padding per axis): kernel, stride, pads."""

    kernel: tuple[int, ...] = _f("ints")
    stride: tuple[int, ...] = _f("ints", (1, 1))
    padding: tuple[int, ...] = _f("ints", (0, 0, 0, 0))
    fuse: str = _f("str", "NONE")
    count_include_pad: bool = _f("bool", False)


@dataclass(frozen=True, slots=True)
class AdaptivePoolAttrs(Attrs):
    output_size: tuple[int, ...] = _f("ints")


@dataclass(frozen=True, slots=True)
class ResizeAttrs(Attrs):
    """RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR: size (h, w) and the coordinate mapping."""

    size: tuple[int, ...] = _f("ints")
    align_corners: bool = _f("bool", False)
    half_pixel_centers: bool = _f("bool", False)


@dataclass(frozen=True, slots=True)
class BlockAttrs(Attrs):
    """DEPTH_TO_SPACE: the block size r (channels C*r*r -> C, H and W times r)."""

    block_size: int = _f("int")


@dataclass(frozen=True, slots=True)
class SoftmaxAttrs(Attrs):
    axis: int = _f("int", -1)
    beta: float = _f("float", 1.0)


@dataclass(frozen=True, slots=True)
class ArgmaxAttrs(Attrs):
    """ARGMAX: the index of the largest value along `axis` (the first on ties)."""

    axis: int = _f("int")
    keepdims: bool = _f("bool", False)


@dataclass(frozen=True, slots=True)
class GruAttrs(Attrs):
    """GRU: one torch.nn.GRU layer over (T, I), h0 = 0; bidirectional concatenates the
    forward and the reversed direction's hidden states, (T, 2H)."""

    bidirectional: bool = _f("bool", False)


@dataclass(frozen=True, slots=True)
class AxisAttrs(Attrs):
    """CONCATENATION: the axis the inputs are joined on."""

    axis: int = _f("int", 0)


@dataclass(frozen=True, slots=True)
class PadAttrs(Attrs):
    """PAD: (before, after) per axis, and the real value padded with."""

    pads: tuple[tuple[int, ...], ...] = _f("pairs")
    value: float = _f("float", 0.0)


@dataclass(frozen=True, slots=True)
class ReshapeAttrs(Attrs):
    shape: tuple[int, ...] = _f("ints")


@dataclass(frozen=True, slots=True)
class TransposeAttrs(Attrs):
    perm: tuple[int, ...] = _f("ints")


@dataclass(frozen=True, slots=True)
class MeanAttrs(Attrs):
    """MEAN and the REDUCE_* reductions: the axes reduced, whether they are kept (size 1)."""

    axes: tuple[int, ...] = _f("ints")
    keepdims: bool = _f("bool", False)


@dataclass(frozen=True, slots=True)
class ClampAttrs(Attrs):
    """CLAMP: min(max(x, lo), hi); an absent bound is infinite."""

    lo: float = _f("float", float("-inf"))
    hi: float = _f("float", float("inf"))


@dataclass(frozen=True, slots=True)
class MatmulAttrs(Attrs):
    adj_x: bool = _f("bool", False)
    adj_y: bool = _f("bool", False)


@dataclass(frozen=True, slots=True)
class SliceAttrs(Attrs):
    """SLICE: per axis, the first index and the length kept (a chunk/split piece, x[:, a:b])."""

    begin: tuple[int, ...] = _f("ints")
    size: tuple[int, ...] = _f("ints")


@dataclass(frozen=True, slots=True)
class StridedSliceAttrs(Attrs):
    """STRIDED_SLICE: per axis, the first index, the count kept and the step (negative steps
    walk backwards: `flip` is begin d-1, step -1); output index i reads begin + i * step."""

    begin: tuple[int, ...] = _f("ints")
    size: tuple[int, ...] = _f("ints")
    strides: tuple[int, ...] = _f("ints")


@dataclass(frozen=True, slots=True)
class ShuffleAttrs(Attrs):
    groups: int = _f("int")
    axis: int = _f("int", 1)


@dataclass(frozen=True, slots=True)
class NormAttrs(Attrs):
    """BATCH_NORM, LAYER_NORM (normalized_shape)."""

    eps: float = _f("float", 1e-5)
    normalized_shape: tuple[int, ...] | None = _f("opt_ints", None)


@dataclass(frozen=True, slots=True)
class GroupNormAttrs(Attrs):
    """GROUP_NORM: `groups` equal runs of the channel axis `axis` (1 in NCHW, 3 in NHWC), each
    normalized over its channels and every axis but the batch; InstanceNorm is groups = C."""

    groups: int = _f("int")
    eps: float = _f("float", 1e-5)
    axis: int = _f("int", 1)


@dataclass(frozen=True, slots=True)
class FlattenAttrs(Attrs):
    start: int = _f("int", 1)
    end: int = _f("int", -1)


@dataclass(frozen=True, slots=True)
class FunctionAttrs(Attrs):
    """The parameters of the table group's functions (mdla_ir.functions): ELU's alpha, scale
    and input_scale (SELU is its own kind), CELU's alpha, Softplus's beta and threshold."""

    alpha: float = _f("float", 1.0)
    beta: float = _f("float", 1.0)
    threshold: float = _f("float", 20.0)
    scale: float = _f("float", 1.0)
    input_scale: float = _f("float", 1.0)


@dataclass(frozen=True, slots=True)
class WhereAttrs(Attrs):
    """WHERE's select on one tensor (mdla_ir.functions): y = then_scale * x + then_offset
    where `x compare threshold` holds, else else_scale * x + else_offset; compare is one of
    gt ge lt le eq ne."""

    compare: str = _f("str", "gt")
    threshold: float = _f("float", 0.0)
    then_scale: float = _f("float", 1.0)
    then_offset: float = _f("float", 0.0)
    else_scale: float = _f("float", 0.0)
    else_offset: float = _f("float", 0.0)


@dataclass(frozen=True, slots=True)
class SelectAttrs(Attrs):
    """SELECT (x, y, a, b): a where `x compare y` holds, else b; compare is one of gt ge lt le
    eq ne (COMPARES, in the order of their lowered codes)."""

    compare: str = _f("str", "gt")


COMPARES = ("gt", "ge", "lt", "le", "eq", "ne")

FUSED_FAMILIES = (FuseAttrs, ConvAttrs, PoolAttrs)


def fuse_of(attrs: Attrs) -> str:
    """The fused activation of a record ("NONE" for the families that have none)."""
    return attrs.fuse if isinstance(attrs, FUSED_FAMILIES) else "NONE"


def window_of(op: Op) -> ConvAttrs | PoolAttrs:
    """The record of a windowed op (a convolution or a pool): stride and padding."""
    if not isinstance(op.attrs, ConvAttrs | PoolAttrs):
        where = f"op `{op.name}` ({op.kind.name})"
        raise AttrError(f"{where}: {type(op.attrs).__name__} has no window", where)
    return op.attrs


def with_fuse(attrs: Attrs, fuse: str) -> Attrs:
    """`attrs` with fused activation `fuse` (AttrError for a family that has none)."""
    if not isinstance(attrs, FUSED_FAMILIES):
        raise AttrError(f"{type(attrs).__name__} has no fused activation (asked for {fuse})")
    return dataclasses.replace(attrs, fuse=fuse)
