"""The adb route: the engine's exact input files written on the host, its output files read
back, for a `.mdla` run on the phone by another tool (`adb shell ./mdla-engine ...`).

`run --save-inputs DIR` writes, per input (named as `run` names it: `cat.png`, `chelsea`,
`x.npy`, `random`), a folder `DIR/<name>/` holding

    input_<i>.bin   model input i as the engine receives it: int8, the device layout (the
                    boundary perm applied), clamp(round_half_away(x / scale) + zero_point)
    inputs.json     per file: name, dtype, shape (device layout), layout, model_shape, perm,
                    scale, zero_point; and the engine command that runs them

`run --load-outputs DIR` reads `DIR/<name>/output_<k>.bin` (what `mdla-engine ... --outdir`
writes: int8, or float32 for a float output, device layout), or `DIR/output_<k>.bin` for a run
of one input, instead of running, and reports them as `run` reports a run (decoded by kind,
compared with FP32, `--save-outputs`), without timing.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

import mdla_runtime
from mdla_runtime.atomic import write_atomic
from mdla_runtime.engine.target import RunResult, dequantize, output_dtype, quantize
from workbench.errors import BAD_INPUT, WorkbenchError

Array = np.ndarray[Any, Any]
LOADED = "loaded"  # the device a loaded run reports

SaveInputs = Annotated[
    Path | None,
    typer.Option(
        "--save-inputs",
        metavar="DIR",
        help="Write each input as the engine receives it (DIR/<input>/input_<i>.bin, int8, "
        "device layout, with inputs.json) for a run on the phone by another tool.",
    ),
]
LoadOutputs = Annotated[
    Path | None,
    typer.Option(
        "--load-outputs",
        metavar="DIR",
        help="Report the engine's output files of a run elsewhere (DIR/<input>/output_<k>.bin, "
        "or DIR/output_<k>.bin for one input) instead of running.",
    ),
]


def folder_name(name: str) -> str:
    """A sample's folder under DIR: its name, with path separators out."""
    return name.replace("/", "_").replace("\\", "_") or "input"


def save_inputs(manifest: mdla_runtime.Manifest, root: Path, name: str, xs: list[Array]) -> Path:
    """Write one sample's engine input files and their inputs.json; the folder written."""
    folder = root / folder_name(name)
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for i, (x, spec) in enumerate(zip(xs, manifest.inputs, strict=True)):
        q = quantize(x, spec)
        write_atomic(folder / f"input_{i}.bin", q.tobytes())
        files.append(
            {
                "file": f"input_{i}.bin",
                "name": spec.name,
                "dtype": "int8",
                "shape": [int(d) for d in q.shape],
                "layout": spec.layout,
                "model_shape": [int(d) for d in spec.model_shape],
                "perm": [int(p) for p in spec.perm],
                "scale": float(spec.scale),
                "zero_point": int(spec.zero_point),
            }
        )
    given = " ".join(f"--input {f['file']}" for f in files)
    doc = {
        "model": manifest.name,
        "input": name,
        "inputs": files,
        "engine": f"./mdla-engine MODEL.mdla {given} --outdir .",
    }
    write_atomic(folder / "inputs.json", (json.dumps(doc, indent=1) + "\n").encode())
    return folder


def outputs_folder(root: Path, name: str, samples: int) -> Path:
    """Where one sample's output files are: DIR/<name>/, or DIR itself for a run of one input
    whose files are there."""
    sub = root / folder_name(name)
    if sub.is_dir() or samples != 1 or not (root / "output_0.bin").is_file():
        return sub
    return root


def load_outputs(manifest: mdla_runtime.Manifest, root: Path, name: str, samples: int) -> RunResult:
    """One sample's engine output files as a `RunResult` (no timing: latency 0)."""
    folder = outputs_folder(root, name, samples)
    raws, floats = [], []
    for k, spec in enumerate(manifest.outputs):
        path = folder / f"output_{k}.bin"
        dtype = np.dtype(output_dtype(manifest, spec.operand))
        shape = tuple(int(d) for d in manifest.operands[spec.operand].dims)
        want = math.prod(shape) * dtype.itemsize
        if not path.is_file():
            raise WorkbenchError(
                f"--load-outputs: no `{path}` (output {k} `{spec.name}` of input `{name}`); "
                f"run the engine there with --outdir {folder}",
                BAD_INPUT,
            )
        got = path.stat().st_size
        if got != want:
            raise WorkbenchError(
                f"--load-outputs: `{path}` holds {got} bytes; output {k} `{spec.name}` "
                f"{list(shape)} {dtype.name} is {want}: outputs of another model or input?",
                BAD_INPUT,
            )
        raw = np.fromfile(path, dtype=dtype).reshape(shape)
        raws.append(raw)
        floats.append(dequantize(raw, spec, spec.scale, spec.zero_point))
    names = tuple(s.name for s in manifest.outputs)
    return RunResult(floats, raws, (0.0, 0.0), LOADED, names)
