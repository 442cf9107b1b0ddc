"""torch.where and masked_fill on a comparison of one tensor with a number, on both import
paths: each is one WHERE (a table of the compared tensor) and the float IR computes what torch
does; the comparison itself emits no op. A condition or branch of another form is refused by
name, with the forms that map."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import mdla_ir
from mdla_ir import OpKind, UnsupportedError
from mdla_ir.attrs import WhereAttrs
from mdla_ir.functions import where
from tests.ir.both_paths import PATHS, Apply, Fn

CASES: list[tuple[Fn, WhereAttrs]] = [
    (lambda y: torch.where(y > 0, y, 0.1 * y), WhereAttrs("gt", 0.0, 1.0, 0.0, 0.1, 0.0)),
    (
        lambda y: torch.where(y > 0.2, y, torch.zeros_like(y)),
        WhereAttrs("gt", 0.2, 1.0, 0.0, 0.0, 0.0),
    ),
    (lambda y: y.masked_fill(y < 0, 0.0), WhereAttrs("lt", 0.0, 0.0, 0.0, 1.0, 0.0)),
    (  # the number on the left: read as y >= 0.5
        lambda y: torch.where(0.5 <= y, 2.0, y * 3.0),  # noqa: SIM300
        WhereAttrs("ge", 0.5, 0.0, 2.0, 3.0, 0.0),
    ),
    (lambda y: torch.where(y != 0, y, -1.0), WhereAttrs("ne", 0.0, 1.0, 0.0, 0.0, -1.0)),
    (lambda y: y.where(y >= -0.1, 0.0), WhereAttrs("ge", -0.1, 1.0, 0.0, 0.0, 0.0)),
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_where_on_one_tensor_is_one_table(path: str, case: int) -> None:
    fn, attrs = CASES[case]
    torch.manual_seed(case)
    module, x = Apply(fn).eval(), torch.randn(1, 3, 6, 6)
    graph = mdla_ir.from_torch(module, (x,), name="where", path=path)
    kinds = [o.kind for o in graph.ops]
    assert kinds == [OpKind.CONV_2D, OpKind.WHERE]
    got = graph.ops[1].attrs
    assert isinstance(got, WhereAttrs)
    assert got.compare == attrs.compare
    np.testing.assert_allclose(
        [got.threshold, got.then_scale, got.then_offset, got.else_scale, got.else_offset],
        [attrs.threshold, attrs.then_scale, attrs.then_offset, attrs.else_scale, attrs.else_offset],
        rtol=1e-6,
    )
    with torch.no_grad():
        want = module(x).numpy()
    np.testing.assert_allclose(mdla_ir.run_float(graph, [x.numpy()])[0], want, atol=1e-6)


def test_a_value_equal_to_the_threshold_is_neither_greater_nor_less() -> None:
    xs = np.array([-0.5, 0.25, 0.2500001, 1.0])
    gt = where(xs, WhereAttrs("gt", 0.25, 1.0, 0.0, 0.0, 9.0))
    ge = where(xs, WhereAttrs("ge", 0.25, 1.0, 0.0, 0.0, 9.0))
    np.testing.assert_array_equal(gt, [9.0, 9.0, xs[2], 1.0])
    np.testing.assert_array_equal(ge, [9.0, 0.25, xs[2], 1.0])


REFUSED: list[tuple[Fn, str]] = [
    (lambda y: (y > 0) * y, "comparison used as a tensor"),
    (lambda y: (y > 0).float() * y, "is `torch.where(x > t, x, 0.0)`"),
    (lambda y: torch.where(y > y.mean(), y, 0.0), "broadcasts"),
    (lambda y: torch.where(y[:, :1] > 0, y, 0.0), "broadcasts"),
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("case", range(len(REFUSED)))
def test_other_forms_are_refused_with_the_forms_that_map(path: str, case: int) -> None:
    fn, why = REFUSED[case]
    with pytest.raises(UnsupportedError) as info:
        mdla_ir.from_torch(Apply(fn).eval(), (torch.randn(1, 3, 6, 6),), name="w", path=path)
    assert why in str(info.value)
    assert "fix: " in str(info.value)
    assert "torch.where" in str(info.value)


@pytest.mark.parametrize("path", PATHS)
def test_a_branch_that_is_another_tensor_is_a_select(path: str) -> None:
    module = Apply(lambda y: torch.where(y > 0, torch.sigmoid(y), y * y)).eval()
    graph = mdla_ir.from_torch(module, (torch.randn(1, 3, 6, 6),), name="w", path=path)
    select = next(o for o in graph.ops if o.kind is OpKind.SELECT)
    assert select.attrs.compare == "gt"
    assert graph.tensors[select.inputs[1]].data is not None  # the 0 broadcast
    assert OpKind.WHERE not in {o.kind for o in graph.ops}


def test_float_of_a_float_tensor_is_the_identity_on_fx() -> None:
    """(the identity folds away)"""
    module, x = Apply(lambda y: y.float() * 2.0).eval(), torch.randn(1, 3, 6, 6)
    graph = mdla_ir.from_torch(module, (x,), name="f", path="fx")
    assert [o.kind for o in graph.ops] == [OpKind.CONV_2D, OpKind.MUL]
