"""`workbench run`: a compiled model on a target: top-5 per image, latency, device."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

import mdla_runtime
from mdla_compile import inputs as ins
from mdla_compile import kinds
from mdla_compile.written import is_written
from mdla_ir import Preprocess
from mdla_ir.devices import NPU
from mdla_ir.provenance import KEYPOINTS, LOGITS
from workbench import adb, dense, pipeline
from workbench import agreement as ag
from workbench import contract as ct
from workbench import images as imgs
from workbench import outputs as outs
from workbench.boxes import Boxes
from workbench.commands.binding import options
from workbench.commands.limits import (
    MaxHeaderValues,
    MaxOpGops,
    MaxTensorMb,
    MaxTotalGops,
    MaxTotalMb,
    Timeout,
)
from workbench.commands.options import (
    Debug,
    Device,
    ImportPathName,
    InputFlags,
    On,
    Weights,
    console,
)
from workbench.commands.run_table import print_table
from workbench.errors import BAD_INPUT, USAGE, WorkbenchError, reported
from workbench.keypoints import Keypoints
from workbench.output import dumps, steps
from workbench.partition_report import run_fields, run_lines
from workbench.proof import shown

FloatModel = Annotated[
    str | None,
    typer.Option(
        "--model",
        metavar="SPEC",
        help="The model OUT.mdla was compiled from (as `inspect` shows its spec), for the FP32 "
        "side of a class map or of boxes. Never taken from the file.",
    ),
]
FloatImport = Annotated[
    ImportPathName | None,
    typer.Option(
        "--import",
        help="How --model is captured for the FP32 side: fx, export or auto (default: the "
        "path OUT.mdla records, as `inspect` shows it; a file that records none: auto, then fx).",
    ),
]

OutDir = Annotated[
    Path | None,
    typer.Option(
        "--out-dir",
        metavar="DIR",
        help=f"Folder for every file run writes (default ./{outs.DEFAULT_DIR}/, never an "
        "input's folder).",
    ),
]
SaveOutputs = Annotated[
    Path | None,
    typer.Option(
        "--save-outputs",
        metavar="FILE.npz",
        help="Save every output per input: dequantized, raw int8 with scale and zero point, "
        "FP32 when computed.",
    ),
]


class Switch(StrEnum):
    on = "on"
    off = "off"


Fp32 = Annotated[
    Switch | None,
    typer.Option(
        "--fp32",
        help="on (default): compare with the FP32 side (the stored float graph or --model); "
        "off: INT8 only, faster (--no-fp32 is the same).",
    ),
]
NoFp32 = Annotated[bool, typer.Option("--no-fp32", help="The same as --fp32 off.", hidden=True)]

Array = np.ndarray[Any, Any]
EPILOG = """Examples:

  workbench run lite0.mdla cat.jpg dog.png

  workbench run lite0.mdla --on ssh://u0_a123@phone:8022 --warmup 3 --repeat 20 --json

  workbench run lite0.mdla chelsea coffee      # scikit-image sample photos by name

  workbench run net.mdla photos/ x.npy         # a directory; an array for a non-image model

  workbench run two.mdla x.npz                 # np.savez("x.npz", image=a, depth=b)

  workbench run net.mdla photos/ --out-dir maps/ --save-outputs maps/out.npz
