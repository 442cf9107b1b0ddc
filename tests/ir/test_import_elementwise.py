"""Hand-written elementwise arithmetic on both import paths: `-x`, `abs`, `pow` with a constant
exponent, `square`, and `zeros_like`/`ones_like`/`full_like`; each is ops the IR has (MUL,
RELU + ADD, SQRT/RSQRT/DIV, a constant) and the float IR computes what torch does. Exponents
with no such form are refused by name, with the ones that map."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F  # noqa: N812

import mdla_ir
from mdla_ir import OpKind, UnsupportedError
from tests.ir.both_paths import PATHS, Apply, Fn, computes_like_torch

CASES: list[tuple[Fn, dict[OpKind, int]]] = [
    (lambda y: -y, {OpKind.MUL: 1}),
    (lambda y: torch.neg(y) + y.neg(), {OpKind.MUL: 2, OpKind.ADD: 1}),
    (lambda y: y.abs(), {OpKind.MUL: 1, OpKind.RELU: 2, OpKind.ADD: 1}),
    (lambda y: torch.abs(y), {OpKind.MUL: 1, OpKind.RELU: 2, OpKind.ADD: 1}),
    (lambda y: y.pow(2), {OpKind.MUL: 1}),
    (lambda y: y**3, {OpKind.MUL: 2}),
    (lambda y: torch.pow(y, 4), {OpKind.MUL: 2}),
    (lambda y: torch.square(y) + y.square(), {OpKind.MUL: 2, OpKind.ADD: 1}),
    (lambda y: torch.relu(y) ** 0.5, {OpKind.RELU: 1, OpKind.SQRT: 1}),
    (lambda y: (torch.relu(y) + 1.0).pow(-0.5), {OpKind.RELU: 1, OpKind.ADD: 1, OpKind.RSQRT: 1}),
    (
        lambda y: (torch.relu(y) + 1.0).pow(-1),
        {OpKind.RELU: 1, OpKind.ADD: 1, OpKind.RECIPROCAL: 1},
    ),
    (
        lambda y: torch.reciprocal(y.relu() + 1.0),
        {OpKind.RELU: 1, OpKind.ADD: 1, OpKind.RECIPROCAL: 1},
    ),
    (lambda y: y + torch.zeros_like(y), {OpKind.ADD: 1}),
    (lambda y: y * torch.ones_like(y) + torch.full_like(y, 0.25), {OpKind.MUL: 1, OpKind.ADD: 1}),
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("fn", "kinds"), CASES)
def test_elementwise_arithmetic_imports_exactly(
    fn: Fn, kinds: dict[OpKind, int], path: str
) -> None:
    torch.manual_seed(0)
    graph = computes_like_torch(Apply(fn).eval(), torch.randn(1, 3, 6, 8), path, 1e-6, False)
    got = {k: n for k, n in graph.count().items() if k != "CONV_2D"}
    assert got == {k.name: n for k, n in kinds.items()}


@pytest.mark.parametrize("path", PATHS)
def test_an_exponent_without_a_form_is_refused_with_those_that_map(path: str) -> None:
    module = Apply(lambda y: torch.relu(y) ** 1.5).eval()
    with pytest.raises(UnsupportedError) as info:
        mdla_ir.from_torch(module, (torch.randn(1, 3, 6, 8),), path=path)
    assert "pow with exponent 1.5" in str(info.value)
    assert "exponents 1, 2, 3, 4, 0.5, -0.5 and -1 map" in str(info.value)


REFUSED_POWERS: list[tuple[Fn, str]] = [
    (lambda y: y ** y.relu(), "pow with a tensor exponent"),
    (lambda y: 2.0**y, "a number raised to a tensor's power"),
]


@pytest.mark.parametrize(("fn", "why"), REFUSED_POWERS)
def test_a_power_of_another_form_is_refused_with_the_exponents_that_map(fn: Fn, why: str) -> None:
    """(fx: export names these ATen overloads, pow.Tensor_Tensor and pow.Scalar, unmapped)"""
    with pytest.raises(UnsupportedError) as info:
        mdla_ir.from_torch(Apply(fn).eval(), (torch.randn(1, 3, 6, 8),), path="fx")
    assert why in str(info.value)
    assert "exponents 1, 2, 3, 4, 0.5, -0.5 and -1 map" in str(info.value)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("p", [1.0, 2.0])
def test_normalize_divides_by_the_clamped_norm(path: str, p: float) -> None:
    torch.manual_seed(0)
    module = Apply(lambda y: F.normalize(y, p=p, dim=1)).eval()
    graph = computes_like_torch(module, torch.randn(1, 3, 6, 8), path, 1e-5, False)
    kinds = graph.count()
    assert kinds["REDUCE_SUM"] == 1
    assert kinds["DIV"] == 1
    assert kinds.get("SQRT", 0) == (1 if p == 2.0 else 0)


def test_normalize_with_another_p_is_refused_with_those_that_map() -> None:
    module = Apply(lambda y: F.normalize(y, p=3.0)).eval()
    with pytest.raises(
        UnsupportedError, match=r"F.normalize with p=3.*p=2 \(the default\) and p=1"
    ):
        mdla_ir.from_torch(module, (torch.randn(1, 3, 6, 8),), path="fx")
