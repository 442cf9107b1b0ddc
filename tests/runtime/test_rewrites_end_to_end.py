"""Issue 15's exact rewrites end to end, one small model per construct (tests/models_rewrites):
every op on mtk-mdla, float IR == torch within 1e-4 relative, and the emulator, run_int8 and
LiteRT BUILTIN_REF agree bit for bit on the int8 outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from mdla_ir.selection import is_selection
from tests.models_rewrites import CASES, end_to_end

EXPECTED = {  # what each construct legalizes to
    "shufflenet": {"CONV_2D": 12, "DEPTHWISE_CONV_2D": 3, "CONCATENATION": 3},
    "vggish": {"CONV_2D": 5, "MAX_POOL_2D": 2, "RESHAPE": 1},
    "resnextish": {"CONV_2D": 5, "ADD": 1},
    "keyword_spotter": {"CONV_2D": 4, "MAX_POOL_2D": 1, "AVERAGE_POOL_2D": 1, "MEAN": 1},
    "feature_tcn": {"CONV_2D": 3, "AVERAGE_POOL_2D": 1, "MEAN": 1},
    "ceil_pools": {"AVERAGE_POOL_2D": 2, "MAX_POOL_2D": 1},
}


@pytest.mark.parametrize("name", list(CASES))
def test_construct_end_to_end(name: str, tmp_path: Path) -> None:
    result = end_to_end(name, tmp_path)
    assert result.float_error <= 1e-4
    assert EXPECTED[name].items() <= result.kinds.items(), result.kinds
    assert "TRANSPOSE" not in result.kinds
    if name == "shufflenet":  # 9 selections (per unit two pieces and a shuffle), of which
        q = result.qgraph  # 5 fold into the conv or selection reading them
        selections = [op for op in q.ops if is_selection(q, op)]
        assert len(selections) == 4
        for op in selections:  # multiplier exactly 1: weight scale 1, output params = input's
            x, w, y = (q.tensors[n].quant for n in (op.inputs[0], op.inputs[1], op.outputs[0]))
            assert x is not None
            assert w is not None
            assert y is not None
            assert set(w.scale) == {1.0}
            assert (y.scale, y.zero_point) == (x.scale, x.zero_point)
