"""Int16 activations (`QuantConfig.a16`): the names are validated against the graph, an op
without a 16x8 kernel is refused by name, and the choice is recorded in the provenance."""

from __future__ import annotations

import pytest

from mdla_quant.config import QuantConfig
from mdla_quant.errors import QuantError
from mdla_quant.quantize import quantize
from tests.quant.test_quantize import net, samples


def test_a16_defaults_to_none_and_takes_a_list() -> None:
    assert QuantConfig().a16 == ()
    assert QuantConfig(a16=["c", "c2"]).a16 == ("c", "c2")  # type: ignore[arg-type]
    assert QuantConfig(a16=("c",)).record().a16 == ("c",)


@pytest.mark.parametrize(
    ("a16", "words"),
    [("c", "sequence of tensor names"), (("c", "c"), "once"), (("",), "none empty")],
)
def test_a16_config_refuses_bad_names(a16: object, words: str) -> None:
    with pytest.raises(QuantError, match=words):
        QuantConfig(a16=a16)  # type: ignore[arg-type]


def test_quantize_refuses_an_unknown_tensor() -> None:
    with pytest.raises(QuantError, match="`nope`, which is not an activation of graph"):
        quantize(net(), samples(2), QuantConfig(a16=("nope",)))


def test_quantize_refuses_a_constant() -> None:
    with pytest.raises(QuantError, match="`w`, which is not an activation"):
        quantize(net(), samples(2), QuantConfig(a16=("w",)))


def test_quantize_refuses_an_op_without_a_16x8_kernel() -> None:
    with pytest.raises(QuantError, match=r"`sig` \(LOGISTIC\) has no int16 \(16x8\) kernel"):
        quantize(net(), samples(2), QuantConfig(a16=("sig",)))
