"""Where `workbench run` writes, and what it writes besides pictures: `--out-dir`,
`--save-outputs`.

Every file `run` writes goes into one folder: `--out-dir DIR`, by default `mdla-out/` in the
working directory (created on first use); never beside an input photo, so an input folder is
left as it was. A picture is named `<image stem>.<model>.<what>.png`; its PNG carries the
workbench's mark (`mdla_compile.written`), so a folder of inputs skips it and a name never
grows by re-running on it.

`--save-outputs FILE.npz` holds, for input k (of the names in `inputs`) and each model
output `name` (in the model's layout):

    k/name              float32, dequantized: scale * (int8 - zero_point)
    k/name/int8         the raw int8 (absent for a float32 or int16 output)
    k/name/int16        the raw int16 of an int16 (16x8, zero point 0) output
    k/name/scale        float32 scalar;   k/name/zero_point  int32 scalar
    k/name/fp32         the FP32 model's output, when `run` computed it

    z = np.load("out.npz"); z["inputs"][0], z["0/logits"]
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

import mdla_runtime
from mdla_compile.written import MARK
from mdla_runtime.atomic import write_atomic
from workbench.errors import BAD_INPUT, WorkbenchError

Array = np.ndarray[Any, Any]
DEFAULT_DIR = "mdla-out"
VERSION = 1  # of the --save-outputs layout above


def out_dir(option: Path | None) -> Path:
    """`--out-dir`, or `mdla-out/` in the working directory, checked before any run (exit 1
    when it is a file or cannot be written); made when the first file is written into it, so a
    run that writes nothing leaves no folder."""
    folder = option if option is not None else Path(DEFAULT_DIR)
    existing = next(p for p in (folder, *folder.absolute().parents) if p.exists())
    why = ""
    if existing == folder and not folder.is_dir():
        why = "it is a file"
    elif not existing.is_dir():
        why = f"`{existing}` is a file"
    elif not os.access(existing, os.W_OK | os.X_OK):
        why = f"`{existing}` is not writable"
    if why:
        raise WorkbenchError(
            f"cannot use `{folder}` as the output folder: {why}; give --out-dir a folder you "
            "can write",
            BAD_INPUT,
        )
    return folder


def check_save(path: Path) -> None:
    """`--save-outputs` names a file in a folder that exists and can be written (exit 1 now,
    before any run, not after them all)."""
    where = path.parent if str(path.parent) else Path(".")
    why = ""
    if path.is_dir():
        why = "it is a folder; name a .npz file"
    elif not where.is_dir():
        why = f"folder `{where}` does not exist"
    elif not os.access(where, os.W_OK | os.X_OK):
        why = f"folder `{where}` is not writable"
    if why:
        raise WorkbenchError(f"cannot write --save-outputs `{path}`: {why}", BAD_INPUT)


def picture(folder: Path, image: str, model: str, what: str) -> Path:
    """`<image stem>.<model>.<what>.png` in `folder` (`image` a file or a sample's name; any
    character outside letters, digits, `.`, `-`, `_` becomes `_`); `folder` is made if new."""
    folder.mkdir(parents=True, exist_ok=True)
    where = Path(image)
    stem = where.stem if where.suffix else where.name
    return folder / (".".join(re.sub(r"[^\w.-]", "_", p) for p in (stem, model, what)) + ".png")


def model_layout(raw: Array, spec: mdla_runtime.IOSpec) -> Array:
    """A device-layout output in the model's layout (the boundary perm undone)."""
    if spec.perm:
        raw = raw.reshape((1,) * (len(spec.perm) - raw.ndim) + raw.shape)
        raw = raw.transpose(np.argsort(spec.perm))
    return np.ascontiguousarray(raw.reshape(spec.model_shape))


@dataclass
class Saved:
    """The outputs of one `run`, for `--save-outputs` (module docstring)."""

    manifest: mdla_runtime.Manifest
    arrays: dict[str, Array] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)

    def add(
        self,
        image: str,
        outputs: Sequence[Array],
        raw: Sequence[Array],
        floats: Sequence[Array] | None,
    ) -> None:
        """One input's dequantized, raw and (when computed) FP32 outputs."""
        k = len(self.inputs)
        self.inputs.append(image)
        for i, spec in enumerate(self.manifest.outputs):
            key = f"{k}/{spec.name or f'output{i}'}"
            self.arrays[key] = np.asarray(outputs[i], np.float32)
            if i < len(raw) and raw[i].dtype in (np.int8, np.int16):
                self.arrays[f"{key}/{raw[i].dtype.name}"] = model_layout(raw[i], spec)
                self.arrays[f"{key}/scale"] = np.asarray(spec.scale, np.float32)
                self.arrays[f"{key}/zero_point"] = np.asarray(spec.zero_point, np.int32)
            if floats is not None:
                self.arrays[f"{key}/fp32"] = np.asarray(floats[i], np.float32)

    def write(self, path: Path) -> None:
        """The .npz at `path`, atomically, marked as the workbench's."""
        arrays: dict[str, Array] = {
            MARK: np.asarray(VERSION, np.int32),
            "inputs": np.asarray(self.inputs, str),
            **self.arrays,
        }
        buf = io.BytesIO()
        np.savez(buf, **cast(dict[str, Any], arrays))  # keys are not savez keywords
        try:
            write_atomic(path, buf.getvalue())
        except OSError as exc:
            raise WorkbenchError(
                f"cannot write --save-outputs `{path}`: {exc.strerror or exc}", BAD_INPUT
            ) from None
