"""Whole-model files as specs: torch.save(model) .pt, TorchScript, torch.export .pt2. Each
imports to a graph whose float output is the module's own; every refusal is one line."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import mdla_ir
from mdla_ir.importer import import_torch
from mdla_ir.importer.exported import ProgramModule
from mdla_zoo import ZooError, load_model
from mdla_zoo.files import file_kind, load_file

# Every aten rule of the exported-program rewrite that a CNN like this reaches: conv2d,
# batch_norm, relu, hardtanh (ReLU6), max_pool2d, avg_pool2d, add, mul, cat, sigmoid,
# adaptive_avg_pool2d, flatten, linear, dropout, constant padding.
NET = """
import torch
from torch import nn
import torch.nn.functional as F

class FileNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8),
                               nn.ReLU6())
        self.b = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.c = nn.Conv2d(16, 8, 1)
        self.gate = nn.Conv2d(8, 8, 1)
        self.fc = nn.Linear(8, 5)
        self.drop = nn.Dropout(0.2)

    def forward(self, x):
        y = self.a(F.pad(x, (1, 1, 1, 1)))
        z = F.max_pool2d(F.relu(self.b(y)) + y, 2)
        w = F.avg_pool2d(y, 2)
        u = self.c(torch.cat([z, w], 1))
        u = u * torch.sigmoid(self.gate(u))
        v = F.adaptive_avg_pool2d(u, 1).flatten(1)
        return self.fc(self.drop(v))

class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        y = self.c(x)
        if bool(y.sum() > 0):  # data-dependent control flow, kept by torch.jit.script
            return torch.relu(y)
        return y * 2

class Cumulative(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, 1)
"""
SHAPE = (1, 3, 30, 30)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("files")
    name = "mdla_test_filenet"
    (root / f"{name}.py").write_text(textwrap.dedent(NET))
    sys.path.insert(0, str(root))
    try:
        mod = importlib.import_module(name)
    finally:
        sys.path.remove(str(root))
    torch.manual_seed(1)
    net = mod.FileNet()
    with torch.no_grad():  # non-trivial BN statistics, so folding it is checked
        net.a[1].running_mean.uniform_(-0.5, 0.5)
        net.a[1].running_var.uniform_(0.5, 2.0)
    net.eval()
    out = {
        "full": root / "full.pt",
        "legacy": root / "legacy.pt",
        "state": root / "state.pt",
        "ts": root / "net.ts",
        "traced": root / "traced.ts",
        "pt2": root / "net.pt2",
        "cumsum": root / "cumsum.pt2",
        "branchy": root / "branchy.ts",
        "garbage": root / "garbage.pt",
    }
    torch.save(net, out["full"])
    torch.save(net, out["legacy"], _use_new_zipfile_serialization=False)
    torch.save(net.state_dict(), out["state"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.script(net).save(str(out["ts"]))
        traced = torch.jit.trace(net, torch.zeros(SHAPE))  # type: ignore[no-untyped-call]
        traced.save(str(out["traced"]))  # its graph holds aten.convolution
        torch.jit.script(mod.Branchy().eval()).save(str(out["branchy"]))
    example = (torch.zeros(SHAPE),)
    torch.export.save(torch.export.export(net, example), out["pt2"])
    torch.export.save(torch.export.export(mod.Cumulative(), example), out["cumsum"])
    out["garbage"].write_bytes(b"not a torch file at all")
    sys.modules.pop(name)  # the pickled class is found again through the file's folder
    torch.save(net.state_dict(), root / "reference_state.pt")
    out["reference"] = root / "reference_state.pt"
    out["source"] = root / f"{name}.py"
    return out


@pytest.fixture(scope="module")
def reference(files: dict[str, Path]) -> tuple[np.ndarray, np.ndarray]:
    model = load_model(f"{files['source']}:FileNet", weights=str(files["reference"]))
    x = torch.randn(SHAPE, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        y = model.module(x).numpy()
    return x.numpy(), y


def test_the_kind_is_read_from_the_archive_not_the_suffix(files: dict[str, Path]) -> None:
    kinds = {k: file_kind(files[k]) for k in ("full", "legacy", "state", "ts", "pt2")}
    assert kinds == {
        "full": "pickle",
        "legacy": "pickle",
        "state": "pickle",
        "ts": "torchscript",
        "pt2": "export",
    }


@pytest.mark.parametrize(
    ("key", "shape"),
    [("full", None), ("legacy", None), ("ts", SHAPE), ("traced", SHAPE), ("pt2", None)],
)
def test_each_file_imports_to_the_modules_own_output(
    files: dict[str, Path],
    reference: tuple[np.ndarray, np.ndarray],
    key: str,
    shape: tuple[int, ...] | None,
) -> None:
    model = load_model(str(files[key]), input_shape=shape)
    assert not model.random_weights
    assert tuple(model.example_inputs[0].shape) == (
        SHAPE if key in ("ts", "traced", "pt2") else (1, 3, 224, 224)
    )
    graph = mdla_ir.from_torch(model.module, (torch.zeros(SHAPE),), name=key)
    x, y = reference
    (out,) = mdla_ir.run_float(graph, [x])
    np.testing.assert_allclose(out, y, rtol=0, atol=2e-5)
    assert len(model.notes) == 1


def test_each_note_says_what_was_done(files: dict[str, Path]) -> None:
    full = load_model(str(files["full"])).notes[0]
    assert "torch.load(weights_only=False)" in full
    assert "only files you trust" in full
    ts = load_model(str(files["ts"]), input_shape=SHAPE).notes[0]
    assert "torch.fx cannot trace it" in ts
    assert "[1, 3, 30, 30]" in ts


def test_a_program_imports_through_export_whatever_the_path(files: dict[str, Path]) -> None:
    """A .pt2's module runs the program and imports its own ATen graph (no fx, no re-export):
    ops are named by the modules they ran in."""
    module = load_model(str(files["pt2"])).module
    assert isinstance(module, ProgramModule)
    imported = import_torch(module, (torch.zeros(SHAPE),), name="pt2", path="fx")
    assert imported.path == "export"
    names = [op.name for op in imported.graph.ops]
    assert {"a.0", "b", "c", "gate", "fc"} <= set(names)


def test_a_program_with_ops_fx_files_could_not_take_round_trips(tmp_path: Path) -> None:
    """In-place activations, layer_norm, chunk and unsqueeze in a .pt2 (the ops the former
    torch-level rewrite refused) import with the module's own output."""

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.act = torch.nn.Hardswish(inplace=True)
            self.norm = torch.nn.LayerNorm(4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            a, b = self.act(self.conv(x)).chunk(2, 1)
            y = torch.nn.functional.silu(a * 2.0, inplace=True) * b
            z = self.norm(y.mean((2, 3)).unsqueeze(1))
            return torch.relu_(z)

    net = Net().eval()
    x = torch.randn(1, 3, 8, 8)
    path = tmp_path / "inplace.pt2"
    torch.export.save(torch.export.export(net, (x,)), path)
    model = load_model(str(path))
    graph = mdla_ir.from_torch(model.module, model.example_inputs, name="inplace")
    with torch.no_grad():
        want = net(x).numpy()
    (got,) = mdla_ir.run_float(graph, [x.numpy()])
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5)


