"""`model.postprocess`: a detector's CPU decoding in the manifest. A record survives the writer
and both readers field for field (floats stay floats, `steps` stays optional); its malformed
cases (each key, and a level count that disagrees with the outputs) are in `malformed_cases`
(test_manifest.py and test_manifest_c.py run them in both readers)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mdla_ir import Postprocess
from mdla_runtime import errors, to_bytes
from mdla_runtime.build import engine_path
from mdla_runtime.format.manifest import parse
from mdla_runtime.format.model import postprocess_section
from mdla_runtime.testing import chain_qgraph, malformed_cases, pack, sample_manifest, split

RECORD = Postprocess(
    kind="ssd",
    image_size=(48, 64),
    num_classes=3,
    aspect_ratios=((2.0, 3.0),),  # one level: a regression and a classification output
    scales=(0.25, 0.75),
    box_weights=(10.0, 10.0, 5.0, 5.0),
    box_clip=4.0,
    score_thresh=0.25,
    nms_thresh=0.5,
    topk_candidates=7,
    detections_per_img=5,
    clip=False,
    order="classification_first",
    steps=(8,),
)


def _with(section: Any) -> bytes:
    """A two-output manifest (chain_qgraph's output and its first op's) with `section`."""
    graph = chain_qgraph()
    graph = graph.with_(outputs=(graph.ops[0].outputs[0], *graph.outputs))
    header, data = split(to_bytes(graph))
    header["model"]["postprocess"] = section
    return pack(header, data)


def _c_check(blob: bytes, tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "m.mdla"
    path.write_bytes(blob)
    proc = subprocess.run(
        [str(engine_path()), str(path), "--check", "--json"], capture_output=True, text=True
    )
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


@pytest.mark.parametrize("record", [RECORD, dataclasses.replace(RECORD, steps=None)])
def test_a_record_reads_back_in_both_readers(record: Postprocess, tmp_path: Path) -> None:
    blob = _with(postprocess_section(record))
    assert parse(blob).provenance.postprocess == record
    assert _c_check(blob, tmp_path)["ok"] is True


def test_the_section_writes_every_key_and_steps_only_when_set() -> None:
    section = postprocess_section(RECORD)
    assert section["aspect_ratios"] == [[2.0, 3.0]]
    assert section["steps"] == [8]
    assert "steps" not in postprocess_section(dataclasses.replace(RECORD, steps=None))
    # an int-valued weight is still written as a float, which the readers require
    ints = dataclasses.replace(RECORD, box_weights=(10, 10, 5, 5), box_clip=4)
    assert parse(_with(postprocess_section(ints))).provenance.postprocess == RECORD


def test_a_manifest_without_the_key_has_no_postprocess() -> None:
    assert parse(sample_manifest()).provenance.postprocess is None


def test_every_check_has_a_malformed_case() -> None:
    """Each key of the section is broken by at least one case (so both readers test it)."""
    fields = {c.field for c in malformed_cases() if c.field.startswith("model.postprocess")}
    keys = {f.split(".")[2].split("[")[0] for f in fields if f.count(".") >= 2}
    assert keys == set(postprocess_section(RECORD)) | {"anchors"}  # anchors: the unknown key
    bad = _with({**postprocess_section(RECORD), "scales": [0.5]})
    with pytest.raises(errors.BadHeaderError, match="expected 2 values, got 1"):
        parse(bad)


def test_the_level_count_must_match_the_outputs(tmp_path: Path) -> None:
    two = _with(
        {
            **postprocess_section(RECORD),
            "aspect_ratios": [[2.0], [3.0]],
            "scales": [0.1, 0.2, 0.3],
            "steps": [8, 16],
        }
    )
    with pytest.raises(
        errors.CountMismatchError, match=r"2 feature level.* from 4 outputs; the model has 2"
    ):
        parse(two)
    err = _c_check(two, tmp_path)["error"]
    assert (err["kind"], err["field"]) == ("CountMismatch", "outputs")
