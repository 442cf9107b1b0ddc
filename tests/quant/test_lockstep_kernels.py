"""The float network of `sequential.lockstep` (AdaRound, bias correction) runs calibration's C
kernels (`fast_kernels`), whose values are the interpreter's: the same float inputs reach
every visit as with the interpreter's kernels alone."""

from __future__ import annotations

from typing import Any

import pytest

from mdla_ir import Graph, Op
from mdla_quant import QuantConfig, fast_kernels, quantize, sequential
from mdla_quant.sequential import Env, lockstep
from tests.quant.test_block_reconstruction import mbconv, samples


def _floats(g: Graph, q: Graph, calib: list[Any]) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def visit(i: int, op: Op, floats: list[Env], ints: list[Env], qg: Graph) -> Graph:
        seen.append({n: floats[0][n].copy() for n in op.inputs if n in floats[0]})
        return qg

    lockstep(g, q, calib, visit)
    return seen


def test_lockstep_runs_the_c_kernels_with_the_interpreters_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    g, calib = mbconv(seed=3), samples(3, seed=4)
    q = quantize(g, calib, QuantConfig(method="minmax"))
    calls = []
    depthwise = fast_kernels.depthwise

    def counted(*args: Any) -> Any:
        calls.append(1)
        return depthwise(*args)

    monkeypatch.setattr(fast_kernels, "depthwise", counted)
    fast = _floats(g, q, calib)
    assert calls  # the C depthwise ran
    monkeypatch.setattr(sequential, "calibration_kernels", dict)
    slow = _floats(g, q, calib)
    assert len(fast) == len(slow)
    for a, b in zip(fast, slow, strict=True):
        assert a.keys() == b.keys()
        assert all(a[n].tobytes() == b[n].tobytes() and a[n].dtype == b[n].dtype for n in a)
