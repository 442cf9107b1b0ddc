"""`Compiled`: a compile's graphs at each stage, its calibration set, and what it wrote.

compiled.float_graph, compiled.device_graph, compiled.qgraph   # imported, legalized, int8
manifest = compiled.save("lite0.mdla", tflite="lite0.tflite")
compiled.export_tflite("lite0.tflite")
report = compiled.report(on="emu", supported=(ok, total))     # what `compile` prints
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import mdla_quant
import mdla_runtime
from mdla_compile import kinds, output
from mdla_compile.placement import output_cosine
from mdla_compile.source import Source, preprocess_record
from mdla_compile.torch_conv import torch_kernels
from mdla_ir import Graph, Provenance
from mdla_quant.compare import TensorStats
from mdla_quant.precision import Choice

if TYPE_CHECKING:
    from mdla_compile.options import CompileOptions
    from mdla_compile.report import Report

Array = np.ndarray[Any, Any]
Progress = Callable[[int, float], None]
LayerProgress = Callable[[int, int, str], None]  # (layer, layers, op name): AdaRound


@dataclass
class Compiled:
    source: Source
    device_graph: Graph
    qgraph: Graph
    calibration: Sequence[list[Array]]
    config: mdla_quant.QuantConfig
    manifest: mdla_runtime.Manifest | None = None  # the last one `save` wrote
    seconds: dict[str, float] = field(default_factory=dict)  # per stage
    options: CompileOptions | None = None  # None: made by `quantize_graph` alone
    path: Path | None = None  # where `save` wrote the .mdla
    tflite: Path | None = None  # ... and the .tflite
    a16: tuple[Choice, ...] = ()  # `--a16 auto`'s choice: each int16 tensor's gain and cost

    @property
    def float_graph(self) -> Graph:
        return self.source.graph

    def save(
        self,
        path: str | Path,
        tflite: str | Path | None = None,
        before_write: Callable[[], None] = lambda: None,
        vet: Callable[[bytes], None] = lambda _blob: None,
        store_float: bool = True,
    ) -> mdla_runtime.Manifest:
        """Write the `.mdla` (and `.tflite`) atomically, and with `store_float` the float
        graph beside it (`output.save`; a throw-away .mdla has no use for it)."""
        graph = self.source.graph if store_float else None
        self.manifest = output.save(self.qgraph, path, tflite, before_write, vet, graph)
        self.path = Path(path)
        self.tflite = Path(tflite) if tflite is not None else None
        return self.manifest

    def export_tflite(self, path: str | Path) -> None:
        """The int8 graph as a .tflite file (LiteRT's reference kernels agree bit for bit)."""
        output.check_output(path, ".tflite")
        mdla_runtime.export_tflite(self.qgraph, path)

    def worst_layers(self, n: int = 5, samples: int = 2) -> list[TensorStats]:
        """The n tensors with the lowest SQNR (int8 reference vs float) over a few calibration
        inputs: `mdla_quant.compare`'s TensorStats."""
        report = mdla_quant.compare(self.device_graph, self.qgraph, self.calibration[:samples])
        return report.worst(n)

    def output_cosine(self) -> float:
        """The first output's cosine, int8 reference vs float, on the first calibration input."""
        return output_cosine(self.device_graph, self.qgraph, self.calibration[0])

    def requantize(self, config: mdla_quant.QuantConfig) -> Compiled:
        """The same source, device graph and calibration quantized with `config` (a sweep over
        settings imports and legalizes once); the options record the new setting."""
        start = time.perf_counter()
        kinds = self.options.output_kinds if self.options is not None else ()
        again = quantize_graph(
            self.source, self.device_graph, self.calibration, config, output_kinds=kinds
        )
        seconds = {**self.seconds, "quantize": time.perf_counter() - start}
        options = self.options
        if options is not None:
            options = dataclasses.replace(
                options, quant=config, target=config.target, device=config.device
            )
        again.options, again.seconds = options, seconds
        return again

    def report(self, on: str = "emu", supported: tuple[int, int] | None = None) -> Report:
        """What `workbench compile` prints (after `save`): `supported` is the device's own
        answer (ok, total) on target `on`."""
        from mdla_compile.report import build

        return build(self, on, supported)


def quantize_graph(
    source: Source,
    device_graph: Graph,
    calibration: Sequence[list[Array]],
    config: mdla_quant.QuantConfig,
    progress: Progress | None = None,
    layer_progress: LayerProgress | None = None,
    output_kinds: Sequence[str] = (),
) -> Compiled:
    """Calibrate and quantize `device_graph`; the int8 graph's provenance records the model
    (spec, labels, preprocessing, a detector's decoding, random weights, each output's kind:
    `mdla_compile.kinds`' guess with the `--output-kind NAME=KIND` values of `output_kinds`)."""
    qgraph = mdla_quant.quantize(
        device_graph,
        calibration,
        config,
        progress=progress,
        layer_progress=layer_progress,
        kernels=torch_kernels(),
    )
    prov = dataclasses.replace(
        qgraph.provenance,
        spec=source.recorded_spec or source.spec,
        labels=tuple(source.labels or ()),
        preprocess=preprocess_record(source),
        postprocess=source.postprocess,
        random_weights=source.random_weights,
    )
    prov = dataclasses.replace(prov, output_kinds=decided_kinds(qgraph, prov, output_kinds))
    return Compiled(source, device_graph, qgraph.with_(provenance=prov), calibration, config)


def decided_kinds(qgraph: Graph, prov: Provenance, values: Sequence[str]) -> tuple[str, ...]:
    """Each output's kind (`mdla_compile.kinds`): the guess, then the named overrides."""
    outs = kinds.graph_outputs(qgraph)
    shape = qgraph.model_shape(qgraph.inputs[0]) if qgraph.inputs else ()
    detector = kinds.has_decoder(outs, shape, prov.postprocess, prov.spec, prov.module)
    guessed = kinds.guess(outs, shape, prov.postprocess, prov.spec, prov.module)
    return kinds.overridden(guessed, outs, values, detector)
