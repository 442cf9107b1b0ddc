"""Third-party models through the torch.export path: one fx cannot trace (timm's Conv2dSame,
`math.ceil` on a traced size, in every `tf_*` model) and one fx maps (timm's BatchNormAct2d),
each imported with `path="auto"`, equal to the module in float, and legalized for the MDLA."""

from __future__ import annotations

import pytest
import torch

import mdla_ir
import mdla_legalize
from mdla_ir.importer import import_torch
from mdla_ir.testing import relative_error
from tests.models_third_party import build


@pytest.mark.parametrize(
    ("name", "fx_traces"),
    [("timm:tf_mobilenetv3_small_minimal_100", False), ("timm:mobilenetv3_small_050", True)],
)
def test_imports_through_export_and_legalizes(name: str, fx_traces: bool) -> None:
    module, example = build(name, side=64)
    if not fx_traces:
        with pytest.raises(mdla_ir.IRError, match=r"torch\.fx cannot trace"):
            mdla_ir.from_torch(module, example, path="fx")
    imported = import_torch(module, example, name=name.split(":")[1], path="export")
    assert (imported.path, imported.note) == ("export", "imported via torch.export")
    assert import_torch(module, example, path="auto").path == ("fx" if fx_traces else "export")
    (x,) = example
    with torch.no_grad():
        want = module(x).numpy()
    (got,) = mdla_ir.run_float(imported.graph, [x.numpy()])
    assert relative_error(got, want) <= 1e-5
    device = mdla_legalize.legalize(imported.graph, mdla_legalize.load_target("mdla3.5"))
    assert device.layout == "NHWC"
