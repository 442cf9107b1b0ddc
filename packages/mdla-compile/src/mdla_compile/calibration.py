"""Calibration inputs: `samples` (scikit-image photos), `random` (uniform [-1, 1]), `auto`
(samples for a model that takes photos, else random) or a directory of images and .npy/.npz
arrays, read one at a time as quantize reaches them.

    calib = calibration_inputs("photos/", source, count=32)     # a Sequence of input lists
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mdla_compile.errors import CompileError, OptionError
from mdla_compile.images import SAMPLES, read_image
from mdla_compile.inputs import LazyInputs, input_files
from mdla_compile.source import Source, prepare_image

Array = np.ndarray[Any, Any]
SOURCES = ("samples", "random", "auto")  # and any directory


def calibration_inputs(
    calib: str | Sequence[list[Array]], source: Source, count: int, seed: int = 0
) -> Sequence[list[Array]]:
    """The first `count` inputs of `calib` for `source` (a directory's files by name, each
    read when quantize reaches it: `inputs.LazyInputs`; inputs given as arrays as they are)."""
    if count < 1:
        raise OptionError(f"--count must be at least 1, got {count}")
    if not isinstance(calib, str):
        if not calib:
            raise CompileError(f"no calibration inputs given for `{source.spec}`")
        return list(calib)[:count]
    if calib == "auto":
        calib = "samples" if source.preprocess else "random"
    if calib == "random":
        rng = np.random.default_rng(seed)
        return [
            [rng.uniform(-1, 1, shape).astype(np.float32) for shape in source.input_shapes]
            for _ in range(count)
        ]
    if calib != "samples":
        files = input_files(calib)[:count]
        prep = (lambda image: prepare_image(source, image)) if source.takes_images else None
        return LazyInputs(files, source.input_shapes, prep, source.spec, source.graph.inputs)
    if not source.takes_images:
        raise CompileError(
            f"model `{source.spec}` records no image preprocessing: give --preset (imagenet, "
            "tf, minus1to1, zero1) or --mean/--std to calibrate it on photos, or --calib "
            "random, or --calib DIR of .npy/.npz inputs"
        )
    return [[prepare_image(source, read_image(i))] for i in list(SAMPLES)[:count]]