@pytest.mark.parametrize(
    ("key", "op"), [("cumsum", "aten.cumsum.default"), ("branchy", "higher_order.cond")]
)
def test_an_unmapped_aten_op_of_a_program_is_named(
    files: dict[str, Path], key: str, op: str
) -> None:
    model = load_model(str(files[key]), input_shape=SHAPE)
    with pytest.raises(mdla_ir.UnsupportedError) as err:
        mdla_ir.from_torch(model.module, model.example_inputs)
    assert [op in item for item in err.value.items] == [True]


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ("state", ["holds a state dict", "--weights"]),
        ("garbage", ["cannot read", "as a torch.save file"]),
    ],
)
def test_refusals_are_one_line_naming_the_file(
    files: dict[str, Path], key: str, words: list[str]
) -> None:
    with pytest.raises(ZooError) as err:
        load_model(str(files[key]))
    text = str(err.value)
    assert "\n" not in text
    assert str(files[key]) in text
    for word in words:
        assert word in text


def test_a_pickle_whose_class_cannot_be_imported(files: dict[str, Path], tmp_path: Path) -> None:
    alone = tmp_path / "alone.pt"
    shutil.copy(files["full"], alone)  # without mdla_test_filenet.py beside it
    sys.modules.pop("mdla_test_filenet", None)  # as a fresh process would start
    with pytest.raises(ZooError, match=r"cannot be imported here.*beside the file"):
        load_model(str(alone))


def test_a_whole_model_given_as_weights_says_to_name_it(files: dict[str, Path]) -> None:
    with pytest.raises(ZooError, match="name the file as the model instead of --weights"):
        load_model(f"{files['source']}:FileNet", weights=str(files["full"]))


def test_a_pickle_of_a_class_from_the_saving_script(tmp_path: Path) -> None:
    path = tmp_path / "script_model.pt"
    code = (
        "import torch\nfrom torch import nn\n"
        "class Net(nn.Module):\n    def forward(self, x):\n        return x\n"
        f"torch.save(Net(), {str(path)!r})\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)
    with pytest.raises(ZooError) as err:
        load_model(str(path))
    text = str(err.value)
    assert "defined in the script that saved it (`__main__`)" in text
    assert "move the class into a file" in text


def _zip_with(path: Path, entry: str) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w") as z:
        z.writestr(entry, "not what the reader expects\nat all")
    return path


@pytest.mark.parametrize(
    ("name", "entry", "words"),
    [
        ("broken.pt2", "broken/models/model.json", "with torch.export.load"),
        ("broken.ts", "broken/code/__torch__.py", "with torch.jit.load"),
    ],
)
def test_an_unreadable_archive_is_refused_in_one_line(
    tmp_path: Path, name: str, entry: str, words: str
) -> None:
    path = _zip_with(tmp_path / name, entry)
    with pytest.raises(ZooError) as err:
        load_file(str(path), None)
    text = str(err.value)
    assert "\n" not in text
    assert f"cannot read `{path}` {words}" in text


def test_a_pickle_of_no_module_and_a_missing_file_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "numbers.pt"
    torch.save([1, 2, 3], path)
    with pytest.raises(ZooError, match=r"holds a list, not a torch.nn.Module"):
        load_file(str(path), None)
    with pytest.raises(ZooError, match=r"does not exist"):
        load_file(str(tmp_path / "absent.pt"), None)
