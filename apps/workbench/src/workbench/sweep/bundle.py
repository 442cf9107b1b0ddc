"""What a sweep task needs, by content: the model spec's file, the weights, a calibration
folder's files and the held-out inputs travel as bytes (a Ray worker on another machine has
none of the driver's paths); `materialize` writes them into a task's own directory.

    bundle = bundle_of(options, holdout)
    local = materialize(options, bundle, tmp)      # the options, pointing into tmp
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from mdla_compile import CompileOptions
from mdla_compile.calibration import SOURCES
from mdla_compile.inputs import input_files

Files = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class Holdout:
    """The held-out inputs: files (images, .npy/.npz), scikit-image sample names, or a count
    of random inputs drawn with a seed the calibration's random inputs never use."""

    files: Files = ()
    samples: tuple[str, ...] = ()
    random: int = 0

    @property
    def size(self) -> int:
        return len(self.files) + len(self.samples) + self.random


@dataclass(frozen=True)
class Bundle:
    spec_file: tuple[str, bytes, str] | None  # file name, its bytes, the rest (":build(...)")
    weights: tuple[str, bytes] | None
    calib: Files  # a --calib folder's first --count files
    holdout: Holdout

    def digest(self) -> str:
        """sha256 over every byte a task reads (the key of its row includes it)."""
        h = hashlib.sha256()
        for name, data in self._parts():
            h.update(f"{name}\0{len(data)}\0".encode())
            h.update(data)
        return h.hexdigest()

    def _parts(self) -> list[tuple[str, bytes]]:
        parts = [("spec:" + s[0] + s[2], s[1]) for s in [self.spec_file] if s is not None]
        parts += [("weights", w[1]) for w in [self.weights] if w is not None]
        parts += [("calib:" + n, d) for n, d in self.calib]
        parts += [("holdout:" + n, d) for n, d in self.holdout.files]
        meta = {"samples": list(self.holdout.samples), "random": self.holdout.random}
        return [*parts, ("holdout", json.dumps(meta).encode())]


def read_files(paths: list[Path]) -> Files:
    return tuple((p.name, p.read_bytes()) for p in paths)


def spec_file(model: str) -> tuple[str, bytes, str] | None:
    """A spec naming a file (`net.py:build`, `net.pt2`): the file and the rest of the spec."""
    path, sep, rest = model.partition(":")
    if Path(path).is_file():
        return Path(path).name, Path(path).read_bytes(), sep + rest
    return None


def bundle_of(options: CompileOptions, holdout: Holdout) -> Bundle:
    """The bytes `options` and `holdout` name (a spec that is a torchvision name ships none)."""
    assert isinstance(options.model, str)
    weights = Path(options.weights) if options.weights else None
    calib: Files = ()
    if isinstance(options.calib, str) and options.calib not in SOURCES:
        calib = read_files(input_files(options.calib)[: options.count])
    return Bundle(
        spec_file(options.model),
        (weights.name, weights.read_bytes()) if weights else None,
        calib,
        holdout,
    )


def _write(folder: Path, files: Files) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files:
        (folder / name).write_bytes(data)
    return folder


def materialize(options: CompileOptions, bundle: Bundle, tmp: Path) -> CompileOptions:
    """`options` with their files written under `tmp` (the spec file keeps its name)."""
    changes: dict[str, object] = {}
    if bundle.spec_file is not None:
        name, data, rest = bundle.spec_file
        _write(tmp / "spec", ((name, data),))
        changes["model"] = str(tmp / "spec" / name) + rest
    if bundle.weights is not None:
        _write(tmp / "weights", (bundle.weights,))
        changes["weights"] = str(tmp / "weights" / bundle.weights[0])
    if bundle.calib:
        changes["calib"] = str(_write(tmp / "calib", bundle.calib))
    return dataclasses.replace(options, **changes)  # type: ignore[arg-type]
