"""Stock torchvision models that need issue 15's exact rewrites, random weights: every op of
the legalized graph maps on mtk-mdla (what `workbench check NAME --legalized` reports), by the
rules expected, with no TRANSPOSE. vgg11_bn (a 25088x4096 Linear: slow to copy) is covered by
the VGG-like model in tests/models_rewrites.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import mdla_ir
from mdla_ir.testing import relative_error
from mdla_legalize import explain, legalize, load_target
from mdla_zoo import load_model

TARGET = load_target("mdla3.5")
RULES = {
    "shufflenet_v2_x1_0": {"channel_slice_to_selection": 26, "movement_chain_to_selection": 16},
    "resnext50_32x4d": {"grouped_conv_to_dense": 16},
    "regnet_y_400mf": {"grouped_conv_to_dense": 16},
}


@pytest.mark.parametrize("name", list(RULES))
def test_torchvision_model_maps_after_exact_rewrites(name: str) -> None:
    model = load_model(name)
    graph = legalize(mdla_ir.from_torch(model.module, model.example_inputs, name=name), TARGET)
    assert explain(graph, TARGET).all_supported
    assert "TRANSPOSE" not in graph.count()
    fired = graph.provenance.rule_counts
    assert RULES[name].items() <= fired.items(), fired
    if name == "shufflenet_v2_x1_0":
        assert fired["fold_selection"] >= 16  # shuffles and second halves fold into convs
        x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
        with torch.no_grad():
            want = model.module(torch.from_numpy(x)).numpy()
        assert relative_error(mdla_ir.run_float(graph, [x])[0], want) <= 1e-4
