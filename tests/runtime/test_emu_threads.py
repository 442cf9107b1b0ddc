"""The emulator's worker threads (kernels/pool.c): every kernel that splits its work over
MDLA_EMU_THREADS gives the same bytes at 1, 2 and 3 threads, and those bytes are
mdla_quant.run_int8's. MDLA_EMU_MIN_WORK=1 makes every op with two or more rows split (cuts
inside broadcast runs' outer dims, mid-image pool and resize rows, uneven thread chunks); the
default minimum is also run, where the small cases stay on one thread.
"""

from __future__ import annotations

import numpy as np
import pytest

from mdla_ir.builders import (
    act,
    as_floats,
    const,
    qp,
    random_codes,
    random_qgraph,
    single_op_qgraph,
)
from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from mdla_quant import run_int8
from tests.runtime.test_emu_support import run_single_op

SPLIT = [
    OpKind.ADD,
    OpKind.SUB,
    OpKind.MUL,
    OpKind.PRELU,
    OpKind.RELU,
    OpKind.RELU6,
    OpKind.LOGISTIC,
    OpKind.TANH,
    OpKind.HARD_SWISH,
    OpKind.AVERAGE_POOL_2D,
    OpKind.MAX_POOL_2D,
    OpKind.MEAN,
    OpKind.CONCATENATION,
    OpKind.PAD,
    OpKind.RESIZE_BILINEAR,
    OpKind.RESIZE_NEAREST_NEIGHBOR,
    OpKind.CONV_2D,
    OpKind.DEPTHWISE_CONV_2D,
    OpKind.FULLY_CONNECTED,
]


def tokens_fc(rng: np.random.Generator) -> Graph:
    """A channels-last Linear over 2 x 37 tokens (random_qgraph's batches fit one 8-bit GEMM
    block, so they never split): the batch rows are what FULLY_CONNECTED cuts."""
    i, o = int(rng.integers(20, 200)), int(rng.integers(5, 60))
    wt = rng.integers(-127, 128, size=(o, i), dtype=np.int8)
    ws = np.exp(rng.uniform(np.log(1e-3), np.log(0.05), size=o)).astype(np.float32)
    bias = rng.integers(-5000, 5000, size=o).astype(np.int32)
    s_in = 0.02
    ins = [
        act("x", (2, 37, i), qp(s_in, int(rng.integers(-128, 128)))),
        const("w", wt, qp(ws, 0, 0)),
        const("bias", bias, qp(np.float32(s_in) * ws, 0, 0)),
    ]
    spread = float(np.sqrt(i) * 128 * 73 * s_in * np.median(ws))
    return single_op_qgraph(
        OpKind.FULLY_CONNECTED, ins, (2, 37, o), qp(spread / 20, -3), {"fuse": "NONE"}
    )


@pytest.mark.parametrize("min_work", ["1", ""], ids=["split_all", "default"])
@pytest.mark.parametrize("kind", SPLIT, ids=lambda k: k.name)
def test_thread_count_never_changes_a_byte(
    kind: OpKind, min_work: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MDLA_EMU_MIN_WORK", min_work)
    for seed in range(6):
        rng = np.random.default_rng(9100 * kind.value + seed)
        g = (
            tokens_fc(rng)
            if kind is OpKind.FULLY_CONNECTED and seed < 3
            else random_qgraph(kind, rng, large=seed == 0)
        )
        codes = random_codes(g, rng)
        (want,) = run_int8(g, as_floats(g, codes), raw=True)
        for threads in (1, 2, 3):
            monkeypatch.setenv("MDLA_EMU_THREADS", str(threads))
            got = np.asarray(run_single_op(g, codes))
            assert got.tobytes() == np.asarray(want).tobytes(), f"seed {seed}, {threads} threads"
