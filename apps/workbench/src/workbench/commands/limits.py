"""`run`'s limits on what a manifest may ask of the host (`mdla_runtime.Budget`) and of time."""

from __future__ import annotations

from typing import Annotated

import typer

MaxTensorMb = Annotated[
    int | None,
    typer.Option(
        "--max-tensor-mb", min=1, help="Refuse a manifest with a tensor over N MiB (256)."
    ),
]
MaxTotalMb = Annotated[
    int | None,
    typer.Option(
        "--max-total-mb",
        min=1,
        help="Refuse a manifest whose tensors sum over N MiB, or whose inputs and outputs would "
        "hold more here (1024).",
    ),
]
MaxHeaderValues = Annotated[
    int | None,
    typer.Option(
        "--max-header-values",
        min=1,
        help="Refuse a header of more than N msgpack values (1048576).",
    ),
]
MaxOpGops = Annotated[
    int | None,
    typer.Option(
        "--max-op-gops",
        min=1,
        help="Refuse an operation of over N billion multiply-adds or compares (16).",
    ),
]
MaxTotalGops = Annotated[
    int | None,
    typer.Option(
        "--max-total-gops",
        min=1,
        help="Refuse a manifest whose operations sum over N billion (256).",
    ),
]
Timeout = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        min=0.001,
        metavar="SECONDS",
        help="Stop an engine run that takes longer (exit 4; default an hour).",
    ),
]
