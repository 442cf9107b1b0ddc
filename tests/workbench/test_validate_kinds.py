"""`workbench validate`'s agreement metric follows what each output is: top-1 for a [1, K]
classifier, per-pixel argmax agreement for a class map (`dense.is_class_map`), cosine and SQNR
alone for anything else (a detector's head maps): never a "top-1" over a flattened map."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import mdla_compile
import mdla_ir
import mdla_quant
import mdla_runtime
from mdla_compile import kinds
from mdla_ir.provenance import BOXES
from mdla_zoo.detection import DECODERS
from workbench import images as imgs
from workbench import pipeline, validation
from workbench.cli import app
from workbench.validation import CLASS_MAP, CLASSIFIER, TENSOR, matches

Array = np.ndarray[Any, Any]
HERE = Path(__file__).parent
SEG = f"{HERE / 'seg_model.py'}:segmenter"
SSD = f"{HERE / 'ssd_model.py'}:detector"


@pytest.mark.parametrize(
    ("shape", "kind"),
    [
        ((1, 1000), CLASSIFIER),
        ((1, 2), CLASSIFIER),
        ((1, 1), TENSOR),  # one score: nothing to rank
        ((1, 21, 64, 64), CLASS_MAP),
        ((1, 3, 32, 32), TENSOR),  # below: at another size than the (1, 3, 64, 64) input
        ((1, 24, 8, 8), TENSOR),
        ((1, 1, 64, 64), TENSOR),
    ],
)
def test_output_kinds(shape: tuple[int, ...], kind: str) -> None:
    assert kinds.one_guess(kinds.Out("", shape), (1, 3, 64, 64)) == kind  # compile's guess


def test_matches_per_kind() -> None:
    f = np.zeros((1, 3, 2, 2), np.float32)
    f[0, 1] = 1.0  # every pixel is class 1
    q = f.copy()
    q[0, 2, 0, 0] = 5.0  # one of four pixels moves to class 2
    assert matches(CLASS_MAP, f, q) == 0.75
    assert matches(CLASSIFIER, np.array([[0.1, 0.9]]), np.array([[0.2, 0.8]])) == 1.0
    assert matches(CLASSIFIER, np.array([[0.1, 0.9]]), np.array([[0.9, 0.8]])) == 0.0
    assert matches(TENSOR, f, q) is None


@pytest.fixture(scope="module")
def seg() -> pipeline.Compiled:
    return mdla_compile.compile(mdla_compile.CompileOptions(SEG, count=2))


def test_a_class_map_is_judged_pixel_by_pixel(seg: pipeline.Compiled, tmp_path: Path) -> None:
    x = pipeline.prepare_image(seg.source, imgs.read_image("chelsea"))
    manifest = seg.save(tmp_path / "seg.mdla")
    v = validation.validate(seg, [("chelsea", x)], mdla_runtime.open_target("emu"), manifest)
    assert [o.kind for o in v.outputs] == [CLASS_MAP, TENSOR]  # `out` at 224, `aux` at 112
    f = mdla_ir.run_float(seg.source.graph, [x])
    q = mdla_quant.run_int8(seg.qgraph, [x])
    pixels = float(np.mean(np.argmax(f[0][0], axis=0) == np.argmax(q[0][0], axis=0)))
    assert 0.8 < pixels < 1.0
    assert v.agreement("ref") == pytest.approx(pixels)
    assert v.rows[0].agree["ref"] == pytest.approx(pixels)
    assert v.rows[0].top1 == {}
    assert v.outputs[1].agreement("ref") is None
    cos = float(np.dot(f[1].ravel(), q[1].ravel()) / np.linalg.norm(f[1]) / np.linalg.norm(q[1]))
    assert v.outputs[1].values["ref"].cosine == pytest.approx(cos, rel=1e-6)
    lines = validation.summary_lines(v)
    assert lines[0].startswith(
        f"INT8 reference `out` [1, 5, 224, 224]: per-pixel argmax agreement {100 * pixels:.2f}%"
    )
    assert lines[1].startswith("INT8 reference `aux` [1, 3, 112, 112]: cosine ")
    assert not any("top-1" in line for line in lines)


def test_a_graph_recording_no_kinds_gets_compiles_guess(seg: pipeline.Compiled) -> None:
    """No recorded kinds: the kinds compile would record, a detector's spec included (its
    outputs are boxes, which no shape says)."""
    prov = seg.qgraph.provenance
    bare = dataclasses.replace(prov, output_kinds=())
    unrecorded = dataclasses.replace(seg, qgraph=seg.qgraph.with_(provenance=bare))
    assert validation.graph_kinds(unrecorded) == prov.output_kinds == (CLASS_MAP, TENSOR)
    spec = next(iter(DECODERS))
    detector = dataclasses.replace(bare, spec=spec)
    unrecorded = dataclasses.replace(seg, qgraph=seg.qgraph.with_(provenance=detector))
    assert validation.graph_kinds(unrecorded) == (BOXES, BOXES)


def test_a_detector_is_judged_by_its_boxes_then_cosine_per_output() -> None:
    """The decoded boxes (FP32 against INT8, from all head outputs) on the first output's
    line; cosine and SQNR on each output's."""
    result = CliRunner().invoke(
        app,
        [
            *("validate", SSD, "--arg", "size=48", "--input-shape", "1,3,48,48"),
            *("--count", "2", "--calib", "random"),
        ],
    )
    assert result.exit_code == 0, result.output
    out = result.output.replace("\n", " ")
    assert "top-1" not in out
    assert "pixel" not in out
    lines = [ln for ln in result.output.splitlines() if ln.startswith("INT8 reference `")]
    heads = [ln.split(": ")[0].removeprefix("INT8 reference ") for ln in lines]
    assert heads == [  # two feature levels x (boxes, then classes), each with its own figures
        "`head_regression_head_module_list_0` [1, 16, 12, 12]",
        "`head_regression_head_module_list_1` [1, 24, 6, 6]",
        "`head_classification_head_module_list_0` [1, 16, 12, 12]",
        "`head_classification_head_module_list_1` [1, 24, 6, 6]",
    ]
    assert all(" SQNR " in ln for ln in lines)
    assert re.search(r"\]: box F1 \d+\.\d% \(one-to-one, same class, IoU >= 0\.5\), ", lines[0])
    assert not any("box F1" in ln for ln in lines[1:])
