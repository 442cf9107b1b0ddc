"""The emulator's worker threads (kernels/pool.c): every kernel that splits its work over
MDLA_EMU_THREADS gives the same bytes at 1, 2 and 3 threads, and those bytes are
mdla_quant.run_int8's. MDLA_EMU_MIN_WORK=1 makes every op with two or more rows split (cuts
inside broadcast runs' outer dims, mid-image pool and resize rows, uneven thread chunks); the
default minimum is also run, where the small cases stay on one thread.
"""

from __future__ import annotations

import numpy as np
import pytest

from mdla_ir.builders import as_floats, random_codes, random_qgraph
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
]


@pytest.mark.parametrize("min_work", ["1", ""], ids=["split_all", "default"])
@pytest.mark.parametrize("kind", SPLIT, ids=lambda k: k.name)
def test_thread_count_never_changes_a_byte(
    kind: OpKind, min_work: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MDLA_EMU_MIN_WORK", min_work)
    for seed in range(6):
        rng = np.random.default_rng(9100 * kind.value + seed)
        g = random_qgraph(kind, rng, large=seed == 0)
        codes = random_codes(g, rng)
        (want,) = run_int8(g, as_floats(g, codes), raw=True)
        for threads in (1, 2, 3):
            monkeypatch.setenv("MDLA_EMU_THREADS", str(threads))
            got = np.asarray(run_single_op(g, codes))
            assert got.tobytes() == np.asarray(want).tobytes(), f"seed {seed}, {threads} threads"
