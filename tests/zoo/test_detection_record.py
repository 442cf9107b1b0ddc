"""`SSDDecoder` <-> the manifest's `Postprocess` record, and the head-output `order` it names."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mdla_zoo.detection import DECODERS, SSDDecoder, detect
from mdla_zoo.errors import ZooError

DEC = SSDDecoder((32, 32), 3, ((2.0,), (2.0, 3.0)), (0.3, 0.6, 0.9), score_thresh=0.2)


def test_record_and_back_is_the_same_decoder() -> None:
    for dec in (DEC, *DECODERS.values()):
        record = dec.record()
        assert record.kind == "ssd"
        assert SSDDecoder.of(record) == dec
    with pytest.raises(ZooError, match="postprocess kind `yolo`"):
        SSDDecoder.of(dataclasses.replace(DEC.record(), kind="yolo"))


def test_classification_first_reads_the_other_group_first() -> None:
    rng = np.random.default_rng(0)
    regs = [rng.normal(size=(1, 16, 8, 8)), rng.normal(size=(1, 24, 4, 4))]
    clss = [rng.normal(size=(1, 12, 8, 8)) * 3, rng.normal(size=(1, 18, 4, 4)) * 3]
    want = detect(DEC, [*regs, *clss])
    assert len(want) > 0
    swapped = dataclasses.replace(DEC, order="classification_first")
    got = detect(swapped, [*clss, *regs])
    np.testing.assert_array_equal(got.boxes, want.boxes)
    np.testing.assert_array_equal(got.labels, want.labels)
    with pytest.raises(ZooError, match="SSD level 0"):  # the default order misreads them
        detect(DEC, [*clss, *regs])
