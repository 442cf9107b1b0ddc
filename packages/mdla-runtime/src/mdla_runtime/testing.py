"""Builders for tests: a small valid manifest and one malformed variant per error kind.

blob = sample_manifest()                  # a valid .mdla file (a per-channel CONV_2D)
for case in malformed_cases(): ...        # (name, bytes, error class, field), for both readers
blob = pack(header, data)                 # re-frame an edited header (valid preamble/padding)
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgpack  # type: ignore[import-untyped]
import numpy as np

from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from mdla_runtime import errors
from mdla_runtime.format import container as fmt
from mdla_runtime.format.manifest import to_bytes

Header = dict[str, Any]


def sample_graph() -> Graph:
    """A per-channel CONV_2D with every optional part of the model section filled in, as the
    workbench writes an image model: the input is the NCHW image (1, 3, 8, 8) its preprocess
    record makes, held NHWC on the device (boundary perm (0, 2, 3, 1))."""
    from mdla_ir.builders import act, const, qp
    from mdla_ir.graph import Op
    from mdla_ir.provenance import Preprocess, Provenance, QuantRecord

    prov = Provenance(
        spec="sample",
        module="Conv2d",
        source_hash="0" * 64,
        target="mdla3.5",
        device="mtk-mdla",
        rules=(("conv_pad_to_pad_valid", 1),),
        quant=QuantRecord(),
        calibration_samples=4,
        labels=("cat", "dog"),
        preprocess=Preprocess("imagenet", (8, 8), (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    )
    rng = np.random.default_rng(7)
    ws = rng.uniform(0.01, 0.05, 4).astype(np.float32)
    xq = qp(0.04, -3)
    tensors = [
        act("x", (1, 8, 8, 3), xq),
        const("w", rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8), qp(ws, 0, 0)),
        const("b", rng.integers(-500, 500, 4).astype(np.int32), qp(ws * np.float32(0.04), 0, 0)),
        act("out", (1, 8, 8, 4), qp(0.2, -10)),
    ]
    conv = {"stride": (1, 1), "dilation": (1, 1), "padding": (1, 1, 1, 1), "fuse": "NONE"}
    return Graph(
        "sample",
        {t.name: t for t in tensors},
        (Op(OpKind.CONV_2D, "conv0", ("x", "w", "b"), ("out",), conv),),
        ("x",),
        ("out",),
        layout="NHWC",
        boundary={"x": (0, 2, 3, 1)},
        provenance=prov,
    )


def sample_manifest() -> bytes:
    return to_bytes(sample_graph())


def split(blob: bytes) -> tuple[Header, bytes]:
    """The header (as a plain dict) and the data section of a valid file."""
    hlen = int.from_bytes(blob[12:20], "little")
    header = msgpack.unpackb(blob[fmt.PREAMBLE : fmt.PREAMBLE + hlen])
    return header, blob[fmt.align(fmt.PREAMBLE + hlen) :]


def pack(header: Header, data: bytes, version: int = fmt.FORMAT_VERSION) -> bytes:
    packed: bytes = msgpack.packb(header, use_bin_type=True)
    pad = fmt.align(fmt.PREAMBLE + len(packed)) - fmt.PREAMBLE - len(packed)
    return fmt.MAGIC + struct.pack("<IQ", version, len(packed)) + packed + bytes(pad) + data


@dataclass(frozen=True)
class Malformed:
    name: str
    data: bytes
    kind: type[errors.ManifestError]
    field: str


def _const_operands(header: Header) -> tuple[int, int]:
    """Indices of the per-channel weights and of the int32 bias."""
    ops = header["operands"]
    w = next(i for i, o in enumerate(ops) if o["type"] == fmt.TENSOR_QUANT8_SYMM_PER_CHANNEL)
    b = next(i for i, o in enumerate(ops) if o["type"] == fmt.TENSOR_INT32 and "data" in o)
    return w, b


def _edit(blob: bytes, fn: Callable[[Header], None]) -> bytes:
    header, data = split(blob)
    fn(header)
    return pack(header, data)


Edit = tuple[str, Callable[[Header], None], type[errors.ManifestError], str]


def _model_edits() -> list[Edit]:
    """One malformation per check of the model section (format/model.py)."""

    def model(key: str, value: Any) -> Callable[[Header], None]:
        return lambda h: h["model"].__setitem__(key, value)

    def quant(key: str, value: Any) -> Callable[[Header], None]:
        return lambda h: h["model"]["quant"].__setitem__(key, value)

    bad = errors.BadHeaderError
    return [
        ("model_unknown_key", model("colour", "red"), bad, "model.colour"),
        ("model_missing_key", lambda h: h["model"].pop("source_hash"), bad, "model.source_hash"),
        ("model_name_type", model("name", 7), bad, "model.name"),
        ("model_rounding_value", model("rounding", "nearest"), bad, "model.rounding"),
        (
            "model_calibration_type",
            model("calibration_samples", -1),
            bad,
            "model.calibration_samples",
        ),
        ("model_rules_type", model("rules", {"fold": "twice"}), bad, "model.rules.fold"),
        ("model_rules_not_map", model("rules", [1]), bad, "model.rules"),
        ("model_label_type", model("labels", ["cat", 3]), bad, "model.labels[1]"),
        ("model_quant_unknown", quant("colour", 1), bad, "model.quant.colour"),
        ("model_quant_bins_type", quant("bins", 2.5), bad, "model.quant.bins"),
        ("model_quant_adaround_type", quant("adaround", -1), bad, "model.quant.adaround"),
        ("model_quant_equalize_type", quant("equalize", 1), bad, "model.quant.equalize"),
        ("model_random_weights_type", model("random_weights", 1), bad, "model.random_weights"),
        ("model_quant_rounding", quant("rounding", "single"), bad, "model.quant.rounding"),
        (
            "model_preprocess_size",
            model("preprocess", {"mode": "tf", "size": [1, "x"], "mean": [], "std": []}),
            bad,
            "model.preprocess.size[1]",
        ),
        ("model_preprocess_key", model("preprocess", {"mode": "tf"}), bad, "model.preprocess.size"),
    ]


def _semantic_edits(header: Header) -> list[Edit]:
    """One malformation per semantic check (format/semantic.py), on the sample manifest: input
    operand 0 (int8, dims 1x8x8x3, model_shape 1x3x8x8), per-channel weights 1, bias 2, the conv
    writing output 13."""
    ops = header["operands"]
    w, b = _const_operands(header)
    x, y = header["inputs"][0]["operand"], header["outputs"][0]["operand"]

    def at(section: str, i: int, key: str, value: Any) -> Callable[[Header], None]:
        return lambda h: h[section][i].__setitem__(key, value)

    def grow(n: int) -> Callable[[Header], None]:  # n unused operands of 255 MiB each
        big = {"type": fmt.TENSOR_QUANT8_ASYMM_SIGNED, "dims": [255, 1024, 1024], "scale": 0.5}
        return lambda h: h["operands"].extend(dict(big) for _ in range(n))

    def first(key: str, value: Any) -> Callable[[Header], None]:  # a key before `type`
        return lambda h: h["operands"].__setitem__(x, {key: value, **h["operands"][x]})

    def key_named_header(h: Header) -> None:  # the root's own name, as a key before the rest
        rest = dict(h)
        h.clear()
        h.update({"header": 1, **rest})

    def output_is_input(h: Header) -> None:
        h["outputs"] = [dict(h["inputs"][0])]

    q, dup, perm = (
        errors.BadQuantizationError,
        errors.DuplicateEntryError,
        errors.BadPermutationError,
    )
    shape, ref = errors.ShapeMismatchError, errors.BadReferenceError
    budget = errors.OverBudgetError
    n = len(ops)
    return [
        ("scale_nan", at("operands", x, "scale", float("nan")), q, f"operands[{x}].scale"),
        ("scale_inf", at("operands", x, "scale", float("-inf")), q, f"operands[{x}].scale"),
        ("scale_zero", at("operands", x, "scale", 0.0), q, f"operands[{x}].scale"),
        ("scale_negative", at("operands", x, "scale", -0.5), q, f"operands[{x}].scale"),
        ("scale_above_flt_max", at("operands", x, "scale", 3.5e38), q, f"operands[{x}].scale"),
        ("scale_subnormal", at("operands", x, "scale", 1e-40), q, f"operands[{x}].scale"),
        ("scale_missing", lambda h: h["operands"][x].pop("scale"), q, f"operands[{x}].scale"),
        ("zero_point_range", at("operands", x, "zero_point", 200), q, f"operands[{x}].zero_point"),
        (
            "per_channel_scale_zero",
            lambda h: h["operands"][w]["scales"].__setitem__(0, 0.0),
            q,
            f"operands[{w}].scales[0]",
        ),
        (
            "per_channel_zero_point",
            at("operands", w, "zero_point", 1),
            q,
            f"operands[{w}].zero_point",
        ),
        ("bias_scale_nan", at("operands", b, "scale", float("nan")), q, f"operands[{b}].scale"),
        (
            "tensor_over_budget",
            at("operands", x, "dims", [1, 65535, 32768, 1]),
            budget,
            f"operands[{x}].dims",
        ),
        ("total_over_budget", grow(5), budget, f"operands[{n + 4}].dims"),
        ("zero_dim", at("operands", y, "dims", [1, 8, 0, 4]), shape, f"operands[{y}].dims[2]"),
        ("io_not_int8", at("outputs", 0, "operand", b), ref, "outputs[0].operand"),
        (
            "dup_inputs",
            lambda h: h.__setitem__("inputs", h["inputs"] * 2),
            dup,
            "inputs[1].operand",
        ),
        (
            "dup_outputs",
            lambda h: h.__setitem__("outputs", h["outputs"] * 40),
            dup,
            "outputs[1].operand",
        ),
        ("io_scale_differs", at("inputs", 0, "scale", 0.5), q, "inputs[0].scale"),
        ("io_scale_nan", at("outputs", 0, "scale", float("nan")), q, "outputs[0].scale"),
        ("io_zero_point_differs", at("inputs", 0, "zero_point", 1), q, "inputs[0].zero_point"),
        ("io_shape", at("inputs", 0, "shape", [1, 8, 3, 8]), shape, "inputs[0].shape"),
        ("perm_axis_past_rank", at("inputs", 0, "perm", [0, 9, 2, 3]), perm, "inputs[0].perm[1]"),
        ("perm_wrong_length", at("inputs", 0, "perm", [0, 1]), perm, "inputs[0].perm"),
        ("perm_repeats", at("inputs", 0, "perm", [0, 1, 1, 3]), perm, "inputs[0].perm[2]"),
        (
            "model_shape",
            at("inputs", 0, "model_shape", [1, 8, 8, 3]),
            shape,
            "inputs[0].model_shape",
        ),
        (
            "model_shape_huge",
            at("inputs", 0, "model_shape", [1, 3, 65535, 65535]),
            shape,
            "inputs[0].model_shape",
        ),
        (
            "labels_true",
            lambda h: h["model"].__setitem__("labels", True),
            errors.BadHeaderError,
            "model.labels",
        ),
        (
            "preprocess_no_inputs",
            lambda h: h.__setitem__("inputs", []),
            errors.CountMismatchError,
            "inputs",
        ),
        (
            "preprocess_size",
            lambda h: h["model"]["preprocess"].__setitem__("size", [9, 8]),
            shape,
            "inputs[0].model_shape",
        ),
        (
            "preprocess_not_an_image",
            lambda h: h["model"]["preprocess"].__setitem__("size", [8, 8, 1]),
            shape,
            "inputs[0].model_shape",
        ),
        (
            "op_writes_input",
            lambda h: h["operations"][0].__setitem__("outputs", [x]),
            ref,
            "operations[0].outputs[0]",
        ),
        (
            "op_writes_constant",
            lambda h: h["operations"][0].__setitem__("outputs", [b]),
            ref,
            "operations[0].outputs[0]",
        ),
        (
            "written_twice",
            lambda h: h.__setitem__("operations", h["operations"] * 2),
            dup,
            "operations[1].outputs[0]",
        ),
        (
            "read_before_write",
            lambda h: h["operations"][0]["inputs"].__setitem__(0, y),
            ref,
            "operations[0].inputs[0]",
        ),
        ("output_not_written", output_is_input, ref, "outputs[0].operand"),
        (
            "no_outputs",
            lambda h: h.__setitem__("outputs", []),
            errors.CountMismatchError,
            "outputs",
        ),
        (
            "key_spells_a_path",
            first("dims[0]", 1),
            errors.BadHeaderError,
            f"operands[{x}].dims\\[0\\]",
        ),
        ("key_with_newline", first("a\nb", 1), errors.BadHeaderError, f"operands[{x}].a\\nb"),
        ("key_with_nul", first("a\x00b", 1), errors.BadHeaderError, f"operands[{x}].a\\x00b"),
        ("key_named_header", key_named_header, errors.BadHeaderError, "header"),
        (
            "too_many_header_values",
            lambda h: h["model"].__setitem__("labels", [""] * (1 << 20)),
            budget,
            "model.labels[1048549]",
        ),
    ]


def malformed_cases() -> list[Malformed]:
    blob = sample_manifest()
    header, data = split(blob)
    hlen = int.from_bytes(blob[12:20], "little")
    w, b = _const_operands(header)
    wd = header["operands"][w]["data"]
    scalar = next(i for i, o in enumerate(header["operands"]) if o["type"] == fmt.INT32)
    cases = [
        Malformed("bad_magic", b"GGUF" + blob[4:], errors.BadMagicError, "magic"),
        Malformed(
            "future_version",
            pack(header, data, version=fmt.FORMAT_VERSION + 1),
            errors.FutureVersionError,
            "version",
        ),
        Malformed(
            "old_version", pack(header, data, version=1), errors.FutureVersionError, "version"
        ),
        Malformed(
            "header_too_large",
            blob[:12] + struct.pack("<Q", fmt.MAX_HEADER + 1) + blob[20:],
            errors.HeaderTooLargeError,
            "header_length",
        ),
        Malformed("truncated_preamble", blob[:10], errors.TruncatedHeaderError, "preamble"),
        Malformed(
            "truncated_header",
            blob[: fmt.PREAMBLE + hlen // 2],
            errors.TruncatedHeaderError,
            "header",
        ),
        Malformed("truncated_data", blob[:-10], errors.TruncatedDataError, "data_size"),
        Malformed("trailing_bytes", blob + bytes(64), errors.CountMismatchError, "data_size"),
        Malformed("not_msgpack", blob[:20] + b"\xc1" + blob[21:], errors.BadHeaderError, "header"),
    ]
    pad_at = fmt.PREAMBLE + hlen
    if pad_at < fmt.align(pad_at):
        bad = blob[:pad_at] + b"\x01" + blob[pad_at + 1 :]
        cases.append(Malformed("bad_padding", bad, errors.BadPaddingError, "padding"))

    def op_field(i: int, key: str, value: Any) -> Callable[[Header], None]:
        return lambda h: h["operands"][i].__setitem__(key, value)

    edits: list[Edit] = [
        (
            "offset_outside",
            op_field(w, "data", [fmt.align(len(data)), wd[1]]),
            errors.OffsetOutOfBoundsError,
            f"operands[{w}].data",
        ),
        (
            "misaligned",
            op_field(w, "data", [wd[0] + 1, wd[1]]),
            errors.MisalignedError,
            f"operands[{w}].data",
        ),
        (
            "short_slice",
            op_field(w, "data", [wd[0], wd[1] - 1]),
            errors.CountMismatchError,
            f"operands[{w}].data",
        ),
        (
            "scales_count",
            op_field(w, "scales", header["operands"][w]["scales"][:-1]),
            errors.CountMismatchError,
            f"operands[{w}].scales",
        ),
        ("unknown_type", op_field(0, "type", 77), errors.UnknownTypeCodeError, "operands[0].type"),
        (
            "dims_overflow",
            op_field(0, "dims", [65536, 65536, 1, 1]),
            errors.DimsOverflowError,
            "operands[0].dims",
        ),
        (
            "rank_overflow",
            op_field(0, "dims", [1] * 9),
            errors.DimsOverflowError,
            "operands[0].dims",
        ),
        ("unknown_key", op_field(0, "colour", 1), errors.BadHeaderError, "operands[0].colour"),
        (
            "unknown_op",
            lambda h: h["operations"][0].__setitem__("code", 999),
            errors.UnknownOpCodeError,
            "operations[0].code",
        ),
        (
            "unavailable_op",
            lambda h: h["operations"][0].__setitem__("code", 60),
            errors.UnknownOpCodeError,
            "operations[0].code",
        ),
        (
            "operand_count",
            lambda h: h["operations"][0]["inputs"].pop(),
            errors.OperandCountMismatchError,
            "operations[0].inputs",
        ),
        (
            "bad_index",
            lambda h: h["operations"][0].__setitem__("outputs", [9999]),
            errors.BadIndexError,
            "operations[0].outputs[0]",
        ),
        (
            "bad_io_index",
            lambda h: h["inputs"][0].__setitem__("operand", 9999),
            errors.BadIndexError,
            "inputs[0].operand",
        ),
        ("missing_section", lambda h: h.pop("operations"), errors.BadHeaderError, "operations"),
        *_model_edits(),
        (
            "scalar_without_value",
            lambda h: h["operands"][scalar].pop("value"),
            errors.BadHeaderError,
            f"operands[{scalar}]",
        ),
        *_semantic_edits(header),
    ]
    b_len = header["operands"][b]["data"][1]
    overlap = [wd[0], b_len]  # the bias moved onto the weights' bytes

    def overlapping(h: Header) -> None:
        h["operands"][b]["data"] = overlap

    if b_len <= wd[1]:
        edits.append(
            (
                "overlapping",
                overlapping,
                errors.OverlappingSlicesError,
                f"operands[{max(w, b) if b_len == wd[1] else w}].data",
            )
        )
    cases += [Malformed(n, _edit(blob, fn), kind, f) for n, fn, kind, f in edits]
    return cases


def chain_qgraph() -> Graph:
    """Four ops, for --ops cuts: conv0 x->c, relu0 c->r, add0 (r, c)->a, pool0 a->p.

    Live tensors at each cut: after 1 op [c]; after 2 [c, r]; after 3 [a]; after 4 [p].
    The model input is NCHW (boundary perm (0, 2, 3, 1)), so layouts are exercised too.
    """
    from mdla_ir.builders import act, const, qp
    from mdla_ir.graph import Graph, Op
    from mdla_ir.provenance import Provenance

    rng = np.random.default_rng(11)
    ws = rng.uniform(0.01, 0.05, 4).astype(np.float32)
    w = rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    b = rng.integers(-500, 500, 4).astype(np.int32)
    xq, cq, aq = qp(0.05, 3), qp(0.2, -10), qp(0.25, -20)
    tensors = [
        act("x", (1, 6, 6, 3), xq),
        const("w", w, qp(ws, 0, 0)),
        const("b", b, qp(ws * np.float32(0.05), 0, 0)),
        act("c", (1, 6, 6, 4), cq),
        act("r", (1, 6, 6, 4), cq),
        act("a", (1, 6, 6, 4), aq),
        act("p", (1, 3, 3, 4), aq),
    ]
    conv = {"stride": (1, 1), "dilation": (1, 1), "padding": (1, 1, 1, 1), "fuse": "NONE"}
    pool = {"kernel": (2, 2), "stride": (2, 2), "padding": (0, 0, 0, 0), "fuse": "NONE"}
    ops = (
        Op(OpKind.CONV_2D, "conv0", ("x", "w", "b"), ("c",), conv),
        Op(OpKind.RELU, "relu0", ("c",), ("r",)),
        Op(OpKind.ADD, "add0", ("r", "c"), ("a",), {"fuse": "NONE"}),
        Op(OpKind.MAX_POOL_2D, "pool0", ("a",), ("p",), pool),
    )
    return Graph(
        "chain",
        {t.name: t for t in tensors},
        ops,
        ("x",),
        ("p",),
        layout="NHWC",
        boundary={"x": (0, 2, 3, 1)},
        provenance=Provenance(labels=("a", "b")),
    )
