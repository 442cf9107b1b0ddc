"""Compile: model spec -> float graph -> device graph -> int8 graph -> .mdla, shared by the CLI,
the TUI and the demo.

    source = load_source("efficientnet_lite0")                 # imports torch (on use)
    device = legalize_graph(source.graph, "mdla3.5")            # LegalizeError lists what fails
    calib = calibration_inputs("samples", source, count=6)
    compiled = quantize_graph(source, device, calib, QuantConfig(), progress=cb)
    manifest = save_manifest(compiled, "lite0.mdla")

`skip_rules` compiles without named legalize rules (to see what the device says about the
construct the rule would rewrite: `workbench bisect`'s demonstration case).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import mdla_ir
import mdla_legalize
import mdla_quant
import mdla_runtime
import mdla_zoo
from mdla_ir import Graph, Postprocess, Preprocess
from mdla_ir.devices import DEFAULT_TARGET, NPU
from mdla_runtime.atomic import write_atomic
from mdla_zoo.specs import is_code_spec, is_model_file, parse_cli_args
from workbench.contract import Contract
from workbench.contract import apply as apply_contract
from workbench.errors import BAD_INPUT, USAGE, WorkbenchError
from workbench.images import SAMPLES, prepare_record, read_image
from workbench.inputs import LazyInputs, input_files

Array = np.ndarray[Any, Any]
Progress = Callable[[int, float], None]
LayerProgress = Callable[[int, int, str], None]  # (layer, layers, op name): AdaRound


@dataclass(frozen=True)
class Source:
    """A model spec resolved and imported: the float graph plus how it wants its inputs."""

    spec: str
    graph: Graph
    input_shapes: tuple[tuple[int, ...], ...]
    preprocess: str | None
    labels: tuple[str, ...] | None
    random_weights: bool = False
    record: Preprocess | None = None  # the input contract's, when options set one
    notes: tuple[str, ...] = ()  # what loading the model did (mdla_zoo.Model.notes)
    postprocess: Postprocess | None = None  # a detector's CPU decoding (mdla_zoo.Model.decoder)
    recorded_spec: str = ""  # the spec the manifest records (`recorded_spec`), if not `spec`

    @property
    def image_size(self) -> tuple[int, int]:
        shape = self.input_shapes[0]
        return (shape[2], shape[3])


@dataclass
class Compiled:
    source: Source
    device_graph: Graph
    qgraph: Graph
    calibration: Sequence[list[Array]]
    config: mdla_quant.QuantConfig
    manifest: mdla_runtime.Manifest | None = None
    seconds: dict[str, float] = field(default_factory=dict)


def is_manifest(spec: str) -> bool:
    return spec.endswith(".mdla")


def model_name(spec: str) -> str:
    """The graph's name: a factory's name (`my_net.py:build(2)` -> build), a file's stem."""
    head = spec.split("(", 1)[0]
    if ":" in head:
        return head.rpartition(":")[2]
    return Path(spec).stem if is_model_file(spec) else spec


def load_source(
    spec: str,
    weights: str | None = None,
    contract: Contract | None = None,
    args: Sequence[str] = (),
    import_path: str = "fx",
) -> Source:
    """Resolve and import a model spec (torchvision name, efficientnet_lite0, file.py:name,
    a model file); `contract` (the input options) and `args` (`--arg key=value`) apply;
    `import_path` is `mdla_ir.import_torch`'s path (its note joins the notes)."""
    if is_manifest(spec):
        raise WorkbenchError(
            f"`{spec}` is a compiled manifest; this needs a model spec (e.g. squeezenet1_1)", USAGE
        )
    contract = contract or Contract()
    if contract.input_shape is not None and contract.normalizes:
        apply_contract(contract, None, (contract.input_shape,), spec)  # fails before loading
    try:
        kwargs = parse_cli_args(args)
    except mdla_zoo.ZooError as exc:  # a malformed --arg is a usage error
        raise WorkbenchError(str(exc), USAGE) from None
    model = mdla_zoo.load_model(spec, weights, args=kwargs, input_shape=contract.input_shape)
    imported = mdla_ir.import_torch(
        model.module, model.example_inputs, name=model_name(spec), path=import_path
    )
    graph = imported.graph
    shapes = tuple(tuple(int(d) for d in x.shape) for x in model.example_inputs)
    labels = contract.labels if contract.labels is not None else model.labels
    post = model.decoder.record() if model.decoder is not None else None
    source = Source(
        spec,
        graph,
        shapes,
        model.preprocess,
        labels,
        model.random_weights,
        notes=model.notes + ((f"note: {imported.note}",) if imported.note else ()),
        postprocess=post,
        recorded_spec=recorded_spec(spec, kwargs),
    )
    record = apply_contract(contract, preprocess_record(source), shapes, spec)
    if not contract.touches_images:
        return source
    mode = record.mode if record is not None else None
    return dataclasses.replace(source, preprocess=mode, record=record)


