"""The fresh hand-written set (tests/fresh.py) end to end: each model compiles (on the MDLA
alone, else with `--cpu auto`) and the emulator runs it bit-exact with run_int8. Those that do
not yet are strict xfails naming why: each turns into a failure the day it starts to work."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.fresh import CASES, Case, run_case


def _fails(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=reason)


FAILING: dict[str, pytest.MarkDecorator] = {}

NAMES = [pytest.param(n, marks=FAILING[n]) if n in FAILING else n for n in CASES]


@pytest.mark.parametrize("name", NAMES)
def test_fresh_model_compiles_and_runs_bit_exact(name: str) -> None:
    verdict = run_case(name)
    assert verdict.passed, f"{name}: {verdict.verdict} ({verdict.path}): {verdict.message}"


class _TwoRates(nn.Module):
    """A max pool dilated by different rates on H and W: still refused (one phase block)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)
        self.pool = nn.MaxPool2d(3, 1, padding=1, dilation=(2, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(self.conv(x))


def test_a_refusal_is_a_verdict_with_its_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness reports a refusal as `refused` with the importer's line (exit 3), not as
    an error."""
    monkeypatch.setitem(CASES, "two_rates", Case(_TwoRates))
    verdict = run_case("two_rates")
    assert verdict.verdict == "refused"
    assert "dilation" in verdict.message
    assert "fix:" in verdict.message
