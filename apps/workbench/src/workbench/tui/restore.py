"""What a `.mdla` records about how it was compiled, as the TUI's compile options, and the
warnings a freshly opened model deserves.

    options = recorded_options(manifest, given)     # spec, input contract, quant, target
    source, device_graph = stored_source(manifest)  # its stored float graph: nothing imported
    missing = missing_file(options, "net.mdla")     # "model file `net.py` ... is missing"
    why = mismatch(manifest, compiled, "net.mdla")  # the spec no longer builds that model

A `.mdla` is data: Calibrate re-quantizes the float graph `compile` stored beside it. Without
one (an older file), the spec it records is shown (in the compile form, in Calibrate's prompt)
and imported only once the user accepts it there, never on opening the file. What the manifest
does not record (the weights file, the calibration folder, `--cpu` patterns, the import path)
comes from the options the TUI was started with (`workbench tui OUT.mdla --weights W.pt`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import mdla_compile
import mdla_quant
import mdla_runtime
from mdla_compile import Compiled, CompileOptions, Source
from mdla_compile.contract import Contract
from mdla_ir import Graph, Preprocess
from mdla_ir.stored import sidecar
from mdla_zoo.contract import PRESETS
from mdla_zoo.specs import is_code_spec, is_model_file
from workbench import dense
from workbench.errors import WorkbenchError

DEFAULT_SHAPE = (1, 3, 224, 224)  # what mdla_zoo traces a model at when nothing says otherwise


def recorded_options(manifest: mdla_runtime.Manifest, given: CompileOptions) -> CompileOptions:
    """`given` with the manifest's spec, input shape, image options, labels, quantization
    setting, target, device and output kinds written in (what the manifest does not record
    stays `given`'s)."""
    prov = manifest.provenance
    shape = tuple(int(d) for d in manifest.inputs[0].model_shape)
    contract = dataclasses.replace(
        _image_options(prov.preprocess),
        input_shape=shape if len(manifest.inputs) == 1 else None,
        labels=tuple(prov.labels) or given.contract.labels,
    )
    quant = given.quant
    if prov.quant is not None:
        fields = {f.name: getattr(prov.quant, f.name) for f in dataclasses.fields(prov.quant)}
        quant = mdla_quant.QuantConfig(**fields)
    return dataclasses.replace(
        given,
        model=prov.spec or given.spec,
        contract=contract,
        quant=quant,
        target=prov.target or given.target,
        device=prov.device or given.device,
        output_kinds=tuple(
            f"{o.name}={k}" for o, k in zip(manifest.outputs, prov.output_kinds, strict=True)
        )
        or given.output_kinds,
    )


def _image_options(record: Preprocess | None) -> Contract:
    """A preprocess record as the options that make it again (none for a model's own mode,
    such as a detector's `stretch`, which re-importing the model gives back by itself)."""
    if (
        record is None
        or not record.mean
        or (record.mode not in PRESETS and record.mode != "custom")
    ):
        return Contract()
    return Contract(
        preset=record.mode if record.mode in PRESETS else None,
        mean=tuple(record.mean),
        std=tuple(record.std),
        channels=record.channels,
        resize=record.resize or None,
        crop="none" if record.resize == 0 else None,
    )


def spec_file(spec: str) -> Path | None:
    """The file a spec reads its model from (`net.py` of `net.py:Net`, a `.pt`), if any."""
    if is_code_spec(spec):
        where = spec.split("(", 1)[0].rpartition(":")[0]
        return Path(where) if where.endswith(".py") else None
    return Path(spec) if is_model_file(spec) else None


def missing_file(options: CompileOptions, manifest: str) -> str | None:
    """Which recorded or given file is not there (from the current directory), and the fix."""
    file = spec_file(options.spec)
    if file is not None and not file.is_file():
        return (
            f"the model file `{file}` that {manifest} records is missing (from {Path.cwd()}): "
            "start the TUI in the folder it was compiled from, or type the spec's path"
        )
    if options.weights is not None and not Path(options.weights).is_file():
        return f"weights `{options.weights}` are missing: give the state-dict file (c: weights)"
    return None


def mismatch(manifest: mdla_runtime.Manifest, compiled: Compiled, path: str) -> str | None:
    """Why `compiled` (the recorded spec imported again) is not the model `path` holds:
    its code or weights differ (None: the same model, by the source hash both record)."""
    recorded = manifest.provenance.source_hash
    if not recorded or recorded == compiled.source.graph.provenance.source_hash:
        return None
    given = compiled.options.weights if compiled.options is not None else None
    hint = (
        f"weights `{given}` are not the ones it was compiled with"
        if given
        else "it was compiled with weights: give them (c: weights, or --weights)"
    )
    return f"`{compiled.source.spec}` imported now is not the model in {path}: {hint}"


def shape_warning(options: CompileOptions, compiled: Compiled) -> str | None:
    """A model file or `file.py:name` opened without an input shape and traced at the default
    1,3,224,224: it may take another size (a 64x64 model would compile at the wrong one)."""
    spec = options.spec
    shapes = compiled.source.input_shapes
    if options.contract.input_shape is not None or shapes != (DEFAULT_SHAPE,):
        return None
    if not (is_code_spec(spec) or is_model_file(spec)):
        return None
    return (
        f"no input shape given: `{spec}` was opened at 1,3,224,224, the default for a model "
        "that gives none; if it takes another size, set it (c: input shape)"
    )


def random_warning(compiled: Compiled) -> str | None:
    if not compiled.source.random_weights:
        return None
    return (
        f"`{compiled.source.spec}` has random weights: its outputs and labels mean nothing; "
        "give its state dict (c: weights)"
    )


def import_recorded(
    recorded: CompileOptions, spec: str, manifest: mdla_runtime.Manifest, path: str
) -> Compiled:
    """The model `path` was compiled from, imported again from `spec` (the recorded spec the
    user accepted, or the path they typed) with the recorded input contract, and legalized;
    quantized once on one random input only to make it whole (Calibrate re-quantizes it).
    A missing file or another model than the one in `path` is an error saying the fix."""
    options = dataclasses.replace(
        recorded,
        model=spec,
        calib="random",
        count=1,
        quant=mdla_quant.QuantConfig(target=recorded.target, device=recorded.device),
    )
    missing = missing_file(options, path)
    if missing is not None:
        raise WorkbenchError(missing)
    compiled = mdla_compile.compile(options)
    why = mismatch(manifest, compiled, path)
    if why is not None:
        raise WorkbenchError(why)
    return compiled


def stored_source(manifest: mdla_runtime.Manifest) -> tuple[Source, Graph]:
    """The model a .mdla was compiled from, without importing anything: the float graph
    `compile` stored beside it (`dense.stored_graph`: data, bound to the file's bytes) with
    the manifest's input contract, and that graph legalized again for its target and device.
    A float graph that is unreadable or stale (written for another build) is an error saying
    so and the fix."""
    graph, why = dense.stored_graph(manifest)
    if graph is None:
        raise WorkbenchError(f"Calibrate needs the model's float graph: {why}")
    prov = manifest.provenance
    pre = prov.preprocess
    source = Source(
        prov.spec or manifest.name,
        graph,
        tuple(tuple(int(d) for d in graph.tensors[i].shape) for i in graph.inputs),
        pre.mode if pre is not None else None,
        tuple(prov.labels) or None,
        prov.random_weights,
        record=pre,
        postprocess=prov.postprocess,
    )
    return source, mdla_compile.legalize_graph(graph, prov.target, prov.device)


def has_stored(manifest: mdla_runtime.Manifest | None) -> bool:
    """A float graph stored beside the manifest's file (read and checked on use)."""
    return manifest is not None and manifest.path is not None and sidecar(manifest.path).is_file()


def shape_error(options: CompileOptions, exc: BaseException) -> str | None:
    """The one line for a model file or `file.py:name` that fails to import at the default
    1,3,224,224 because it takes another size (torch's RuntimeError, e.g. a Linear head sized
    for 64x64), or None for any other failure (that error is said as it is)."""
    spec = options.spec
    if options.contract.input_shape is not None or not (is_code_spec(spec) or is_model_file(spec)):
        return None
    root = exc
    while root.__cause__ is not None:
        root = root.__cause__
    if not isinstance(root, RuntimeError):
        return None
    said = (str(root).strip().splitlines() or [type(root).__name__])[0]
    said = said if len(said) <= 120 else said[:119] + "…"
    return (
        f"`{spec}` does not run at 1,3,224,224, the default for a model that gives no input "
        f"shape ({said}): set its input shape (c: input shape, or --input-shape N,C,H,W)"
    )


def weights_hint(manifest: mdla_runtime.Manifest | None) -> str | None:
    """The compile form's weights placeholder for a .mdla of a `file.py:name` model compiled
    with weights (the file records that it had some, not which file)."""
    if manifest is None or manifest.provenance.random_weights:
        return None
    if not is_code_spec(manifest.provenance.spec):
        return None
    return "compiled with weights the .mdla does not name: the state dict .pt"
