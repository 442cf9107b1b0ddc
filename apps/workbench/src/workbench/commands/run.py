"""`workbench run`: a compiled model on a target: top-5 per image, latency, device."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.table import Table

import mdla_runtime
from workbench import images as imgs
from workbench import pipeline
from workbench.commands.options import Debug, Device, On, console
from workbench.errors import BAD_INPUT, WorkbenchError, reported

Array = np.ndarray[Any, Any]
EPILOG = """Examples:

  workbench run lite0.mdla cat.jpg dog.png

  workbench run lite0.mdla --on ssh://u0_a123@phone:8022 --repeat 20 --json

  workbench run lite0.mdla chelsea coffee      # scikit-image sample photos by name
"""


def manifest_inputs(manifest: mdla_runtime.Manifest, names: list[str]) -> list[tuple[str, Array]]:
    """(name, model input) per image, preprocessed as the manifest records; no images: the
    sample photos, or one seeded random input for a model without image preprocessing."""
    pre = manifest.provenance.preprocess
    shape = manifest.inputs[0].model_shape
    if pre is None:
        if names:
            raise WorkbenchError(
                f"`{manifest.name}` records no image preprocessing: it cannot take images "
                "(run it without IMAGE for a random input)",
                BAD_INPUT,
            )
        rng = np.random.default_rng(0)
        return [("random", rng.uniform(-1, 1, shape).astype(np.float32))]
    size = (int(shape[2]), int(shape[3]))
    return [
        (Path(n).name, imgs.prepare(imgs.read_image(n), pre.mode, size))
        for n in names or list(imgs.SAMPLES)
    ]


def run_command(
    manifest_path: Annotated[Path, typer.Argument(metavar="OUT.mdla", help="Compiled model.")],
    images: Annotated[
        list[str] | None, typer.Argument(help="Image files or sample names (default: samples).")
    ] = None,
    on: On = "emu",
    device: Device = "mtk-mdla",
    repeat: Annotated[int, typer.Option("--repeat", min=1, help="Runs per image.")] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    debug: Debug = False,
) -> None:
    """Run OUT.mdla on the target: top-5 labels per image (when the manifest has labels),
    latency (median/min of --repeat runs) and the device that ran it."""
    with reported(debug):
        manifest = pipeline.load_manifest(manifest_path)
        target = mdla_runtime.open_target(on)
        labels = manifest.provenance.labels
        results = []
        for name, x in manifest_inputs(manifest, images or []):
            r = target.run(manifest, [x], devices=(device,), repeat=repeat)
            logits = r.outputs[0]
            entry: dict[str, Any] = {
                "image": name,
                "device": r.device,
                "latency_ms": {"median": r.latency_ms[0], "min": r.latency_ms[1]},
            }
            if logits.ndim == 2 and logits.shape[1] > 1:
                entry["top5"] = [
                    {"index": i, "label": lab, "p": round(p, 4)}
                    for i, lab, p in imgs.top_k(logits, labels, 5)
                ]
            else:
                entry["output"] = {"shape": list(logits.shape), "mean": float(logits.mean())}
            results.append(entry)
        if as_json:
            typer.echo(json.dumps({"model": manifest.name, "target": on, "runs": results}))
            return
        _print(results, manifest.name, on, repeat)


def _print(results: list[dict[str, Any]], model: str, on: str, repeat: int) -> None:
    table = Table(title=f"{model} on {on} ({repeat} run(s) per image)")
    for col in ("image", "top-5" if "top5" in results[0] else "output", "ms median/min", "device"):
        table.add_column(col)
    for e in results:
        what = (
            ", ".join(f"{t['label']} {t['p']:.2f}" for t in e["top5"])
            if "top5" in e
            else f"shape {e['output']['shape']}, mean {e['output']['mean']:.4g}"
        )
        lat = e["latency_ms"]
        table.add_row(e["image"], what, f"{lat['median']:.2f}/{lat['min']:.2f}", e["device"])
    console().print(table)