"""


def manifest_inputs(
    manifest: mdla_runtime.Manifest, names: list[str], contract: ct.Contract | None = None
) -> list[tuple[str, Array]]:
    """(name, model input) per image or .npy/.npz file of a one-input model (`manifest_samples`);
    a model of several inputs is refused."""
    if len(manifest.inputs) != 1:
        raise WorkbenchError(
            f"`{manifest.name}` has {len(manifest.inputs)} inputs: this command feeds a model "
            "one input (`run` takes .npz files of one array per input)",
            BAD_INPUT,
        )
    return [(name, xs[0]) for name, xs in manifest_samples(manifest, names, contract)]


def manifest_samples(
    manifest: mdla_runtime.Manifest, names: list[str], contract: ct.Contract | None = None
) -> list[tuple[str, list[Array]]]:
    """(name, one array per model input) per image or .npy/.npz file (directories expanded),
    images preprocessed as the manifest records (or as `contract`'s options replace it); an
    .npz's arrays matched to the inputs by name (or in order); no inputs: the sample photos,
    or seeded random inputs for a model without image preprocessing. (The readers guarantee
    a model with preprocessing one NCHW input.)"""
    shapes = tuple(tuple(int(d) for d in i.model_shape) for i in manifest.inputs)
    pre = ct.apply(contract or ct.Contract(), manifest.provenance.preprocess, shapes, manifest.name)
    if pre is None and not names:
        return [("random", [random_input(s) for s in shapes])]
    for n in names:
        if Path(n).is_file() and is_written(n):
            raise WorkbenchError(
                f"`{n}` is a file workbench wrote (a picture or saved outputs), not an input: "
                "give the photo or array it came from",
                BAD_INPUT,
            )
    keys = [i.name for i in manifest.inputs]
    return [
        (Path(n).name, ins.load_sample(n, shapes, _prep(pre, Path(n).name), manifest.name, keys))
        for n in ins.expand(names or list(imgs.SAMPLES))
    ]


def _prep(pre: Preprocess | None, name: str) -> Callable[[Array], Array] | None:
    """The preprocessing of image `name`, warning on stderr when it is far smaller than the
    model's input (a 1x1 picture would otherwise be classified without a word)."""
    if pre is None:
        return None

    def prep(image: Array) -> Array:
        size = (int(pre.size[0]), int(pre.size[1]))
        warning = imgs.tiny_warning(name, image, size)
        if warning:
            typer.echo(warning, err=True)
        return imgs.prepare_record(image, pre)

    return prep


def random_input(shape: tuple[int, ...], chunk: int = 1 << 20) -> Array:
    """The seeded uniform [-1, 1) float32 input of a model without image preprocessing, drawn
    `chunk` values at a time into the one float32 array (the same values as one float64 draw
    cast, without its 8 bytes per element)."""
    rng, x = np.random.default_rng(0), np.empty(shape, np.float32)
    flat = x.reshape(-1)
    for k in range(0, flat.size, chunk):
        flat[k : k + chunk] = rng.uniform(-1, 1, min(chunk, flat.size - k))
    return x


@options()
def run_command(
    manifest_path: Annotated[Path, typer.Argument(metavar="OUT.mdla", help="Compiled model.")],
    images: Annotated[
        list[str] | None,
        typer.Argument(
            help="Image files, sample names, .npy/.npz inputs or directories (default: samples); "
            "a model of several inputs takes .npz files, one array per input named after it "
            "(or arr_0, arr_1, ... in the inputs' order)."
        ),
    ] = None,
    on: On = "emu",
    device: Device = NPU,
    repeat: Annotated[int, typer.Option("--repeat", min=1, help="Timed runs per image.")] = 1,
    warmup: Annotated[
        int, typer.Option("--warmup", min=0, help="Untimed runs per image before the timed ones.")
    ] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    max_tensor_mb: MaxTensorMb = None,
    max_total_mb: MaxTotalMb = None,
    max_header_values: MaxHeaderValues = None,
    max_op_gops: MaxOpGops = None,
    max_total_gops: MaxTotalGops = None,
    timeout: Timeout = None,
    out_dir: OutDir = None,
    save_outputs: SaveOutputs = None,
    fp32: Fp32 = None,
    no_fp32: NoFp32 = False,
    save_inputs: adb.SaveInputs = None,
    load_outputs: adb.LoadOutputs = None,
    *,
    inputs: InputFlags,
    model: FloatModel = None,
    weights: Weights = None,
    importer: FloatImport = None,
    debug: Debug = False,
) -> None:
    """Run OUT.mdla on the target: top-5 labels per image (when the manifest has labels),
    latency over --repeat timed runs after --warmup untimed ones (median, p90, p99, min and
    std with --repeat > 1), and the device that ran it. Every file run writes goes into
    --out-dir (default ./mdla-out/), never beside an input. A segmentation model's class map
    ([1, K, H, W] at the input's H x W) is written as a PNG, FP32 | INT8 (the FP32 side is the
    float graph compile stored beside OUT.mdla, or the model --model names, with --weights if
    it was compiled with some; a .mdla never names code to run). A detector's head outputs (a
    manifest with model.postprocess: the zoo's ssdlite320_mobilenet_v3_large, or a factory's
    SSDHeads(your_ssd)) are decoded on the CPU: the best 5 boxes of FP32 and INT8 in the
    photo's pixels, drawn in a PNG. --save-outputs keeps every output of every input.
    --save-inputs writes the engine's input files for a run on the phone by another tool;
    --load-outputs reads that run's output files back and reports them (`workbench/adb.py`)."""
    with reported(debug):
        budget = mdla_runtime.Budget.of(
            max_tensor_mb, max_total_mb, max_header_values, max_op_gops, max_total_gops
        )
        manifest = pipeline.load_manifest(manifest_path, budget)
        mdla_runtime.check_host(manifest, budget)  # before any input is made
        folder = outs.out_dir(out_dir)  # a folder that cannot be made: before any work
        if save_outputs is not None:
            outs.check_save(save_outputs)
        with steps() as s:  # on stderr, ended before the tables: an SSH phone's steps, runs
            target = mdla_runtime.open_target(on, budget, progress=s.remote(on), timeout=timeout)
            contract = inputs.contract()
            if manifest.provenance.random_weights:
                typer.echo(
                    pipeline.random_weights_warning(manifest.provenance.spec or manifest.name),
                    err=True,
                )
            job = _Job(manifest, target, contract, str(weights) if weights else None, model)
            job.import_path = importer.value if importer is not None else None
            job.folder, job.device, job.repeat, job.warmup = folder, device, repeat, warmup
            job.saved = outs.Saved(manifest) if save_outputs is not None else None
            job.fp32 = fp32_on(fp32, no_fp32)
            job.save_inputs, job.load_outputs = save_inputs, load_outputs
            results = job.run_all(images or [], s)
            if job.saved is not None and save_outputs is not None:
                job.saved.write(save_outputs)
        if as_json:
            saved = {"saved_outputs": str(save_outputs)} if save_outputs is not None else {}
            saved |= {"saved_inputs": str(save_inputs)} if save_inputs is not None else {}
            saved |= {"loaded_outputs": str(load_outputs)} if load_outputs is not None else {}
            typer.echo(
                dumps({"model": manifest.name, "target": shown(on), "runs": results, **saved})
            )
            return
        print_table(results, manifest.name, shown(on), repeat)
        for line in run_lines(results):
            typer.echo(line)
        Boxes.print(results, manifest.provenance.random_weights)
        for line in [*job.class_maps.lines(results), *Keypoints.lines(results)]:
            console().print(line, markup=False)
        if save_outputs is not None:
            console().print(f"outputs saved: {save_outputs}", markup=False)
        if save_inputs is not None:
            console().print(f"engine inputs saved: {save_inputs}/<input>/", markup=False)
        if load_outputs is not None:
            console().print(f"outputs loaded from {load_outputs} (not run here)", markup=False)


def fp32_on(fp32: Switch | None, no_fp32: bool) -> bool:
    """`--fp32 on|off`, with `--no-fp32` kept as the spelling of `--fp32 off`; the two
    contradicting each other is a usage error."""
    if no_fp32 and fp32 is Switch.on:
        raise WorkbenchError("--fp32 on and --no-fp32 contradict each other: give one", USAGE)
    return not no_fp32 and fp32 is not Switch.off


class _Job:
    """One `run`'s inputs through the target, with their pictures and saved outputs."""

    folder: Path
    device: str
    repeat: int
    warmup: int
    saved: outs.Saved | None
    fp32: bool = True
    import_path: str | None = None  # --import: how --model is captured (None: as recorded)
    save_inputs: Path | None = None  # --save-inputs DIR
    load_outputs: Path | None = None  # --load-outputs DIR

    def __init__(
        self,
        manifest: mdla_runtime.Manifest,
        target: Any,
        contract: ct.Contract,
        weights: str | None,
        model: str | None,
    ) -> None:
        self.manifest, self.target, self.contract = manifest, target, contract
        self.weights, self.model = weights, model
        self.labels = contract.labels if contract.labels is not None else manifest.provenance.labels
        self.kinds = kinds.of_manifest(manifest)  # what each output is (recorded at compile)

    def run_all(self, images: list[str], s: Any) -> list[dict[str, Any]]:
        """Each input run once (after --warmup, --repeat times), its record, in order."""
        floats = dense.FloatSide(
            self.manifest, self.weights, self.model, self.folder, import_path=self.import_path
        )
        if not self.fp32:
            floats.switch_off()
        self.class_maps = dense.ClassMaps(
            self.manifest, self.weights, self.model, self.folder, floats, self.preprocess()
        )
        boxes = Boxes(self.manifest, self.weights, self.model, self.folder, floats)
        points = Keypoints(
            self.manifest, self.weights, self.model, self.folder, floats, self.preprocess()
        )
        paths = ins.expand(images) if images else []  # a picture is named after its image
        todo = manifest_samples(self.manifest, images, self.contract)
        tick = s.bar("running", total=len(todo))
        results = []
        for k, (name, x) in enumerate(todo):
            s.describe(f"running {name}")
            if self.save_inputs is not None:
                adb.save_inputs(self.manifest, self.save_inputs, name, x)
            r = (
                adb.load_outputs(self.manifest, self.load_outputs, name, len(todo))
                if self.load_outputs is not None
                else self.target.run(
                    self.manifest, x, devices=(self.device,), repeat=self.repeat, warmup=self.warmup
                )
            )
            entry = self.entry(name, r)
            image = paths[k] if k < len(paths) else name
            entry |= self.class_maps.entry(image, x, r.outputs)
            entry |= boxes.entry(image, x, r.outputs)
            entry |= points.entry(image, x, r.outputs)
            if self.saved is not None:
                self.saved.add(name, r.outputs, r.raw_outputs, floats.float_outputs(x))
            results.append(entry)
            tick(k + 1)
        return results

    def preprocess(self) -> Preprocess | None:
        """How the photos are prepared: the manifest's record, or the options replacing it."""
        shape = tuple(int(d) for d in self.manifest.inputs[0].model_shape)
        record = self.manifest.provenance.preprocess
        return ct.apply(self.contract, record, (shape,), self.manifest.name)

    def entry(self, name: str, r: Any) -> dict[str, Any]:
        """The record of one run: image, device, latency, top-5 or the output's shape."""
        logits = r.outputs[0]
        entry: dict[str, Any] = {
            "image": name,
            "device": r.device,
            "latency_ms": r.latency_stats(),
            "warmup": self.warmup,
        }
        entry |= run_fields(r)  # a partitioned manifest: where each partition ran
        entry["kind"] = self.kinds[0]
        if self.kinds[0] == LOGITS:
            entry["top5"] = [
                {"index": i, "label": lab, "p": round(p, 4)}
                for i, lab, p in imgs.top_k(logits, self.labels, 5)
            ]
        else:
            entry["output"] = {"shape": list(logits.shape), "mean": float(logits.mean())}
        if self.kinds[0] == KEYPOINTS:  # (x, y): a heatmap's argmax cell, or the coordinates
            entry["keypoints"] = ag.keypoints(logits)[0].tolist()
        return entry
