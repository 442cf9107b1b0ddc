"""The fresh hand-written set (tests/fresh.py) end to end: each model compiles (on the MDLA
alone, else with `--cpu auto`) and the emulator runs it bit-exact with run_int8. Those that do
not yet are strict xfails naming why: each turns into a failure the day it starts to work."""

from __future__ import annotations

import pytest

from tests.fresh import CASES, run_case


def _fails(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=reason)


FAILING = {
    "dilated_max_pool": _fails("max pooling with dilation: no route (refused with a fix)"),
}

NAMES = [pytest.param(n, marks=FAILING[n]) if n in FAILING else n for n in CASES]


@pytest.mark.parametrize("name", NAMES)
def test_fresh_model_compiles_and_runs_bit_exact(name: str) -> None:
    verdict = run_case(name)
    assert verdict.passed, f"{name}: {verdict.verdict} ({verdict.path}): {verdict.message}"


def test_a_refusal_is_a_verdict_with_its_one_line() -> None:
    """The harness reports a refusal as `refused` with the importer's line (exit 3), not as
    an error."""
    verdict = run_case("dilated_max_pool")
    assert verdict.verdict == "refused"
    assert "dilation" in verdict.message
    assert "fix:" in verdict.message
