"""Builders for tests: a small valid manifest and one malformed variant per error kind.

blob = sample_manifest()                  # a valid .mdla file (a per-channel CONV_2D)
for case in malformed_cases(): ...        # (name, bytes, error class, field), for both readers
blob = pack(header, data)                 # re-frame an edited header (valid preamble/padding)
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgpack  # type: ignore[import-untyped]
import numpy as np

from mdla_ir.devices import DEFAULT_TARGET, NPU
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
    from mdla_ir.provenance import (
        Accumulator,
        Numerics,
        Preprocess,
        Provenance,
        QuantRecord,
        Rounding,
    )

    prov = Provenance(
        spec="sample",
        module="Conv2d",
        source_hash="0" * 64,
        target=DEFAULT_TARGET,
        device=NPU,
        rules=(("conv_pad_to_pad_valid", 1),),
        quant=QuantRecord(),
        numerics=Numerics(Rounding.DOUBLE, Accumulator.SATURATE, DEFAULT_TARGET),
        calibration_samples=4,
        labels=("cat", "dog"),
        preprocess=Preprocess("imagenet", (8, 8), (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
        import_path="export",
        output_kinds=("raw",),
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
        ("model_quant_a16_type", quant("a16", "conv1"), bad, "model.quant.a16"),
        ("model_quant_a16_item", quant("a16", ["conv1", 3]), bad, "model.quant.a16"),
        ("model_quant_a16_gain_type", quant("a16_gain_db", [1]), bad, "model.quant.a16_gain_db"),
        ("model_quant_a16_gain_count", quant("a16_gain_db", [1.5]), bad, "model.quant.a16_gain_db"),
        ("model_quant_a16_mode_type", quant("a16_mode", 25), bad, "model.quant.a16_mode"),
        ("model_random_weights_type", model("random_weights", 1), bad, "model.random_weights"),
        ("model_import_path_type", model("import_path", 1), bad, "model.import_path"),
        ("model_import_path_value", model("import_path", "jit"), bad, "model.import_path"),
        ("model_output_kinds_map", model("output_kinds", {"y": "raw"}), bad, "model.output_kinds"),
        ("model_output_kind_name", model("output_kinds", ["box"]), bad, "model.output_kinds[0]"),
        ("model_output_kind_type", model("output_kinds", [3]), bad, "model.output_kinds[0]"),
        ("model_quant_rounding", quant("rounding", "single"), bad, "model.quant.rounding"),
        (
            "model_preprocess_size",
            model("preprocess", {"mode": "tf", "size": [1, "x"], "mean": [], "std": []}),
            bad,
            "model.preprocess.size[1]",
        ),
        ("model_preprocess_key", model("preprocess", {"mode": "tf"}), bad, "model.preprocess.size"),
        (
            "model_preprocess_channels",
            model("preprocess", {**_PRE, "channels": "yuv"}),
            bad,
            "model.preprocess.channels",
        ),
        (
            "model_preprocess_channels_type",
            model("preprocess", {**_PRE, "channels": 3}),
            bad,
            "model.preprocess.channels",
        ),
        (
            "model_preprocess_resize",
            model("preprocess", {**_PRE, "resize": -2}),
            bad,
            "model.preprocess.resize",
        ),
        *_postprocess_edits(),
    ]


# A well-formed SSD postprocess record with two feature levels (its edits break one key).
_POST: dict[str, Any] = {
    "kind": "ssd",
    "image_size": [64, 64],
    "num_classes": 4,
    "aspect_ratios": [[2.0], [2.0, 3.0]],
    "scales": [0.2, 0.5, 0.9],
    "box_weights": [10.0, 10.0, 5.0, 5.0],
    "box_clip": 4.135,
    "score_thresh": 0.01,
    "nms_thresh": 0.45,
    "topk_candidates": 100,
    "detections_per_img": 50,
    "clip": True,
    "order": "regression_first",
    "steps": [4, 8],
}


def _postprocess_edits() -> list[Edit]:
    """One malformation per check of model.postprocess (format/model.py:check_postprocess)."""

    def post(**changes: Any) -> Callable[[Header], None]:
        section = {k: v for k, v in {**_POST, **changes}.items() if v is not None}
        return lambda h: h["model"].__setitem__("postprocess", section)

    bad, f = errors.BadHeaderError, "model.postprocess"
    return [
        ("model_post_not_map", lambda h: h["model"].__setitem__("postprocess", [1]), bad, f),
        ("model_post_unknown", post(anchors=[1.0]), bad, f"{f}.anchors"),
        ("model_post_missing", post(scales=None), bad, f"{f}.scales"),
        ("model_post_kind_type", post(kind=1), bad, f"{f}.kind"),
        ("model_post_order_type", post(order=True), bad, f"{f}.order"),
        ("model_post_clip_type", post(clip=1), bad, f"{f}.clip"),
        ("model_post_classes_type", post(num_classes=-3), bad, f"{f}.num_classes"),
        ("model_post_topk_type", post(topk_candidates=1.5), bad, f"{f}.topk_candidates"),
        ("model_post_dets_type", post(detections_per_img="all"), bad, f"{f}.detections_per_img"),
        ("model_post_box_clip_type", post(box_clip=4), bad, f"{f}.box_clip"),
        ("model_post_score_type", post(score_thresh="0.5"), bad, f"{f}.score_thresh"),
        ("model_post_nms_type", post(nms_thresh=1), bad, f"{f}.nms_thresh"),
        ("model_post_scales_type", post(scales=[0.2, 1, 0.9]), bad, f"{f}.scales"),
        ("model_post_weights_type", post(box_weights=10.0), bad, f"{f}.box_weights"),
        ("model_post_kind", post(kind="yolo"), bad, f"{f}.kind"),
        ("model_post_order", post(order="interleaved"), bad, f"{f}.order"),
        ("model_post_classes", post(num_classes=1), bad, f"{f}.num_classes"),
        ("model_post_ratios_type", post(aspect_ratios={"0": [2.0]}), bad, f"{f}.aspect_ratios"),
        ("model_post_ratios_empty", post(aspect_ratios=[]), bad, f"{f}.aspect_ratios"),
        ("model_post_level_type", post(aspect_ratios=[[2.0], [2]]), bad, f"{f}.aspect_ratios[1]"),
        ("model_post_level_list", post(aspect_ratios=[2.0, 3.0]), bad, f"{f}.aspect_ratios[0]"),
        ("model_post_size_type", post(image_size=[64, -1]), bad, f"{f}.image_size[1]"),
        ("model_post_size_len", post(image_size=[64]), bad, f"{f}.image_size"),
        ("model_post_scales_len", post(scales=[0.2, 0.5]), bad, f"{f}.scales"),
        ("model_post_weights_len", post(box_weights=[10.0] * 3), bad, f"{f}.box_weights"),
        ("model_post_steps_type", post(steps=[4, "8"]), bad, f"{f}.steps[1]"),
        ("model_post_steps_len", post(steps=[4, 8, 16]), bad, f"{f}.steps"),
    ]


# A well-formed preprocess record for the sample manifest's 8x8 input (its edits break one key).
_PRE = {"mode": "custom", "size": [8, 8], "mean": [0.5] * 3, "std": [0.25] * 3}


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
        (  # int16 activations (TENSOR_QUANT16_SYMM) are symmetric
            "int16_zero_point",
            lambda h: h["operands"][x].update(type=7, zero_point=5),
            q,
            f"operands[{x}].zero_point",
        ),
        (
            "int16_scale_zero",
            lambda h: h["operands"][x].update(type=7, scale=0.0),
            q,
            f"operands[{x}].scale",
        ),
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
        (
            "float32_scalar_nan",
            lambda h: h["operands"].append({"type": fmt.FLOAT32, "dims": [], "value": math.nan}),
            errors.NonFiniteError,
            f"operands[{n}].value",
        ),
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
            "output_kinds_count",  # two kinds; the sample has 1 output
            lambda h: h["model"].__setitem__("output_kinds", ["logits", "raw"]),
            errors.CountMismatchError,
            "model.output_kinds",
        ),
        (
            "postprocess_outputs",  # 2 levels read 4 outputs; the sample has 1
            lambda h: h["model"].__setitem__("postprocess", dict(_POST)),
            errors.CountMismatchError,
            "outputs",
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
    from mdla_runtime.testing_float import float_region_cases  # imports this module
    from mdla_runtime.testing_int16 import int16_io_cases  # imports this module

    return cases + partition_cases() + float_region_cases() + int16_io_cases()


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


def partitioned_qgraph() -> Graph:
    """Three partitions (issue 17): conv0 on mtk-mdla; ln0 (LAYER_NORM) and gelu0 (GELU, host
    operations) on the cpu; add0 (gelu0's output + conv0's) on mtk-mdla again. GELU's table is a
    ramp, not GELU's values: the format carries the table, mdla_quant computes the real one."""
    from mdla_ir.builders import act, const, qp
    from mdla_ir.graph import Op, Tensor
    from mdla_ir.provenance import Provenance

    rng = np.random.default_rng(17)
    ws = rng.uniform(0.01, 0.05, 4).astype(np.float32)
    f32 = np.float32
    tensors = [
        act("x", (1, 4, 4, 3), qp(0.05, 3)),
        const("w", rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8), qp(ws, 0, 0)),
        const("b", rng.integers(-500, 500, 4).astype(np.int32), qp(ws * f32(0.05), 0, 0)),
        act("c", (1, 4, 4, 4), qp(0.2, -10)),
        Tensor("lw", (4,), "float32", rng.uniform(0.5, 1.5, 4).astype(f32)),
        Tensor("lb", (4,), "float32", rng.uniform(-0.5, 0.5, 4).astype(f32)),
        act("n", (1, 4, 4, 4), qp(0.03, 0)),
        Tensor("t", (256,), "int8", np.arange(-128, 128).astype(np.int8), qp(1.0, 0)),
        act("g", (1, 4, 4, 4), qp(0.03, 0)),
        act("a", (1, 4, 4, 4), qp(0.25, -20)),
    ]
    conv = {"stride": (1, 1), "dilation": (1, 1), "padding": (1, 1, 1, 1), "fuse": "NONE"}
    ops = (
        Op(OpKind.CONV_2D, "conv0", ("x", "w", "b"), ("c",), conv),
        Op(OpKind.LAYER_NORM, "ln0", ("c", "lw", "lb"), ("n",),
           {"eps": 1e-5, "normalized_shape": (4,)}),
        Op(OpKind.GELU, "gelu0", ("n", "t"), ("g",)),
        Op(OpKind.ADD, "add0", ("g", "c"), ("a",), {"fuse": "NONE"}),
    )  # fmt: skip
    prov = Provenance(device=NPU, cpu_ops=("ln0", "gelu0"), labels=("a",))
    return Graph(
        "parts", {t.name: t for t in tensors}, ops, ("x",), ("a",), "NHWC", provenance=prov
    )


