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
                                rounding equal to model.rounding                (optional)
    preprocess          map     mode str, size [uint], mean [float], std [float] (optional)
    probe_patched       bool    the probe edited this file by hand              (optional)
    random_weights      bool    compiled from a model whose weights were random (optional)

`check_model` is what both readers check (csrc/manifest_check.c: chk_model); every flaw is a
BadHeaderError naming the field (`model.quant.bins`) and its byte offset.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, Protocol

from mdla_ir.provenance import ROUNDINGS, Preprocess, Provenance, QuantRecord
from mdla_runtime.errors import BadHeaderError

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
    "probe_patched",
    "random_weights",
)
MODEL_REQUIRED = MODEL_KEYS[:11]
# The quant map holds QuantRecord's fields, each checked as its annotation says (int -> uint).
QUANT_TYPES = {
    f.name: {"str": "str", "float": "float", "bool": "bool", "int": "uint"}[str(f.type)]
    for f in fields(QuantRecord)
}
QUANT_KEYS = tuple(QUANT_TYPES)
# The fields of format 2's first files are required; those QuantRecord gained later are optional
# (a reader fills in their defaults), so older manifests keep reading.
QUANT_REQUIRED = QUANT_KEYS[: QUANT_KEYS.index("device") + 1]
PREPROCESS_KEYS = ("mode", "size", "mean", "std")


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
    if "preprocess" in model:
        pre = model["preprocess"]
        c.keys(pre, "model.preprocess", PREPROCESS_KEYS, PREPROCESS_KEYS)
        c.typed(pre, "mode", "model.preprocess", "str")
        c.uint_list(pre["size"], "model.preprocess.size")
        c.typed(pre, "mean", "model.preprocess", "floats")
        c.typed(pre, "std", "model.preprocess", "floats")


def model_section(name: str, prov: Provenance, content_hash: str) -> dict[str, Any]:
    """The `model` map `save` writes for a graph called `name` with provenance `prov`."""
    model: dict[str, Any] = {
        "name": name,
        "content_hash": content_hash,
        "source_hash": prov.source_hash,
        "rounding": prov.rounding,
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
    if prov.preprocess is not None:
        p = prov.preprocess
        model["preprocess"] = {
            "mode": p.mode,
            "size": [int(d) for d in p.size],
            "mean": [float(v) for v in p.mean],
            "std": [float(v) for v in p.std],
        }
    if prov.random_weights:
        model["random_weights"] = True
    return model


def provenance(model: Mapping[str, Any]) -> Provenance:
    """The `Provenance` a checked model section records."""
    quant = QuantRecord(**model["quant"]) if "quant" in model else None
    pre = model.get("preprocess")
    return Provenance(
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
            else Preprocess(pre["mode"], tuple(pre["size"]), tuple(pre["mean"]), tuple(pre["std"]))
        ),
        random_weights=bool(model.get("random_weights", False)),
    )
