"""A model spec resolved and imported: the float graph and how it wants its inputs.

source = load_source("efficientnet_lite0")          # imports torch (on use)
source = load_source("net.py:build", contract=Contract(input_shape=(1, 3, 64, 64)),
                     args=("width=0.5",))
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import mdla_ir
import mdla_zoo
from mdla_compile.contract import Contract
from mdla_compile.contract import apply as apply_contract
from mdla_compile.errors import CompileError, OptionError
from mdla_compile.images import prepare_record
from mdla_ir import DEFAULT_PATH, Graph, Postprocess, Preprocess
from mdla_zoo.specs import is_code_spec, is_model_file, parse_cli_args

Array = np.ndarray[Any, Any]


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
    import_path: str = ""  # the path that imported it: "export" or "fx" (mdla_ir.Imported)
    import_note: str = ""  # why auto took the path it took ("" for an explicit --import)

    @property
    def image_size(self) -> tuple[int, int]:
        shape = self.input_shapes[0]
        return (shape[2], shape[3])

    @property
    def takes_images(self) -> bool:
        """One input, with image preprocessing: photos can be its inputs."""
        return self.preprocess is not None and len(self.input_shapes) == 1


def is_manifest(spec: str) -> bool:
    return spec.endswith(".mdla")


def model_name(spec: str) -> str:
    """The graph's name: a factory's name (`my_net.py:build(2)` -> build), a file's stem."""
    head = spec.split("(", 1)[0]
    if ":" in head:
        return head.rpartition(":")[2]
    return Path(spec).stem if is_model_file(spec) else spec


def load_source(
    spec: str | mdla_zoo.Model,
    weights: str | None = None,
    contract: Contract | None = None,
    args: Sequence[str] = (),
    import_path: str = DEFAULT_PATH,
) -> Source:
    """Resolve and import a model spec (torchvision name, efficientnet_lite0, file.py:name,
    a model file), or a model already built; `contract` (the input options) and `args`
    (`--arg key=value`) apply; `import_path` is `mdla_ir.import_torch`'s path (under auto, its
    note says which path it took and why: `Source.import_note`)."""
    if not isinstance(spec, str):
        return _source(spec, spec.name, None, contract or Contract(), {}, import_path)
    if is_manifest(spec):
        raise OptionError(
            f"`{spec}` is a compiled manifest; this needs a model spec (e.g. squeezenet1_1)"
        )
    contract = contract or Contract()
    if contract.input_shape is not None and contract.normalizes:
        apply_contract(contract, None, (contract.input_shape,), spec)  # fails before loading
    try:
        kwargs = parse_cli_args(args)
    except mdla_zoo.ZooError as exc:  # a malformed --arg is a usage error
        raise OptionError(str(exc)) from None
    model = mdla_zoo.load_model(spec, weights, args=kwargs, input_shape=contract.input_shape)
    return _source(model, spec, model_name(spec), contract, kwargs, import_path)


def _source(
    model: mdla_zoo.Model,
    spec: str,
    name: str | None,
    contract: Contract,
    kwargs: dict[str, Any],
    import_path: str,
) -> Source:
    """`model` imported (`name`: the graph's; None: its module's class name)."""
    imported = mdla_ir.import_torch(model.module, model.example_inputs, name=name, path=import_path)
    graph = imported.graph
    chosen = import_path == "auto"  # auto says which path it took and why
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
        notes=model.notes,
        postprocess=post,
        recorded_spec=recorded_spec(spec, kwargs),
        import_path=imported.path,
        import_note=imported.note if chosen else "",
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
        raise CompileError(f"model `{source.spec}` records no image preprocessing")
    return prepare_record(image, record)


def random_weights_warning(spec: str) -> str:
    """The one-line warning for a model compiled, or run, with random weights."""
    return (
        f"warning: `{spec}` has random weights (no --weights, and nothing it builds loads "
        "any): its outputs and labels mean nothing; give --weights FILE (a state dict)"
    )


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
