"""The JSON documents of `--json` for results that are objects elsewhere (`validate`'s
Validation): plain dicts of what the text output shows, nothing recomputed."""

from __future__ import annotations

from typing import Any

from workbench import validation


def layer(t: Any) -> dict[str, Any]:
    """One mdla_quant TensorStats: the tensor, its op, cosine, SQNR and max |error|."""
    return {
        "tensor": t.name,
        "op": t.op,
        "kind": t.kind,
        "cosine": t.cosine,
        "sqnr_db": t.sqnr_db,
        "max_abs_error": t.max_abs,
    }


def validation_doc(v: validation.Validation, model: str, on: str) -> dict[str, Any]:
    """`workbench validate --json`: per input the top-1 (a classifier) and the first output's
    agreement; per output cosine, SQNR and agreement for the reference and the device."""
    return {
        "model": model,
        "on": on,
        "device": v.device,
        "kind": v.kind,
        "inputs": [
            {
                "name": row.name,
                "top1": {
                    k: {"index": i, "label": label, "p": p} for k, (i, label, p) in row.top1.items()
                },
                "agree": row.agree,
            }
            for row in v.rows
        ],
        "outputs": [
            {
                "name": o.name,
                "shape": list(o.shape),
                "kind": o.kind,
                **{
                    key: {
                        "cosine": a.cosine,
                        "sqnr_db": a.sqnr_db,
                        "agreement": o.agreement(key),
                    }
                    for key, a in o.values.items()
                },
            }
            for o in v.outputs
        ],
        "latency_ms": {"median": v.latency_ms[0], "min": v.latency_ms[1]},
        "worst_layers": [layer(t) for t in v.worst],
    }
