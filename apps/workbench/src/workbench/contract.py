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
`run OUT.mdla IMAGE` needs none of them; given to `run`, they replace the stored ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from mdla_ir import Preprocess
from mdla_zoo.contract import CHANNELS, PRESETS
from workbench.errors import BAD_INPUT, USAGE, WorkbenchError

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


@dataclass(frozen=True)
class Contract:
    """The options as given (None: not given)."""

    input_shape: tuple[int, ...] | None = None
    preset: str | None = None
    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None
    channels: str | None = None
    resize: int | None = None
    crop: str | None = None
    labels: tuple[str, ...] | None = None

    @property
    def normalizes(self) -> bool:
        return self.preset is not None or self.mean is not None or self.std is not None

    @property
    def touches_images(self) -> bool:
        return self.normalizes or any(
            v is not None for v in (self.channels, self.resize, self.crop)
        )


def contract_from(
    input_shape: str | None = None,
    preset: str | None = None,
    mean: str | None = None,
    std: str | None = None,
    channels: str | None = None,
    resize: int | None = None,
    crop: str | None = None,
    labels: Path | None = None,
) -> Contract:
    """Parse and check the options (a malformed one is a usage error, exit 2)."""
    if preset is not None and preset not in PRESETS:
        raise WorkbenchError(f"--preset `{preset}`: expected one of {', '.join(PRESETS)}", USAGE)
    if channels is not None and channels not in CHANNELS:
        raise WorkbenchError(f"--channels `{channels}`: expected rgb or bgr", USAGE)
    if crop is not None and crop not in ("center", "none"):
        raise WorkbenchError(f"--crop `{crop}`: expected center or none", USAGE)
    if crop == "none" and resize is not None:
        raise WorkbenchError(
            "--resize sets the short side before a crop; --crop none has none", USAGE
        )
    if (mean is None) != (std is None) and preset is None:
        raise WorkbenchError("--mean and --std go together (or start from a --preset)", USAGE)
    return Contract(
        _shape(input_shape),
        preset,
        _triple("--mean", mean),
        _triple("--std", std, positive=True),
        channels,
        resize,
        crop,
        read_labels(labels) if labels is not None else None,
    )


def _shape(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        dims = tuple(int(d) for d in text.replace("x", ",").split(","))
    except ValueError:
        dims = ()
    if not dims or any(d < 1 for d in dims):
        raise WorkbenchError(f"--input-shape `{text}`: expected sizes like 1,3,224,224", USAGE)
    return dims


def _triple(flag: str, text: str | None, positive: bool = False) -> tuple[float, ...] | None:
    if text is None:
        return None
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        values = ()
    if len(values) not in (1, 3):
        raise WorkbenchError(f"{flag} `{text}`: expected 1 or 3 numbers (R,G,B)", USAGE)
    if positive and any(v <= 0 for v in values):
        raise WorkbenchError(f"{flag} `{text}`: every value must be > 0", USAGE)
    if any(abs(v) > 1.5 for v in values):
        raise WorkbenchError(
            f"{flag} `{text}` looks like 0..255 pixels; give it on the [0, 1] scale "
            f"(divide by 255: {','.join(f'{v / 255:.4g}' for v in values)})",
            USAGE,
        )
    return values * 3 if len(values) == 1 else values


MAX_LABELS_BYTES = 4 << 20  # 4 MiB: ImageNet-21k's 21,843 names take 0.4 MiB


def read_labels(path: Path) -> tuple[str, ...]:
    """Class names, one a line; at most MAX_LABELS_BYTES are read (a 1 GiB file, or
    /dev/zero, is refused after that many bytes, not read whole)."""
    try:
        with path.open("rb") as f:
            blob = f.read(MAX_LABELS_BYTES + 1)
        if len(blob) > MAX_LABELS_BYTES:
            raise WorkbenchError(
                f"labels file `{path}` is larger than {MAX_LABELS_BYTES >> 20} MiB: a labels "
                "file holds class names, one a line",
                BAD_INPUT,
            )
        text = blob.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkbenchError(f"cannot read labels `{path}`: {exc}", BAD_INPUT) from None
    names = tuple(line.strip() for line in text.splitlines() if line.strip())
    if not names:
        raise WorkbenchError(f"labels file `{path}` holds no names (one a line)", BAD_INPUT)
    return names


def apply(
    contract: Contract,
    base: Preprocess | None,
    shapes: tuple[tuple[int, ...], ...],
    model: str,
) -> Preprocess | None:
    """`base` (the model's or the manifest's own record, or None) with the options applied."""
    if not contract.touches_images:
        return base
    if len(shapes) != 1 or len(shapes[0]) != 4 or shapes[0][:2] != (1, 3):
        raise WorkbenchError(
            f"the image options (--preset, --mean/--std, --channels, --resize, --crop) are for "
            f"a model with one 1,3,H,W input; `{model}` takes "
            f"{' and '.join(','.join(map(str, s)) for s in shapes)}: feed it .npy inputs",
            USAGE,
        )
    size = (shapes[0][2], shapes[0][3])
    mean: tuple[float, ...]
    std: tuple[float, ...]
    if contract.normalizes:
        mode = contract.preset or "custom"
        mean, std = PRESETS[contract.preset] if contract.preset else ((), ())
        mean = contract.mean or mean
        std = contract.std or std
    elif base is not None:
        mode, mean, std = base.mode, base.mean, base.std
    else:
        raise WorkbenchError(
            f"`{model}` records no normalization: give --preset "
            f"({', '.join(PRESETS)}) or --mean/--std with the image options",
            USAGE,
        )
    channels = contract.channels or (base.channels if base is not None else "rgb")
    resize = 0 if contract.crop == "none" else contract.resize
    if resize is None and contract.crop is None and base is not None:
        resize = base.resize
    return Preprocess(mode, size, tuple(mean), tuple(std), channels, resize)
