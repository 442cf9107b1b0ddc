"""The manifest's `model` section: a graph's `Provenance` under a fixed key list.

    name                str     the graph's name                                (required)
    content_hash        str     sha256 of operands, operations and data         (required)
    source_hash         str     sha256 of the fx graph and state dict ("" if none) (required)
    rounding            str     "double" | "single": the engine runs with it    (required)
    spec, module        str     model spec, torch module class                  (required)
    target, device      str     legalize's target and device                    (required)
    rules               map     rule name -> uint, the legalize rules that fired (required)
    calibration_samples uint                                                    (required)
    labels              [str]   class labels, [] if none                        (required)
    quant               map     the QuantConfig: QUANT_KEYS (QUANT_REQUIRED required), its
                                rounding equal to model.rounding; a16 [str] the int16
                                activations, a16_gain_db [float] each one's measured gain
                                (dB; as many as a16), a16_mode str the request that chose
                                them ("auto:25%", name patterns) (each absent when none),
                                weight_scale, weight_rounding (absent: "max", "nearest");
                                an absent optional key reads as mdla_ir's QUANT_ABSENT
                                                                                (optional)
    preprocess          map     mode str, size [uint], mean [float], std [float]; optional:
                                channels str ("rgb" | "bgr"), resize uint (short side before
                                the centre crop; 0 = whole image, no crop)      (optional)
    postprocess         map     a detector's CPU decoding, POSTPROCESS_KEYS: kind "ssd",
                                image_size [h, w], num_classes uint >= 2, aspect_ratios
                                [[float]] (one list per level, >= 1 level), scales [float]
                                (levels + 1), box_weights [float] (4), box_clip, score_thresh,
                                nms_thresh float, topk_candidates, detections_per_img uint,
                                clip bool, order "regression_first" | "classification_first";
                                optional: steps [uint] (one per level)           (optional)
    probe_patched       bool    the probe edited this file by hand              (optional)
    random_weights      bool    compiled from a model whose weights were random (optional)
    import_path         str     how the torch module was captured: "export" (torch.export)
                                or "fx" (torch.fx); absent: not recorded        (optional)
    output_kinds        [str]   what each output is, one per output in order: OUTPUT_KINDS
                                (logits, classmap, boxes, keypoints, raw); absent in files
                                written before it (readers then infer it)        (optional)

`check_model` is what both readers check (csrc/format/manifest_check.c: chk_model); every flaw is a
BadHeaderError naming the field (`model.quant.bins`) and its byte offset.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from functools import cache
from typing import Any, Protocol

from mdla_ir.provenance import (
    OUTPUT_KINDS,
    QUANT_ABSENT,
    ROUNDINGS,
    Accumulator,
    Numerics,
    Postprocess,
    Preprocess,
    Provenance,
    QuantRecord,
    Rounding,
)
from mdla_runtime.errors import BadHeaderError
from mdla_target import DEFAULT_TARGET, TargetDataError, load_target

MODEL_KEYS = (
    "name",
    "content_hash",
    "source_hash",
    "rounding",
    "spec",
    "module",
    "target",
    "device",
    "rules",
    "calibration_samples",
    "labels",
    "quant",
    "preprocess",
    "postprocess",
    "probe_patched",
    "random_weights",
    "import_path",
    "output_kinds",
)
MODEL_REQUIRED = MODEL_KEYS[:11]
# The quant map holds QuantRecord's fields, each checked as its annotation says (int -> uint).
_KINDS = {
    "str": "str",
    "float": "float",
    "bool": "bool",
    "int": "uint",
    "tuple[str, ...]": "strs",
    "tuple[float, ...]": "floats",
}
QUANT_TYPES = {f.name: _KINDS[str(f.type)] for f in fields(QuantRecord)}
QUANT_KEYS = tuple(QUANT_TYPES)
# The fields of format 2's first files are required; those QuantRecord gained later are optional
# (a reader fills in their defaults), so older manifests keep reading.
QUANT_REQUIRED = QUANT_KEYS[: QUANT_KEYS.index("device") + 1]
# Keys written only when they differ from what a file without them means (`QUANT_ABSENT`).
QUANT_LATE = QUANT_KEYS[QUANT_KEYS.index("a16") :]
PREPROCESS_KEYS = ("mode", "size", "mean", "std", "channels", "resize")
PREPROCESS_REQUIRED = PREPROCESS_KEYS[:4]
CHANNEL_ORDERS = ("rgb", "bgr")
POSTPROCESS_KEYS = (
    "kind",
    "image_size",
    "num_classes",
    "aspect_ratios",
    "scales",
    "box_weights",
    "box_clip",
    "score_thresh",
    "nms_thresh",
    "topk_candidates",
    "detections_per_img",
    "clip",
    "order",
    "steps",
)
POSTPROCESS_REQUIRED = POSTPROCESS_KEYS[:-1]
POSTPROCESS_KINDS = ("ssd",)
HEAD_ORDERS = ("regression_first", "classification_first")
IMPORT_PATHS = ("export", "fx")  # mdla_ir.Imported.path


class Checker(Protocol):
    def at(self, field: str) -> int: ...
    def keys(
        self, obj: Any, field: str, allowed: tuple[str, ...], required: tuple[str, ...]
    ) -> None: ...
    def typed(self, obj: Mapping[str, Any], key: str, field: str, kind: str) -> None: ...
    def uint_list(self, obj: Any, field: str, limit: int = ...) -> list[int]: ...


def check_model(c: Checker, model: Any) -> None:
    """The model section has exactly the keys above, each of its type."""
    c.keys(model, "model", MODEL_KEYS, MODEL_REQUIRED)
    for key in MODEL_REQUIRED[:8]:  # name ... device: the strings
        c.typed(model, key, "model", "str")
    c.typed(model, "calibration_samples", "model", "uint")
    c.typed(model, "probe_patched", "model", "bool")
    c.typed(model, "random_weights", "model", "bool")
    c.typed(model, "import_path", "model", "str")
    if model.get("import_path", "export") not in IMPORT_PATHS:
        why = "expected `export` or `fx`"
        raise BadHeaderError("model.import_path", c.at("model.import_path"), why)
    if model["rounding"] not in ROUNDINGS:
        raise BadHeaderError(
            "model.rounding", c.at("model.rounding"), "expected `double` or `single`"
        )
    rules = model["rules"]
    if not isinstance(rules, dict):
        raise BadHeaderError("model.rules", c.at("model.rules"), "expected a map")
    for name in rules:
        c.typed(rules, name, "model.rules", "uint")
    labels = model["labels"]
    if not isinstance(labels, list):
        raise BadHeaderError("model.labels", c.at("model.labels"), "expected an array")
    for k, label in enumerate(labels):
        if not isinstance(label, str):
            f = f"model.labels[{k}]"
            raise BadHeaderError(f, c.at(f), f"expected str, got {type(label).__name__}")
    if "quant" in model:
        c.keys(model["quant"], "model.quant", QUANT_KEYS, QUANT_REQUIRED)
        for key in QUANT_KEYS:
            c.typed(model["quant"], key, "model.quant", QUANT_TYPES[key])
        if model["quant"]["rounding"] != model["rounding"]:
            f = "model.quant.rounding"
            raise BadHeaderError(f, c.at(f), "disagrees with model.rounding")
        gains = model["quant"].get("a16_gain_db")
        if gains is not None and len(gains) != len(model["quant"].get("a16", [])):
            f = "model.quant.a16_gain_db"
            raise BadHeaderError(f, c.at(f), "expected one gain per model.quant.a16 name")
    if "preprocess" in model:
        pre = model["preprocess"]
        c.keys(pre, "model.preprocess", PREPROCESS_KEYS, PREPROCESS_REQUIRED)
        c.typed(pre, "mode", "model.preprocess", "str")
        c.uint_list(pre["size"], "model.preprocess.size")
        c.typed(pre, "mean", "model.preprocess", "floats")
        c.typed(pre, "std", "model.preprocess", "floats")
        c.typed(pre, "channels", "model.preprocess", "str")
        c.typed(pre, "resize", "model.preprocess", "uint")
        if pre.get("channels", "rgb") not in CHANNEL_ORDERS:
            f = "model.preprocess.channels"
            raise BadHeaderError(f, c.at(f), "expected `rgb` or `bgr`")
    if "postprocess" in model:
        check_postprocess(c, model["postprocess"])
    if "output_kinds" in model:
        check_output_kinds(c, model["output_kinds"])


def check_output_kinds(c: Checker, kinds: Any) -> None:
    """An array of OUTPUT_KINDS names (its length against the outputs is `semantic`'s)."""
    if not isinstance(kinds, list):
        raise BadHeaderError("model.output_kinds", c.at("model.output_kinds"), "expected an array")
    for k, kind in enumerate(kinds):
        if kind not in OUTPUT_KINDS or not isinstance(kind, str):
            f = f"model.output_kinds[{k}]"
            raise BadHeaderError(f, c.at(f), f"expected one of {', '.join(OUTPUT_KINDS)}")


def check_postprocess(c: Checker, post: Any) -> None:
    """The postprocess map: its keys and types, and lengths that agree with the level count
    (len(aspect_ratios)): scales one more, steps one each, box_weights 4, image_size 2."""
    f = "model.postprocess"
    c.keys(post, f, POSTPROCESS_KEYS, POSTPROCESS_REQUIRED)
    for key, kind in (("kind", "str"), ("order", "str"), ("clip", "bool")):
        c.typed(post, key, f, kind)
    for key in ("num_classes", "topk_candidates", "detections_per_img"):
        c.typed(post, key, f, "uint")
    for key in ("box_clip", "score_thresh", "nms_thresh"):
        c.typed(post, key, f, "float")
    for key in ("scales", "box_weights"):
        c.typed(post, key, f, "floats")
    if post["kind"] not in POSTPROCESS_KINDS:
        raise BadHeaderError(f"{f}.kind", c.at(f"{f}.kind"), "expected `ssd`")
    if post["order"] not in HEAD_ORDERS:
        why = "expected `regression_first` or `classification_first`"
        raise BadHeaderError(f"{f}.order", c.at(f"{f}.order"), why)
    if post["num_classes"] < 2:
        raise BadHeaderError(f"{f}.num_classes", c.at(f"{f}.num_classes"), "expected >= 2")
    ratios = post["aspect_ratios"]
    if not isinstance(ratios, list) or not ratios:
        raise BadHeaderError(f"{f}.aspect_ratios", c.at(f"{f}.aspect_ratios"), "expected a list")
    for k, level in enumerate(ratios):
        if not isinstance(level, list) or not all(isinstance(v, float) for v in level):
            g = f"{f}.aspect_ratios[{k}]"
            raise BadHeaderError(g, c.at(g), "expected floats")
    sizes = [("image_size", 2), ("scales", len(ratios) + 1), ("box_weights", 4)]
    if "steps" in post:
        sizes.append(("steps", len(ratios)))
    for key, n in sizes:
        if key in ("image_size", "steps"):
            c.uint_list(post[key], f"{f}.{key}")
        if len(post[key]) != n:
            why = f"expected {n} values, got {len(post[key])}"
            raise BadHeaderError(f"{f}.{key}", c.at(f"{f}.{key}"), why)


def model_section(name: str, prov: Provenance, content_hash: str) -> dict[str, Any]:
    """The `model` map `save` writes for a graph called `name` with provenance `prov`."""
    model: dict[str, Any] = {
        "name": name,
        "content_hash": content_hash,
        "source_hash": prov.source_hash,
        "rounding": prov.rounding.value,
        "spec": prov.spec,
        "module": prov.module,
        "target": prov.target,
        "device": prov.device,
        "rules": dict(prov.rules),
        "calibration_samples": prov.calibration_samples,
        "labels": list(prov.labels),
    }
    if prov.quant is not None:
        q = prov.quant
        model["quant"] = {k: getattr(q, k) for k in QUANT_KEYS}
        model["quant"]["percentile"] = float(q.percentile)
        model["quant"]["a16"] = list(q.a16)
        model["quant"]["a16_gain_db"] = [float(g) for g in q.a16_gain_db]
        for key in QUANT_LATE:  # at its absent value: the files of before the key, byte for byte
            if getattr(q, key) == QUANT_ABSENT[key]:
                del model["quant"][key]
    if prov.preprocess is not None:
        p = prov.preprocess
        model["preprocess"] = {
            "mode": p.mode,
            "size": [int(d) for d in p.size],
            "mean": [float(v) for v in p.mean],
            "std": [float(v) for v in p.std],
        }
        if p.channels != "rgb":
            model["preprocess"]["channels"] = p.channels
        if p.resize is not None:
            model["preprocess"]["resize"] = int(p.resize)
    if prov.postprocess is not None:
        model["postprocess"] = postprocess_section(prov.postprocess)
    if prov.random_weights:
        model["random_weights"] = True
    if prov.import_path:
        model["import_path"] = prov.import_path
    if prov.output_kinds:
        model["output_kinds"] = list(prov.output_kinds)
    return model


def postprocess_section(p: Postprocess) -> dict[str, Any]:
    """The `model.postprocess` map of a record (floats written as floats, ints as ints)."""
    section: dict[str, Any] = {
        "kind": p.kind,
        "image_size": [int(d) for d in p.image_size],
        "num_classes": int(p.num_classes),
        "aspect_ratios": [[float(a) for a in level] for level in p.aspect_ratios],
        "scales": [float(v) for v in p.scales],
        "box_weights": [float(v) for v in p.box_weights],
        "box_clip": float(p.box_clip),
        "score_thresh": float(p.score_thresh),
        "nms_thresh": float(p.nms_thresh),
        "topk_candidates": int(p.topk_candidates),
        "detections_per_img": int(p.detections_per_img),
        "clip": bool(p.clip),
        "order": p.order,
    }
    if p.steps is not None:
        section["steps"] = [int(s) for s in p.steps]
    return section


def postprocess(post: Mapping[str, Any]) -> Postprocess:
    """The `Postprocess` a checked postprocess map records."""
    h, w = post["image_size"]
    wx, wy, ww, wh = post["box_weights"]
    return Postprocess(
        kind=post["kind"],
        image_size=(h, w),
        num_classes=post["num_classes"],
        aspect_ratios=tuple(tuple(level) for level in post["aspect_ratios"]),
        scales=tuple(post["scales"]),
        box_weights=(wx, wy, ww, wh),
        box_clip=post["box_clip"],
        score_thresh=post["score_thresh"],
        nms_thresh=post["nms_thresh"],
        topk_candidates=post["topk_candidates"],
        detections_per_img=post["detections_per_img"],
        clip=post["clip"],
        order=post["order"],
        steps=tuple(post["steps"]) if "steps" in post else None,
    )


@cache
def target_accumulator(target: str) -> Accumulator | None:
    """The `[arith] accumulator` fact of `target` (a manifest records the rounding only); None
    when the target cannot be loaded here (a target file that has moved)."""
    try:
        return Accumulator(load_target(target or DEFAULT_TARGET).accumulator)
    except TargetDataError:
        return None


def provenance(model: Mapping[str, Any]) -> Provenance:
    """The `Provenance` a checked model section records."""
    quant = QuantRecord(**{**QUANT_ABSENT, **model["quant"]}) if "quant" in model else None
    pre = model.get("preprocess")
    target = quant.target if quant is not None else model["target"]
    return Provenance(
        numerics=Numerics(Rounding(model["rounding"]), target_accumulator(target), target),
        spec=model["spec"],
        module=model["module"],
        source_hash=model["source_hash"],
        target=model["target"],
        device=model["device"],
        rules=tuple(sorted(model["rules"].items())),
        quant=quant,
        calibration_samples=model["calibration_samples"],
        labels=tuple(model["labels"]),
        preprocess=(
            None
            if pre is None
            else Preprocess(
                pre["mode"],
                tuple(pre["size"]),
                tuple(pre["mean"]),
                tuple(pre["std"]),
                pre.get("channels", "rgb"),
                pre.get("resize"),
            )
        ),
        postprocess=postprocess(model["postprocess"]) if "postprocess" in model else None,
        random_weights=bool(model.get("random_weights", False)),
        import_path=model.get("import_path", ""),
        output_kinds=tuple(model.get("output_kinds", ())),
    )
