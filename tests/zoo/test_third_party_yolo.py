"""ultralytics YOLO (pinned in requirements-dev.txt), built from the model YAMLs its package
ships with random weights, imported through torch.export as brought (the Detect head's anchor
grid folds to constants), and placed whole: the backbone, neck and head convolutions on the
MDLA, the box decode (views, DFL, dist2bbox, sigmoid, concatenations) on the CPU as ONE
partition named by patterns over the head's op names. Those that do not place yet are strict
xfails naming why."""

from __future__ import annotations

import fnmatch

import numpy as np
import pytest
import torch

import mdla_ir
import mdla_legalize
from mdla_ir.importer import import_torch
from mdla_ir.partitions import CPU
from tests.models_third_party import build
from tests.zoo.emulated import compile_auto

TARGET = mdla_legalize.load_target("mdla3.5")
DECODE = ("view", "cat", "dfl", "chunk", "sub", "add", "div", "mul", "sigmoid")


def decode_patterns(head: str) -> list[str]:
    """`--cpu` patterns for a Detect head's decode: every op of `head` but its convolutions."""
    return [f"{head}.{name}*" for name in DECODE]


def _place(
    name: str, extra: tuple[str, ...] = ()
) -> tuple[torch.nn.Module, np.ndarray, mdla_legalize.Placement]:
    """The module, its first output (decoded detections) on a random input, its placement."""
    module, (x,) = build(f"yolo:{name}", side=160)
    with torch.no_grad():
        want = module(x)[0]
    want = want[0] if isinstance(want, tuple) else want  # Segment: (detections, protos)
    head = f"model.{len(module.model) - 1}"  # type: ignore[arg-type]
    imported = import_torch(module, (x,), name=name, path="auto")
    assert imported.path == "export"
    device = mdla_legalize.rewrite(imported.graph, TARGET, "mtk-mdla")
    patterns = [
        p for p in decode_patterns(head) if any(fnmatch.fnmatch(o.name, p) for o in device.ops)
    ]
    placed = mdla_legalize.place(imported.graph, TARGET, "mtk-mdla", [*patterns, *extra])
    (got,) = mdla_ir.run_float(placed.graph, [x.numpy()])[:1]
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-3)
    return module, got, placed


@pytest.mark.parametrize("name", ["yolov8n", "yolov8n-seg"])
def test_yolo_places_its_decode_on_the_cpu_as_one_partition(name: str) -> None:
    module, got, placed = _place(name)
    assert [p.device for p in placed.partitions] == ["mtk-mdla", CPU]
    head = f"model.{len(module.model) - 1}."  # type: ignore[arg-type]
    assert all(o.name.startswith(head) for o in placed.ops if o.device == CPU)
    assert got.shape == (1, 4 + 80 + (32 if "seg" in name else 0), 525)  # 20² + 10² + 5²


def test_yolo11n_places_its_attention_and_decode_on_the_cpu() -> None:
    """C2PSA's attention (q @ k: BATCH_MATMUL of two activations) runs on the CPU's int8
    BATCH_MATMUL; the rest of the backbone on the NPU, the decode on the CPU."""
    _module, _got, placed = _place("yolo11n", ("model.10.m.0.attn.*",))
    assert [p.device for p in placed.partitions] == ["mtk-mdla", CPU, "mtk-mdla", CPU]
    on_cpu = [o for o in placed.ops if o.device == CPU]
    assert sum(o.kind == "BATCH_MATMUL" for o in on_cpu) == 2
    assert all(o.name.startswith(("model.10.m.0.attn.", "model.23.")) for o in on_cpu)


def test_yolo_pose_decodes_its_keypoints_and_runs_bit_exact() -> None:
    """The keypoint decode writes into strided views (`y[:, 2::3] = y[:, 2::3].sigmoid()`):
    export's slice_scatter is a CONCATENATION of the untouched slices and the source, and the
    sigmoid joins the others through a requantizing MUL. With --cpu auto the whole model
    compiles, its first output carries the 17 x 3 keypoint values per anchor, and the emulator
    equals run_int8 bit for bit."""
    compiled, outputs = compile_auto("yolo:yolov8n-pose", side=64)
    assert outputs[0].shape == (1, 4 + 1 + 17 * 3, 8 * 8 + 4 * 4 + 2 * 2)
    names = " ".join(o.name for o in compiled.device_graph.ops)
    assert "__setitem.interleaved" in names
    assert ".requantize" in names


def test_yolo_detect_compiles_as_brought_with_cpu_auto_bit_exact() -> None:
    """Detect's output joins its boxes in pixels with its class probabilities: `--cpu auto`
    places that concatenation on the CPU (one int8 scale holds neither both), where it joins
    them in float32; the rest compiles, and the emulator equals run_int8 bit for bit."""
    compiled, outputs = compile_auto("yolo:yolov8n", side=64)
    assert outputs[0].shape == (1, 84, 8 * 8 + 4 * 4 + 2 * 2)
    floats = [o for o in compiled.qgraph.ops if o.kind.name == "CONCATENATION_F32"]
    assert floats
    assert {o.name for o in floats} <= set(compiled.qgraph.provenance.cpu_ops)