def partition_cases() -> list[Malformed]:
    """One malformation per check of a manifest's partitions (format/semantic.py, check 6, and
    the structure checks of format/validate.py), on `partitioned_qgraph`'s file, whose
    partitions are [conv0] [ln0, gelu0] [add0] with operands named as its tensors."""
    blob = to_bytes(partitioned_qgraph())
    header, _ = split(blob)
    idx = {o["name"]: i for i, o in enumerate(header["operands"]) if "name" in o}
    x, c, g, a, w = (idx[n] for n in ("x", "c", "g", "a", "w"))
    assert [p["operations"] for p in header["partitions"]] == [[0], [1, 2], [3]]

    def part(p: int, key: str, value: Any) -> Callable[[Header], None]:
        return lambda h: h["partitions"][p].__setitem__(key, value)

    def swap(h: Header) -> None:  # [add0] before [ln0, gelu0]: add0 reads g, not yet written
        parts = h["partitions"]
        parts[1], parts[2] = parts[2], parts[1]

    bad_ref, dup = errors.BadReferenceError, errors.DuplicateEntryError
    edits: list[Edit] = [
        ("partitions_not_a_list", lambda h: h.__setitem__("partitions", {}),
         errors.BadHeaderError, "partitions"),
        ("partition_without_device", lambda h: h["partitions"][0].pop("device"),
         errors.BadHeaderError, "partitions[0].device"),
        ("partition_device_type", part(0, "device", 7), errors.BadHeaderError,
         "partitions[0].device"),
        ("partition_unknown_key", lambda h: h["partitions"][1].__setitem__("ops", []),
         errors.BadHeaderError, "partitions[1].ops"),
        ("partition_bad_operation", part(0, "operations", [0, 4]), errors.BadIndexError,
         "partitions[0].operations[1]"),
        ("partition_missing_tensor", part(1, "inputs", [c, 9999]), errors.BadIndexError,
         "partitions[1].inputs[1]"),
        ("partition_empty", part(2, "operations", []), errors.CountMismatchError,
         "partitions[2].operations"),
        ("partition_op_twice", part(2, "operations", [3, 2]), dup, "partitions[2].operations[1]"),
        ("partition_op_in_none", part(1, "operations", [1]), errors.CountMismatchError,
         "partitions"),
        ("partition_host_op_on_npu", part(1, "device", NPU), bad_ref,
         "partitions[1].operations[0]"),
        ("partition_cycle", swap, errors.PartitionCycleError, "partitions[1].inputs[0]"),
        ("partition_input_twice", part(2, "inputs", [g, g]), dup, "partitions[2].inputs[1]"),
        ("partition_constant_crosses", part(1, "inputs", [c, w]), bad_ref,
         "partitions[1].inputs[1]"),
        ("partition_input_from_later", part(0, "inputs", [x, a]), errors.PartitionCycleError,
         "partitions[0].inputs[1]"),
        ("partition_input_not_exported", part(0, "outputs", []), bad_ref,
         "partitions[1].inputs[0]"),
        ("partition_output_elsewhere", part(0, "outputs", [c, g]), bad_ref,
         "partitions[0].outputs[1]"),
        ("partition_unlisted_read", part(2, "inputs", [g]), bad_ref,
         "partitions[2].operations[0]"),
        ("partition_model_output_unlisted", part(2, "outputs", []), bad_ref, "outputs[0].operand"),
    ]  # fmt: skip
    cases = [Malformed(n, _edit(blob, fn), kind, f) for n, fn, kind, f in edits]
    data = split(blob)[1]
    v2 = dict(header)
    v2.pop("partitions")  # a format-2 file has no host operations: their codes are unknown
    cases += [
        Malformed("partitions_in_format_2", pack(header, data, version=2), errors.BadHeaderError,
                  "partitions"),
        Malformed("host_op_in_format_2", pack(v2, data, version=2), errors.UnknownOpCodeError,
                  "operations[1].code"),
    ]  # fmt: skip
    return cases
