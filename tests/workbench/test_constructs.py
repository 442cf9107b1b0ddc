"""The construct catalogue (`mdla_legalize.constructs`) against everything that states it: the
README's table and `workbench check --help` render from it (so they cannot drift), each status
holds against the target file itself, and each construct goes through the importer and the
rules the way its status says (maps with no assumption, maps on the named assumption, never)."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn
from typer.testing import CliRunner

import mdla_ir
import mdla_legalize
from mdla_ir import OpKind
from mdla_legalize.constructs import (
    CONSTRUCTS,
    Construct,
    Status,
    disagreements,
    markdown_table,
    replace_table,
)
from mdla_target import target_path
from tests.ir.test_importer_rewrites import Fn
from tests.workbench.unmappable_models import attention
from workbench.cli import app

README = Path(__file__).resolve().parents[2] / "README.md"
MDLA = tomllib.loads(target_path("mdla3.5").read_text(encoding="utf-8"))["op"]["mtk-mdla"]


def _plain(text: str) -> str:
    return " ".join(text.replace("`", "").split())


REFRESH = (
    '.venv/bin/python -c "import pathlib, mdla_legalize.constructs as c; '
    "p = pathlib.Path('README.md'); p.write_text(c.replace_table(p.read_text()))\""
)


def test_readme_table_is_the_catalogue() -> None:
    text = README.read_text(encoding="utf-8")
    assert replace_table(text) == text, f"README's construct table is stale: {REFRESH}"
    table = markdown_table()
    assert table in text
    assert text.count("| construct |") == 1
    assert len(table.splitlines()) == len(CONSTRUCTS) + 2


def test_replace_table_swaps_exactly_the_table() -> None:
    stale = (
        "intro\n\n"
        + markdown_table().replace("maps (measured)", "maps", 1)
        + "| extra |\n\nafter\n"
    )
    assert replace_table(stale) == "intro\n\n" + markdown_table() + "\nafter\n"


def test_check_help_lists_every_construct_under_its_status() -> None:
    result = CliRunner().invoke(app, ["check", "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80
    out = _plain(result.output)
    starts = {
        Status.MAPS: out.index("Maps (every op"),
        Status.ASSUMED: out.index("Maps on an assumption ("),
        Status.NEVER: out.index("Never (no op"),
    }
    ends = {
        Status.MAPS: starts[Status.ASSUMED],
        Status.ASSUMED: starts[Status.NEVER],
        Status.NEVER: len(out),
    }
    for c in CONSTRUCTS:
        section = out[starts[c.status] : ends[c.status]]
        assert _plain(c.name) in section, (c.name, c.status)
        for kind in (a.partition(".")[0] for a in c.assumed):
            assert kind in section[section.index(_plain(c.name)) :], (c.name, kind)
        if c.status is Status.NEVER:
            assert _plain(c.why) in section, c.why


def test_issue_15_constructs_are_all_catalogued() -> None:
    names = " ".join(c.name for c in CONSTRUCTS)
    for word in (
        "interpolate", "Upsample", "bilinear", "nearest", "ConvTranspose2d", "chunk", "split",
        "shuffle", "PReLU", "LeakyReLU", "Conv1d", "ceil_mode", "Linear", "PixelShuffle",
        "grouped", "dilat", "LayerNorm", "attention", "GELU",
    ):  # fmt: skip
        assert word in names, word


def _source(name: str) -> str:
    """The source string the target file gives `KIND` or `KIND.attribute` on mtk-mdla."""
    kind, _, attr = name.partition(".")
    entry = MDLA.get(kind, {})
    return str(entry.get(f"{attr}_source" if attr else "source", ""))


@pytest.mark.parametrize(
    "c", [c for c in CONSTRUCTS if c.status is Status.ASSUMED], ids=lambda c: _plain(c.name)[:40]
)
def test_every_assumed_status_names_an_assumed_target_entry(c: Construct) -> None:
    assert c.assumed
    for name in c.assumed:
        assert MDLA[name.partition(".")[0]].get("supported", True)
        assert _source(name).startswith("assumed"), (name, _source(name))


@pytest.mark.parametrize(
    "c", [c for c in CONSTRUCTS if c.status is not Status.NEVER], ids=lambda c: _plain(c.name)[:40]
)
def test_every_other_op_of_a_mapping_construct_is_measured(c: Construct) -> None:
    assumed = {a for a in c.assumed if "." not in a}
    for kind in c.ops:
        if kind.name not in assumed:
            entry = MDLA[kind.name]
            assert entry.get("supported", True), kind.name
            assert entry["source"].startswith("measured"), (kind.name, entry["source"])


@pytest.mark.parametrize(
    "c", [c for c in CONSTRUCTS if c.status is Status.NEVER], ids=lambda c: _plain(c.name)[:40]
)
def test_every_never_status_names_an_op_the_target_refuses(c: Construct) -> None:
    assert c.why
    assert any(not MDLA.get(k.name, {"supported": False}).get("supported", True) for k in c.ops)


def test_the_catalogue_holds_against_the_loaded_target() -> None:
    assert disagreements(mdla_legalize.load_target("mdla3.5")) == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"status": Status.MAPS, "ops": (OpKind.PRELU,), "assumed": ()}, "`PRELU` on mtk-mdla is"),
        ({"status": Status.ASSUMED, "assumed": ("CONV_2D",)}, "`CONV_2D` on mtk-mdla is"),
        ({"status": Status.ASSUMED, "assumed": ()}, "names no assumed op"),
        ({"status": Status.NEVER, "ops": (OpKind.CONV_2D,)}, "every op it names maps"),
        ({"status": Status.MAPS, "ops": (OpKind.TRANSPOSE,)}, "`TRANSPOSE` on mtk-mdla is not"),
    ],
)
def test_disagreements_catches_a_wrong_status(change: dict[str, object], message: str) -> None:
    wrong = dataclasses.replace(CONSTRUCTS[0], **change)  # type: ignore[arg-type]
    found = disagreements(mdla_legalize.load_target("mdla3.5"), constructs=(wrong,))
    assert any(message in f for f in found), found


# One small module per construct (by a word of its name): what the importer and the rules do
# with it must be what its status says.
def _chunked(x: torch.Tensor) -> torch.Tensor:
    a, b = x.chunk(2, dim=1)
    return torch.cat([b * 2.0, a], dim=1)


EXAMPLES: dict[str, tuple[Callable[[], nn.Module], tuple[int, ...]]] = {
    "bilinear": (
        lambda: Fn(
            lambda x: (
                F.interpolate(x, size=(12, 12), mode="bilinear")
                + F.interpolate(x, scale_factor=1.5, mode="bilinear", align_corners=True)
            )
        ),
        (1, 4, 8, 8),
    ),
    "nearest": (lambda: nn.Upsample(scale_factor=2), (1, 4, 8, 8)),
    "ConvTranspose2d": (lambda: nn.ConvTranspose2d(4, 4, 2, stride=2), (1, 4, 8, 8)),
    "PixelShuffle": (lambda: nn.Sequential(nn.Conv2d(4, 16, 1), nn.PixelShuffle(2)), (1, 4, 8, 8)),
    "PReLU": (lambda: nn.Sequential(nn.PReLU(4), nn.LeakyReLU(0.1)), (1, 4, 8, 8)),
    "dilated": (
        lambda: nn.Sequential(
            nn.Conv2d(4, 4, 3, padding=2, dilation=2),
            nn.Conv2d(4, 4, 3, padding=2, dilation=2, groups=4),
        ),
        (1, 4, 8, 8),
    ),
    "chunk": (lambda: Fn(_chunked), (1, 4, 8, 8)),
    "grouped": (lambda: nn.Conv2d(4, 8, 3, padding=1, groups=2), (1, 4, 8, 8)),
    "Conv1d": (
        lambda: nn.Sequential(nn.Conv1d(2, 4, 3, padding=1), nn.MaxPool1d(2), nn.AvgPool1d(2)),
        (1, 2, 32),
    ),
    "Conv3d": (
        lambda: nn.Sequential(
            nn.Conv3d(3, 4, 3, (2, 1, 1), 1, bias=False),
            nn.BatchNorm3d(4),
            nn.ReLU(),
            nn.MaxPool3d((2, 1, 1)),
            nn.Conv3d(4, 4, 3, 1, (2, 1, 1), dilation=(2, 1, 1), groups=2),
            nn.AvgPool3d((1, 2, 2)),
            nn.AdaptiveAvgPool3d(1),
        ),
        (1, 3, 8, 8, 8),
    ),
    "Linear": (lambda: nn.Sequential(nn.Flatten(), nn.Linear(4 * 4 * 4, 5)), (1, 4, 4, 4)),
    "ceil_mode": (
        lambda: Fn(
            lambda x: F.avg_pool2d(x, 2, 2, ceil_mode=True) + F.max_pool2d(x, 2, 2, ceil_mode=True)
        ),
        (1, 4, 15, 15),
    ),
    "SiLU": (
        lambda: Fn(lambda x: F.silu(x) * F.hardsigmoid(x).mean((2, 3), keepdim=True)),
        (1, 4, 8, 8),
    ),
    "LayerNorm": (lambda: Fn(lambda x: F.layer_norm(x, (8,))), (1, 4, 8, 8)),
    "attention": (lambda: attention()[0], (1, 3, 16, 16)),
    "GELU": (lambda: nn.GELU(), (1, 4, 8, 8)),
    "amax": (
        lambda: Fn(lambda x: x.sum(1, keepdim=True) * torch.amax(x, (2, 3), keepdim=True)),
        (1, 4, 8, 8),
    ),
    "clip": (lambda: Fn(lambda x: torch.clip(x, -0.5, 0.75) + F.hardtanh(x)), (1, 4, 8, 8)),
    "broadcast_to": (
        lambda: Fn(lambda x: torch.cat([x, x.mean((2, 3), keepdim=True).expand_as(x)], 1)),
        (1, 4, 8, 8),
    ),
    "AdaptiveMaxPool2d": (lambda: nn.AdaptiveMaxPool2d(2), (1, 4, 8, 8)),
    "(SUB)": (lambda: Fn(lambda x: x - torch.sigmoid(x)), (1, 4, 8, 8)),
    "Mish": (
        lambda: Fn(lambda x: F.elu(x) + nn.Mish()(x) + F.softplus(x, 2.0) + F.logsigmoid(x)),
        (1, 4, 8, 8),
    ),
    "atan": (
        lambda: Fn(lambda x: torch.cos(x) * x.sin() + torch.atan(x).tan() + x.expm1() * x.log1p()),
        (1, 4, 8, 8),
    ),
    "adaptive average pools": (lambda: nn.AdaptiveAvgPool2d((3, 5)), (1, 4, 8, 8)),
    "adaptive max pools": (lambda: Fn(lambda x: F.adaptive_max_pool2d(x, 3)), (1, 4, 8, 8)),
    "torch.maximum": (
        lambda: Fn(lambda x: torch.maximum(x, torch.sigmoid(x)) + x.min(x.mean(1, keepdim=True))),
        (1, 4, 8, 8),
    ),
}


def _example(c: Construct) -> tuple[Callable[[], nn.Module], tuple[int, ...]]:
    found = [v for k, v in EXAMPLES.items() if k in c.name]
    assert len(found) == 1, f"no single example for {c.name!r}"
    return found[0]


@pytest.mark.parametrize("c", CONSTRUCTS, ids=lambda c: _plain(c.name)[:40])
def test_each_construct_imports_and_maps_as_its_status_says(c: Construct) -> None:
    make, shape = _example(c)
    torch.manual_seed(0)
    module = make().eval()
    target = mdla_legalize.load_target("mdla3.5")
    if c.status is Status.NEVER:
        with pytest.raises((mdla_ir.UnsupportedError, mdla_legalize.LegalizeError)):
            mdla_legalize.legalize(mdla_ir.from_torch(module, torch.rand(shape)), target)
        return
    device = mdla_legalize.legalize(mdla_ir.from_torch(module, torch.rand(shape)), target)
    report = mdla_legalize.explain(device, target)
    assert report.all_supported, str(report)
    kinds = {op.kind for op in device.ops}
    assert kinds & set(c.ops), (c.name, kinds)
    assumed = set(report.assumptions())
    op_level = {a for a in c.assumed if "." not in a}
    assert op_level <= assumed, (c.name, assumed)
    if c.status is Status.MAPS:
        assert not assumed, (c.name, assumed)
    for name in c.assumed:  # an attribute-level assumption: explain names the attribute
        kind, _, attr = name.partition(".")
        if attr:
            assert OpKind[kind] in kinds, (c.name, kinds)
            assert any(k.startswith(f"{kind} with {attr}") for k in assumed), (c.name, assumed)
    assert not re.search(r"\bTRANSPOSE\b", " ".join(k.name for k in kinds))


@pytest.mark.parametrize(
    "c", [c for c in CONSTRUCTS if "--cpu auto" in c.cost], ids=lambda c: _plain(c.name)[:40]
)
def test_a_construct_costed_as_a_cpu_partition_is_placed_there_by_auto(c: Construct) -> None:
    make, shape = _example(c)
    graph = mdla_ir.from_torch(make().eval(), torch.rand(shape))
    target = mdla_legalize.load_target("mdla3.5")
    placed = mdla_legalize.place(graph, target, "mtk-mdla", ["auto"])
    kinds = {k.name for k in c.ops}
    on_cpu = {o.kind for o in placed.ops if o.device == "cpu"}
    assert on_cpu, c.name
    assert on_cpu <= kinds, (c.name, on_cpu)
    assert not [o for o in placed.ops if o.kind in kinds and o.device != "cpu"], placed.ops
