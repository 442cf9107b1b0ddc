"""The models of the earlier issues, legalized once per test session, and inputs for them.

efficientnet_lite0 has its real weights and is fed the scikit-image sample photos; the
torchvision models are randomly initialized (seed 0) with BatchNorm statistics set on random
data; the LipNet front-end (lipread's, the one LipNet definition) runs on a 4-frame clip.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import skimage.data
import torch

import mdla_ir
import mdla_legalize
from lipread.model import frontend
from mdla_zoo import Model, load_model, recalibrate_batchnorm

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


def load(spec: str, frames: int) -> Model:
    """A zoo model; `lipnet_frontend` is lipread's front-end (seed 0) on a `frames`-frame clip."""
    if spec != "lipnet_frontend":
        return load_model(spec)
    torch.manual_seed(0)
    module, example = frontend(frames)
    return Model(spec, module, (example,))


@cache
def legalized(spec: str) -> tuple[mdla_ir.Graph, Any]:
    model = load(spec, frames=4)
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
