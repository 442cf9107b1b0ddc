"""`workbench bisect` on a model compiled with `--cpu` (issue 17): the support bisection and the
output bisection (`--outputs`) cut across partitions, so the op they name may sit inside the
second NPU partition, after a cpu one. The fault for `--outputs` is a device that rounds once
where the manifest says twice (MDLA_EMU_ROUNDING=single reaches the emulator's NPU partitions;
the engine's cpu partitions keep the manifest's rounding), which changes a few int8 values."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import mdla_ir
import mdla_legalize
import mdla_quant
from mdla_ir.graph import Graph
from mdla_ir.ops import OpKind
from mdla_legalize.prefix import prefix
from mdla_quant import run_int8
from mdla_runtime import Manifest, load, open_target, save
from tests.runtime.test_engine import fake_adapter
from tests.workbench.softmax_models import softmax_over_height
from workbench import bisection
from workbench.cli import app

SMH = str(Path(__file__).with_name("softmax_models.py")) + ":softmax_over_height"


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Graph, Manifest, np.ndarray]:
    module, x0 = softmax_over_height()
    graph = mdla_ir.from_torch(module, (x0,), name="smh")
    placed = mdla_legalize.place(
        graph, mdla_legalize.load_target("mdla3.5"), "mtk-mdla", ["SOFTMAX"]
    )
    rng = np.random.default_rng(1)
    qgraph = mdla_quant.quantize(  # where the cut lands was read off round-to-nearest weights
        placed.graph,
        [[rng.normal(size=x0.shape).astype(np.float32)] for _ in range(2)],
        mdla_quant.QuantConfig(weight_rounding="nearest"),
    )
    path = save(qgraph, tmp_path_factory.mktemp("bisect") / "smh.mdla")
    return qgraph, load(path), rng.normal(size=x0.shape).astype(np.float32)


def test_output_bisection_names_an_npu_op_whose_inputs_agree(
    model: tuple[Graph, Manifest, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    qgraph, manifest, x = model
    target = open_target("emu")
    assert bisection.diverge(target, manifest, qgraph, [x]) is None  # the faithful emulator
    monkeypatch.setenv("MDLA_EMU_ROUNDING", "single")
    steps: list[bisection.OutputStep] = []
    k = bisection.diverge(target, manifest, qgraph, [x], on_step=steps.append)
    assert k is not None
    assert steps[0].ops == 6
    assert not steps[0].agrees

    def differing(n: int) -> int:  # brute force, independent of the bisection's path
        got = target.run(manifest, [x], ops=n)
        head = prefix(qgraph, n) if n < len(qgraph.ops) else qgraph
        want = dict(zip(head.outputs, run_int8(head, [x], raw=True), strict=True))
        return sum(
            not np.array_equal(r, want[name])
            for name, r in zip(got.output_names, got.raw_outputs, strict=True)
        )

    assert k == 0 or differing(k) == 0
    assert differing(k + 1) > 0
    (part,) = [p for p in manifest.partitions if k in p.operations]
    assert part.device == "mtk-mdla"  # cpu partitions keep the manifest's rounding
    # softmax hides the stem's differences (ops[:3] agrees), so the cut lands on mix.0, the
    # first op of the second NPU partition, which reads the cpu partition's output
    assert (k, manifest.operations[k].name) == (3, "mix.0")


def test_the_cli_output_bisection(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    args = ["bisect", SMH, "--cpu", "SOFTMAX", "--outputs"]
    clean = runner.invoke(app, [*args, "--json"])
    assert clean.exit_code == 0, clean.output + clean.stderr
    doc = json.loads(clean.stdout)
    assert (doc["agrees"], doc["first_differing"], doc["ops"]) == (True, None, 6)
    monkeypatch.setenv("MDLA_EMU_ROUNDING", "single")
    result = runner.invoke(app, args)
    assert result.exit_code == 4, result.output + result.stderr
    found = re.search(
        r"op whose output differs from run_int8: #(\d) (\S+) \(CONV_2D\) on mtk-mdla "
        r"\(its inputs agree: ops\[:(\d)\] is bit-exact, ops\[:(\d)\] is not\)",
        result.output,
    )
    assert found is not None, result.output
    k = int(found[1])
    assert (int(found[3]), int(found[4])) == (k, k + 1)
    assert "computes another result on mtk-mdla" in result.stderr
    shown = runner.invoke(app, [*args, "--json"])
    assert shown.exit_code == 4
    doc = json.loads(shown.stdout)
    assert doc["agrees"] is False
    assert doc["first_differing"]["device"] == "mtk-mdla"
    assert doc["first_differing"]["index"] == k
    verdicts = {step["ops"]: step["agrees"] for step in doc["steps"]}
    assert verdicts[k + 1] is False
    assert verdicts.get(k, True) is True  # ops[:0] (the inputs) is never run: it agrees
    assert doc["steps"][0] == {"ops": 6, "outputs": 1, "differing": 1, "agrees": False}


def test_the_cli_support_bisection_inside_a_partition(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A device without ADD (the fake adapter, all-or-nothing like the MDLA): op 4, `add`, the
    second op of the second NPU partition; the cpu softmax is never asked."""
    monkeypatch.setenv("FAKE_NEURON_UNSUPPORTED", str(OpKind.ADD.value))
    on = f"lib:{fake_adapter()}"
    result = runner.invoke(app, ["bisect", SMH, "--cpu", "SOFTMAX", "--on", on, "--json"])
    assert result.exit_code == 3, result.output + result.stderr
    doc = json.loads(result.stdout)
    assert doc["first_unmapped"]["index"] == 4
    assert doc["first_unmapped"]["name"] == "add"
    assert [s["ops"] for s in doc["steps"]] == [6, 3, 4, 5]


@pytest.mark.parametrize("flag", ["--outputs", "--cpu"])
def test_a_compiled_file_has_no_reference_and_no_placement(
    runner: CliRunner, tmp_path: Path, model: tuple[Graph, Manifest, np.ndarray], flag: str
) -> None:
    path = model[1].path
    assert path is not None
    extra = ["SOFTMAX"] if flag == "--cpu" else []
    result = runner.invoke(app, ["bisect", str(path), flag, *extra])
    assert result.exit_code == 2
    assert f"{flag} needs a model spec, not the compiled {path}" in result.stderr
