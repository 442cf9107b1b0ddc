"""bench/accuracy_mtcnn.py's inputs and output naming (the table itself is a benchmark, not a
test): its calibration set is the app's, its held-out set shares no scene or crop with it, and
each graph output is named after the torch module output it equals."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import mdla_ir
import mdla_legalize
from lipread.mtcnn_npu import CALIB_FRAMES, CROP_SCENES, _batches, _calibration
from mdla_zoo import load_model
from tests.scripts import load_script

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCH))  # accuracy_mtcnn.py imports its sibling accuracy.py
    try:
        yield load_script("bench_accuracy_mtcnn", BENCH / "accuracy_mtcnn.py")
    finally:
        sys.path.remove(str(BENCH))


def test_calibration_set_is_the_apps(bench: ModuleType) -> None:
    frames, r_in, o_in = _calibration(bench.PNET_SIZE)
    mine = bench.face_set(bench.CALIB_SPEAKER, CROP_SCENES, bench.CALIB_SEED)
    assert len(frames) == CALIB_FRAMES < CROP_SCENES
    assert (
        len(mine.onet) > 200
    )  # the regression outputs' ranges need many crops == len(o_in) == len(mine.rnet) == len(r_in)
    for a, b in zip(mine.onet, o_in, strict=True):
        np.testing.assert_array_equal(a, b[None])
    for a, b in zip(mine.rnet[: len(r_in)], r_in, strict=True):
        np.testing.assert_array_equal(a, b[None])
    for a, f in zip(mine.frames[:CALIB_FRAMES], frames, strict=True):
        np.testing.assert_array_equal(a, ((f - 127.5) * 0.0078125).transpose(2, 0, 1)[None])
    assert mine.on_face.count(False) > 0  # both kinds of crop


def test_calibration_batches_hold_every_crop_once_at_the_batch_size() -> None:
    xs = [np.full((2,), k, np.float32) for k in range(7)]
    batches = _batches(xs, 3)
    assert [b[0].shape for b in batches] == [(3, 2)] * 3
    seen = np.concatenate([b[0][:, 0] for b in batches])
    np.testing.assert_array_equal(seen, [0, 1, 2, 3, 4, 5, 6, 0, 1])  # the last filled up
    assert len(_batches(xs, 64)) == 1


def test_held_out_shares_no_scene_or_crop(bench: ModuleType) -> None:
    calib, held = bench.inputs(6, 6)
    assert not set(calib.speakers) & set(held.speakers)
    for kind in ("frames", "onet", "rnet"):
        seen = {x.tobytes() for x in getattr(calib, kind)}
        assert len(seen) == len(getattr(calib, kind))
        assert not any(x.tobytes() in seen for x in getattr(held, kind)), kind
    with pytest.raises(ValueError, match=r"1\.\.500"):
        bench.inputs(bench.MAX_CALIB + 1, 1)


def test_outputs_are_named_after_the_module(bench: ModuleType) -> None:
    model = load_model("mtcnn_onet")
    target = mdla_legalize.load_target("mdla3.5")
    graph = mdla_legalize.legalize(mdla_ir.from_torch(model.module, model.example_inputs), target)
    x = bench.face_set(bench.HELD_SPEAKER, 1, bench.HELD_SEED).onet[0]
    found = bench.roles(graph, mdla_ir.run_float(graph, [x]))
    assert found == {"box": 0, "landmarks": 1, "prob": 2}  # ONet.forward returns b, c, a
    bench.check_order(model.module, graph, x)
    with pytest.raises(RuntimeError, match=r"graph output 0 \(dense6_2\) is not"):
        bench.check_order(lambda t: model.module(t)[::-1], graph, x)


def test_cli_checks_mtcnn_sizes_and_techniques() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        accuracy = load_script("bench_accuracy", BENCH / "accuracy.py")
        with pytest.raises(SystemExit) as err:
            accuracy.main(["--mtcnn", "--calib", "501"])
        assert err.value.code == 2
        with pytest.raises(SystemExit) as err:
            accuracy.main(["--mtcnn", "--only", "none,nope"])
        assert err.value.code == 2
    finally:
        sys.path.remove(str(BENCH))


def test_rows_follow_the_face_decisions(bench: ModuleType) -> None:
    rng = np.random.default_rng(0)
    prob, box = rng.random((2, 2, 3, 5)), rng.random((2, 4, 3, 5))
    p, r = bench._face_p(prob), bench.rows([box[:1], box[1:]])
    assert r.shape == (30, 4)
    for n, i, j in ((0, 0, 0), (0, 2, 1), (1, 1, 4)):
        k = int(np.flatnonzero(p == prob[n, 1, i, j])[0])
        np.testing.assert_array_equal(r[k], box[n, :, i, j])
    flat = rng.random((3, 10))
    np.testing.assert_array_equal(bench.rows([flat]), flat)
    assert bench.sqnr(np.ones(8), np.full(8, 1.1)) == pytest.approx(20.0)
