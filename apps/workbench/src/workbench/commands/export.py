"""`workbench export`: compile a model and write its int8 graph as .tflite (for LiteRT)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

import mdla_compile
from mdla_compile.source import is_manifest
from mdla_runtime.export.writer import check_rounding
from workbench.commands.binding import options
from workbench.commands.options import CompileFlags, Debug, console
from workbench.errors import USAGE, WorkbenchError, reported
from workbench.output import steps
from workbench.progress import compile_progress

EPILOG = """Examples:

  workbench export efficientnet_lite0 -o lite0.tflite

  workbench export my_net.py:build --calib random -o net.tflite

  workbench export convnext_tiny --cpu LAYER_NORM,GELU -o cx.tflite
"""


@options()
def export_command(
    model: Annotated[str, typer.Argument(help="Model spec (a .mdla holds no int8 IR to export).")],
    out: Annotated[Path, typer.Option("-o", "--out", help="The .tflite file to write.")],
    flags: CompileFlags,
    debug: Debug = False,
) -> None:
    """Compile MODEL exactly as `compile` does and write the int8 graph as a .tflite file
    (the same graph the .mdla holds: LiteRT's reference kernels agree with it bit for bit).

    With --cpu, the placement table is printed as by `compile`, and the whole partitioned
    model is one .tflite graph (LiteRT places it itself): the CPU partitions' TRANSPOSE, GELU
    (a lookup of the .mdla's own table), LAYER_NORM (float32 builtins) and ARGMAX as TFLite
    builtins. An op with no .tflite form: exit 3, naming it. The input options (--input-shape,
    --preset or --mean/--std, --channels, --resize/--crop) and --arg load and calibrate the
    model as `compile` does with them; the .tflite takes the input shape they give."""
    with reported(debug):
        if is_manifest(model):
            raise WorkbenchError(
                f"`{model}` is a compiled manifest: a .mdla holds Neuron operations, not the int8 "
                "graph; export the model spec with the same options (and --cpu), or write both "
                "at once: `workbench compile MODEL --tflite OUT.tflite -o OUT.mdla`",
                USAGE,
            )
        mdla_compile.check_output(out, ".tflite")
        check_rounding(flags.quant.rounding.value, model)
        with steps() as s:
            compiled = mdla_compile.compile(flags.options(model), on_event=compile_progress(s))
        compiled.export_tflite(out)
        console().print(
            f"wrote {out} ({out.stat().st_size / 1024:.1f} KiB, {len(compiled.qgraph.ops)} ops)",
            markup=False,
        )
