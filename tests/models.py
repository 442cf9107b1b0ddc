"""The models of the earlier issues, legalized once per test session, and inputs for them.

efficientnet_lite0 has its real weights and is fed the scikit-image sample photos; the
torchvision models are randomly initialized (seed 0) with BatchNorm statistics set on random
data; the LipNet front-end runs on a 4-frame clip.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import skimage.data

import mdla_ir
import mdla_legalize
from mdla_ir.zoo import recalibrate_batchnorm

MODELS = [
    "efficientnet_lite0",
    "mobilenet_v2",
    "resnet18",
    "efficientnet_b0",
    "squeezenet1_1",
    "lipnet_frontend",
]
PHOTOS = [
    skimage.data.chelsea,
    skimage.data.coffee,
    skimage.data.rocket,
    skimage.data.camera,
    skimage.data.astronaut,
    lambda: skimage.data.stereo_motorcycle()[0],
]


@cache
def legalized(spec: str) -> tuple[mdla_ir.Graph, Any]:
    if spec == "lipnet_frontend":
        model = mdla_ir.load_model(spec, frames=4)
    else:
        model = mdla_ir.load_model(spec)
    if spec in ("mobilenet_v2", "resnet18", "efficientnet_b0"):
        recalibrate_batchnorm(model.module)
    graph = mdla_ir.from_torch(model.module, model.example_inputs, name=spec)
    return mdla_legalize.legalize(graph, mdla_legalize.load_target("mdla3.5")), model


def inputs_for(spec: str, n: int, seed: int) -> list[list[np.ndarray]]:
    graph, model = legalized(spec)
    if model.preprocess is not None:
        return [[model.prepare(PHOTOS[(seed + i) % len(PHOTOS)]())] for i in range(n)]
    rng = np.random.default_rng(seed)
    shape = graph.model_shape(graph.inputs[0])
    return [[rng.uniform(0.0, 1.0, shape).astype(np.float32)] for _ in range(n)]
