"""The emulator's int8 kernels against mdla_quant.run_int8, bit for bit, in both roundings.

Every case is a random single-op qgraph from mdla_ir.builders, lowered to Neuron operands,
compiled for the three devices (their union maps every kernel here) and run through the ABI.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np
import pytest

from mdla_ir.builders import INT8_KINDS, as_floats, random_codes, random_qgraph
from mdla_ir.ops import OpKind
from mdla_quant import run_int8
from mdla_quant.errors import KernelError
from tests.runtime.test_emu_support import run_single_op

CASES = 50
KINDS = INT8_KINDS


@pytest.fixture
def rounding_env(request: pytest.FixtureRequest) -> Iterator[str]:
    mode = str(request.param)
    old = os.environ.get("MDLA_EMU_ROUNDING")
    os.environ["MDLA_EMU_ROUNDING"] = mode
    yield mode
    if old is None:
        del os.environ["MDLA_EMU_ROUNDING"]
    else:
        os.environ["MDLA_EMU_ROUNDING"] = old


def run_case(kind: OpKind, seed: int, rounding: str, large: bool = False) -> tuple[int, int]:
    """(mismatching elements, total elements) of one random case; (0, 0) if the reference
    rejects the case (an int32 accumulator overflow TFLite would wrap)."""
    rng = np.random.default_rng(seed)
    g = random_qgraph(kind, rng, large=large)
    codes = random_codes(g, rng)
    try:
        (want,) = run_int8(g, as_floats(g, codes), raw=True, rounding=rounding)
    except KernelError:
        return 0, 0
    got = run_single_op(g, codes, f"{kind.name} seed {seed}")
    return int(np.count_nonzero(got != want)), int(want.size)


@pytest.mark.parametrize("rounding_env", ["double", "single"], indirect=True)
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_kernel_bit_exact(kind: OpKind, rounding_env: str) -> None:
    bad = total = 0
    for seed in range(CASES):
        b, n = run_case(kind, 1000 * kind.value + seed, rounding_env)
        bad, total = bad + b, total + n
    assert total > 0
    assert bad == 0, f"{kind.name} ({rounding_env}): {bad} of {total} outputs differ"


@pytest.mark.parametrize("rounding_env", ["double", "single"], indirect=True)
@pytest.mark.parametrize(
    "kind", [OpKind.CONV_2D, OpKind.DEPTHWISE_CONV_2D, OpKind.FULLY_CONNECTED], ids=lambda k: k.name
)
def test_model_sized_kernels_bit_exact(kind: OpKind, rounding_env: str) -> None:
    bad = total = 0
    for seed in range(6):
        b, n = run_case(kind, 77_000 + seed, rounding_env, large=True)
        bad, total = bad + b, total + n
    assert total > 0
    assert bad == 0, f"{kind.name} large ({rounding_env}): {bad} of {total} outputs differ"
