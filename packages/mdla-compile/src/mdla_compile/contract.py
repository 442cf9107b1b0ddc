"""The input contract: how a model wants its inputs, as the options give it, and the record it
makes (`mdla_ir.Preprocess`, stored in the `.mdla`).

    contract = contract_from("1,3,160,160", preset="imagenet", labels=Path("labels.txt"))
    record = apply(contract, model_record, shapes, "net.py:Net")   # None: no image options

    input_shape 1,3,H,W    the model's input (another image size; a model file's input)
    preset NAME            imagenet | tf | minus1to1 (alias inception) | zero1
    mean/std R,G,B         on pixels scaled to [0, 1] (override the preset's)
    channels rgb|bgr       the order the model takes (mean/std in that order)
    resize N               short side before the centre crop (default: side / 0.875)
    crop center|none       none: the whole photo resized to H,W (aspect not kept)
    labels FILE            class names, one a line
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mdla_compile.errors import CompileError, OptionError
from mdla_ir import Preprocess
from mdla_zoo.contract import CHANNELS, PRESETS


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
        raise OptionError(f"--preset `{preset}`: expected one of {', '.join(PRESETS)}")
    if channels is not None and channels not in CHANNELS:
        raise OptionError(f"--channels `{channels}`: expected rgb or bgr")
    if crop is not None and crop not in ("center", "none"):
        raise OptionError(f"--crop `{crop}`: expected center or none")
    if crop == "none" and resize is not None:
        raise OptionError("--resize sets the short side before a crop; --crop none has none")
    if (mean is None) != (std is None) and preset is None:
        raise OptionError("--mean and --std go together (or start from a --preset)")
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
        raise OptionError(f"--input-shape `{text}`: expected sizes like 1,3,224,224")
    return dims


def _triple(flag: str, text: str | None, positive: bool = False) -> tuple[float, ...] | None:
    if text is None:
        return None
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        values = ()
    if len(values) not in (1, 3):
        raise OptionError(f"{flag} `{text}`: expected 1 or 3 numbers (R,G,B)")
    if positive and any(v <= 0 for v in values):
        raise OptionError(f"{flag} `{text}`: every value must be > 0")
    if any(abs(v) > 1.5 for v in values):
        raise OptionError(
            f"{flag} `{text}` looks like 0..255 pixels; give it on the [0, 1] scale "
            f"(divide by 255: {','.join(f'{v / 255:.4g}' for v in values)})"
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
            raise CompileError(
                f"labels file `{path}` is larger than {MAX_LABELS_BYTES >> 20} MiB: a labels "
                "file holds class names, one a line"
            )
        text = blob.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CompileError(f"cannot read labels `{path}`: {exc}") from None
    names = tuple(line.strip() for line in text.splitlines() if line.strip())
    if not names:
        raise CompileError(f"labels file `{path}` holds no names (one a line)")
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
        raise OptionError(
            f"the image options (--preset, --mean/--std, --channels, --resize, --crop) are for "
            f"a model with one 1,3,H,W input; `{model}` takes "
            f"{' and '.join(','.join(map(str, s)) for s in shapes)}: feed it .npy inputs"
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
        raise OptionError(
            f"`{model}` records no normalization: give --preset "
            f"({', '.join(PRESETS)}) or --mean/--std with the image options"
        )
    channels = contract.channels or (base.channels if base is not None else "rgb")
    resize = 0 if contract.crop == "none" else contract.resize
    if resize is None and contract.crop is None and base is not None:
        resize = base.resize
    return Preprocess(mode, size, tuple(mean), tuple(std), channels, resize)