def recorded_spec(spec: str, kwargs: dict[str, Any]) -> str:
    """The spec a manifest records: a `file.py:name` spec with its `--arg` values written in as
    literal arguments (`net.py:build(width=0.5)`: `parse_spec` reads them back as the same
    keyword arguments, each a literal whose repr is itself), so `run` re-imports the very model
    for its FP32 side; any other spec as given."""
    if not kwargs or not is_code_spec(spec) or "(" in spec:
        return spec
    return f"{spec}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})"


def prepare_image(source: Source, image: Array) -> Array:
    """A photo as `source`'s input, under its preprocess record (the manifest's, later)."""
    record = preprocess_record(source)
    if record is None:
        raise WorkbenchError(f"model `{source.spec}` records no image preprocessing")
    return prepare_record(image, record)


def random_weights_warning(spec: str) -> str:
    """The one-line warning for a model compiled, or run, with random weights."""
    return (
        f"warning: `{spec}` has random weights (no --weights, and nothing it builds loads "
        "any): its outputs and labels mean nothing; give --weights FILE (a state dict)"
    )


def rule_names() -> list[str]:
    return mdla_legalize.known_rules()


def legalize_graph(
    graph: Graph, target: str = DEFAULT_TARGET, device: str = NPU, skip_rules: Sequence[str] = ()
) -> Graph:
    """The device graph; with `skip_rules` the named rules never fire and the result is not
    required to map (the device then says what it thinks of it)."""
    tgt = mdla_legalize.load_target(target)
    try:
        return mdla_legalize.legalize(graph, tgt, device, skip_rules=skip_rules)
    except mdla_legalize.UnknownRuleError as exc:
        raise WorkbenchError(str(exc), USAGE) from None


def calibration_inputs(
    calib: str, source: Source, count: int, seed: int = 0
) -> Sequence[list[Array]]:
    """`samples` (scikit-image photos), `random` (uniform [-1, 1]) or a directory of images
    and .npy/.npz arrays: its first `count` files by name, each read when quantize reaches it
    (`inputs.LazyInputs`)."""
    if count < 1:
        raise WorkbenchError(f"--count must be at least 1, got {count}", USAGE)
    if calib == "random":
        rng = np.random.default_rng(seed)
        return [
            [rng.uniform(-1, 1, shape).astype(np.float32) for shape in source.input_shapes]
            for _ in range(count)
        ]
    takes_images = source.preprocess is not None and len(source.input_shapes) == 1
    if calib != "samples":
        files = input_files(calib)[:count]
        prep = (lambda image: prepare_image(source, image)) if takes_images else None
        return LazyInputs(files, source.input_shapes, prep, source.spec)
    if not takes_images:
        raise WorkbenchError(
            f"model `{source.spec}` records no image preprocessing: give --preset (imagenet, "
            "tf, minus1to1, zero1) or --mean/--std to calibrate it on photos, or --calib "
            "random, or --calib DIR of .npy/.npz inputs"
        )
    return [[prepare_image(source, read_image(i))] for i in list(SAMPLES)[:count]]


def quantize_graph(
    source: Source,
    device_graph: Graph,
    calibration: Sequence[list[Array]],
    config: mdla_quant.QuantConfig,
    progress: Progress | None = None,
    layer_progress: LayerProgress | None = None,
) -> Compiled:
    qgraph = mdla_quant.quantize(
        device_graph, calibration, config, progress=progress, layer_progress=layer_progress
    )
    prov = dataclasses.replace(
        qgraph.provenance,
        spec=source.recorded_spec or source.spec,
        labels=tuple(source.labels or ()),
        preprocess=preprocess_record(source),
        postprocess=source.postprocess,
        random_weights=source.random_weights,
    )
    return Compiled(source, device_graph, qgraph.with_(provenance=prov), calibration, config)


def preprocess_record(source: Source) -> Preprocess | None:
    """The model's image preprocessing as the manifest records it: mean/std apply to pixels
    scaled to [0, 1] ("tf": (p - 127) / 128 = (p/255 - 127/255) / (128/255))."""
    if source.record is not None:
        return source.record
    mode = source.preprocess
    if mode is None or len(source.input_shapes) != 1 or len(source.input_shapes[0]) != 4:
        return None
    if mode == "imagenet":
        mean = tuple(float(v) for v in mdla_zoo.IMAGENET_MEAN)
        std = tuple(float(v) for v in mdla_zoo.IMAGENET_STD)
    elif mode == "stretch":  # (p/255 - 0.5) / 0.5, the whole photo resized
        mean, std = (0.5,) * 3, (0.5,) * 3
    else:
        mean, std = (127 / 255,) * 3, (128 / 255,) * 3
    return Preprocess(mode, source.image_size, mean, std)


