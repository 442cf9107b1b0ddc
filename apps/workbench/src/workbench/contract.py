"""The input contract options of `compile`, `validate` and `run`, and the record they make.

    --input-shape 1,3,H,W    the model's input (another image size; a model file's input)
    --preset NAME            imagenet | tf | minus1to1 (alias inception) | zero1
    --mean R,G,B --std R,G,B on pixels scaled to [0, 1] (override the preset's)
    --channels rgb|bgr       the order the model takes (mean/std in that order)
    --resize N               short side before the centre crop (default: side / 0.875)
    --crop center|none       none: the whole photo resized to H,W (aspect not kept)
    --labels FILE            class names, one a line
    --arg key=value          a keyword argument for a `file.py:name` factory (repeatable)

`compile` stores the result in the manifest (`model.preprocess`, `model.labels`), so
`run OUT.mdla IMAGE` needs none of them; given to `run`, they replace the stored ones. The
record and its checks are `mdla_compile.contract`'s; these are its Typer options.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mdla_compile.contract import Contract, apply, contract_from, read_labels

__all__ = ["Contract", "apply", "contract_from", "read_labels"]

InputShape = Annotated[
    str | None,
    typer.Option(
        "--input-shape",
        metavar="N,C,H,W",
        help="The model's input shape, e.g. 1,3,160,160 (default: the model's own; 1,3,224,224).",
    ),
]
PresetOpt = Annotated[
    str | None,
    typer.Option(
        "--preset",
        help="Normalization: imagenet, tf ((p-127)/128), minus1to1 (alias inception: [-1, 1]), "
        "zero1 ([0, 1]).",
    ),
]
Mean = Annotated[
    str | None,
    typer.Option("--mean", metavar="R,G,B", help="Per-channel mean of pixels scaled to [0, 1]."),
]
Std = Annotated[
    str | None,
    typer.Option("--std", metavar="R,G,B", help="Per-channel std of pixels scaled to [0, 1]."),
]
ChannelsOpt = Annotated[
    str | None, typer.Option("--channels", help="Channel order the model takes: rgb or bgr.")
]
Resize = Annotated[
    int | None,
    typer.Option("--resize", min=1, help="Resize the short side to N px before the centre crop."),
]
Crop = Annotated[
    str | None,
    typer.Option("--crop", help="center (default) or none: resize the whole photo to H,W."),
]
LabelsOpt = Annotated[
    Path | None, typer.Option("--labels", help="Class names, one a line (shown by run).")
]
ArgOpt = Annotated[
    list[str] | None,
    typer.Option("--arg", help="key=value for a file.py:name factory (repeatable)."),
]
