"""A manifest's quant map: a key QuantRecord gained later reads, when absent, as what files
written before it were compiled with (QUANT_ABSENT), whatever today's default is; a file at
those values is written without the keys, byte for byte as before them."""

from __future__ import annotations

import dataclasses

import pytest

from mdla_ir.provenance import QUANT_ABSENT, QuantRecord
from mdla_runtime.format.model import (
    QUANT_KEYS,
    QUANT_LATE,
    QUANT_REQUIRED,
    model_section,
    provenance,
)
from mdla_runtime.testing import sample_graph


def test_every_optional_key_says_what_its_absence_means() -> None:
    assert set(QUANT_ABSENT) == set(QUANT_KEYS) - set(QUANT_REQUIRED)
    QuantRecord(**QUANT_ABSENT)  # each a valid value of its field


def test_a_file_without_the_later_keys_reads_as_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Even when today's defaults differ from what those files were built with."""
    prov = sample_graph().provenance
    model = model_section("m", prov, "0" * 64)
    for key in QUANT_ABSENT:
        model["quant"].pop(key, None)
    changed = {"equalize": True, "adaround": 5, "weight_scale": "mse"}
    monkeypatch.setattr(
        "mdla_runtime.format.model.QuantRecord",
        lambda **kw: QuantRecord(**{**changed, **kw}),
    )
    quant = provenance(model).quant
    assert quant is not None
    for key, value in QUANT_ABSENT.items():
        assert getattr(quant, key) == value


@pytest.mark.parametrize(
    ("key", "value"), [("weight_scale", "mse"), ("weight_rounding", "balanced")]
)
def test_weight_choices_round_trip_and_are_omitted_at_their_absent_value(
    key: str, value: str
) -> None:
    prov = sample_graph().provenance
    assert prov.quant is not None
    legacy = dataclasses.replace(prov, quant=QuantRecord(**{**_record(prov.quant), **QUANT_ABSENT}))
    assert not set(QUANT_LATE) & set(model_section("m", legacy, "0" * 64)["quant"])
    set_ = dataclasses.replace(legacy, quant=dataclasses.replace(legacy.quant, **{key: value}))
    model = model_section("m", set_, "0" * 64)
    assert model["quant"][key] == value
    back = provenance(model).quant
    assert back is not None
    assert getattr(back, key) == value


def _record(q: QuantRecord) -> dict[str, object]:
    return {f.name: getattr(q, f.name) for f in dataclasses.fields(q)}