def save_manifest(
    compiled: Compiled,
    out: str | Path,
    tflite: str | Path | None = None,
    before_write: Callable[[], None] = lambda: None,
    vet: Callable[[bytes], None] = lambda _blob: None,
) -> mdla_runtime.Manifest:
    """Write the `.mdla` (and the `.tflite`, if asked) atomically. Everything that can fail is
    done before the first file is replaced: `vet(blob)` may refuse the bytes about to be
    written (compile's device support query); `before_write` runs last (an interrupt check)."""
    path = Path(out)
    check_output(path, ".mdla")
    tflite_blob = None
    if tflite is not None:
        check_output(tflite, ".tflite")
        tflite_blob = mdla_runtime.tflite_bytes(compiled.qgraph)
    try:
        blob = mdla_runtime.to_bytes(compiled.qgraph)
    except mdla_runtime.ManifestError as exc:
        raise exc.in_file(path) from None
    # The writer's own file: every check but the budget, which guards readers against hostile
    # files; a model over it compiles, and `run` names the flag that raises the limit.
    manifest = mdla_runtime.parse(blob, path, mdla_runtime.Budget.UNLIMITED)
    vet(blob)
    before_write()
    write_atomic(path, blob)
    if tflite is not None and tflite_blob is not None:
        write_atomic(tflite, tflite_blob)
    compiled.manifest = manifest
    return manifest


def compile_model(
    spec: str,
    weights: str | None = None,
    calib: str = "samples",
    count: int = 6,
    config: mdla_quant.QuantConfig | None = None,
    target: str = DEFAULT_TARGET,
    skip_rules: Sequence[str] = (),
    progress: Progress | None = None,
    contract: Contract | None = None,
    args: Sequence[str] = (),
    import_path: str = "fx",
) -> Compiled:
    """Import, legalize, calibrate and quantize `spec` (the manifest is not written)."""
    source = load_source(spec, weights, contract, args, import_path)
    config = config or mdla_quant.QuantConfig(target=target)
    device = legalize_graph(source.graph, target, config.device, skip_rules)
    calibration = calibration_inputs(calib, source, count)
    return quantize_graph(source, device, calibration, config, progress)


def worst_layers(compiled: Compiled, n: int = 5, samples: int = 2) -> list[Any]:
    """The n tensors with the lowest SQNR (int8 reference vs float) over a few calibration
    inputs: `mdla_quant.compare`'s TensorStats."""
    report = mdla_quant.compare(
        compiled.device_graph, compiled.qgraph, compiled.calibration[:samples]
    )
    return report.worst(n)


def load_manifest(
    path: str | Path, budget: mdla_runtime.Budget | None = None
) -> mdla_runtime.Manifest:
    """The manifest at `path` (a ManifestError names the file, the field and the byte)."""
    if Path(path).is_dir():
        raise WorkbenchError(f"manifest `{path}` is a directory; a .mdla is a file")
    if not Path(path).is_file():
        if Path(path).suffix == "" or ":" in str(path):  # a model spec, not a compiled model
            raise WorkbenchError(
                f"`{path}` is not a manifest (.mdla): compile it first, e.g. "
                f"`workbench compile {path} -o {model_name(str(path))}.mdla`",
                USAGE,
            )
        raise WorkbenchError(f"manifest `{path}` does not exist")
    return mdla_runtime.load(path, budget or mdla_runtime.Budget())


def manifest_or_none(spec: str) -> mdla_runtime.Manifest | None:
    return load_manifest(spec) if is_manifest(spec) else None


def check_output(out: str | Path, suffix: str) -> None:
    """Fail early, before any work: the name must be `*.suffix` (exit 2), and the path must be
    writable: its directory exists and is writable, and it is not itself a directory (exit 1)."""
    path = Path(out)
    if path.suffix != suffix:
        raise WorkbenchError(f"output `{out}` must end in {suffix}", USAGE)
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise WorkbenchError(f"output `{out}` is a directory", BAD_INPUT)
    if not parent.is_dir():
        raise WorkbenchError(f"output directory `{parent}` does not exist", BAD_INPUT)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise WorkbenchError(f"output directory `{parent}` is not writable", BAD_INPUT)


def support_count(
    target: mdla_runtime.Target, manifest: mdla_runtime.Manifest, device: str = NPU
) -> tuple[int, int]:
    flags = target.supported(manifest, [device])[device]
    return sum(flags), len(flags)


def support_of_bytes(
    target: mdla_runtime.Target, blob: bytes, device: str = NPU
) -> tuple[int, int]:
    """`support_count` of a manifest not yet written, asked through a private temporary copy
    (the engine reads files), so the answer is known before the real output is replaced."""
    with tempfile.TemporaryDirectory(prefix="workbench-support-") as tmp:
        path = Path(tmp) / "model.mdla"
        path.write_bytes(blob)
        return support_count(target, mdla_runtime.load(path), device)
