"""`compile`: a model spec through import, legalize (and CPU placement), calibration and
quantization, top to bottom; progress as events (`mdla_compile.events`).

    compiled = compile(CompileOptions("efficientnet_lite0"), on_event=print)
    compiled.save("lite0.mdla")
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import mdla_legalize
from mdla_compile import events as ev
from mdla_compile.a16 import a16_request
from mdla_compile.a16 import resolve as resolve_a16
from mdla_compile.calibration import calibration_inputs
from mdla_compile.compiled import Compiled, quantize_graph
from mdla_compile.kinds import check_output_names
from mdla_compile.options import CompileOptions
from mdla_compile.placement import legalize_graph, place_graph
from mdla_compile.source import Source, load_source
from mdla_ir import Graph
from mdla_legalize.partition import LATER
from mdla_quant.a16 import requantizations_on_cpu


def compile(options: CompileOptions, on_event: ev.OnEvent | None = None) -> Compiled:
    """Import, legalize (placing `options.cpu` on the CPU), calibrate and quantize
    `options.model`; nothing is written (`Compiled.save`)."""
    emit = on_event or ev.ignore
    seconds: dict[str, float] = {}
    with _stage(emit, ev.Stage.IMPORT, options.spec, seconds):
        source = load_source(
            options.model, options.weights, options.contract, options.args, options.import_path
        )
    emit(ev.Imported(source))
    check_output_names(source.graph, options.output_kinds)  # a typo: before the calibration
    for note in source.notes:
        emit(ev.Note(note))
    with _stage(emit, ev.Stage.LEGALIZE, options.target, seconds):
        device_graph = _device_graph(source, options, emit)
        if options.extend is not None:
            device_graph = options.extend(device_graph)
    calibration = calibration_inputs(options.calib, source, options.count, options.seed)
    total = len(calibration)
    with _stage(emit, ev.Stage.QUANTIZE, options.calib_name, seconds, total):
        request = a16_request(options.a16)
        config, chosen = resolve_a16(request, device_graph, calibration, options.config, emit)
        compiled = quantize_graph(
            source,
            device_graph,
            calibration,
            config,
            progress=lambda n, _s: emit(ev.CalibrationTick(n, total)),
            layer_progress=lambda i, n, name: emit(ev.AdaRoundLayer(i, n, name)),
            output_kinds=options.output_kinds,
        )
    if LATER in mdla_legalize.parse_cpu(options.cpu):  # a16's QUANTIZE ops: on the CPU
        compiled.qgraph = requantizations_on_cpu(compiled.qgraph)
    compiled.options, compiled.seconds, compiled.a16 = options, seconds, chosen
    return compiled


def _device_graph(source: Source, options: CompileOptions, emit: ev.OnEvent) -> Graph:
    if not options.cpu:
        return legalize_graph(source.graph, options.target, options.device, options.skip_rules)
    placed = place_graph(
        source.graph, options.target, options.device, options.cpu, options.skip_rules
    )
    emit(ev.Placed(placed))
    return placed.graph


@contextmanager
def _stage(
    emit: ev.OnEvent,
    stage: ev.Stage,
    detail: str,
    seconds: dict[str, float],
    total: int | None = None,
) -> Iterator[None]:
    emit(ev.StageStarted(stage, detail, total))
    start = time.perf_counter()
    yield
    seconds[stage.value] = time.perf_counter() - start
    emit(ev.StageFinished(stage, seconds[stage.value]))
