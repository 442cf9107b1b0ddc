"""Model inputs from files: images, `.npy` (one input), `.npz` (one array per model input, by
the inputs' names when its keys are them, else in the file's order), directories of them;
calibration sets read lazily, one sample at a time.

    files = input_files("calib/")                          # sorted images and arrays
    samples = LazyInputs(files[:count], shapes, prepare)   # a Sequence: reads on access

An array may leave out the batch dimension of 1 (`(3, 32, 32)` for a `(1, 3, 32, 32)` input);
every other shape mismatch is an error naming the file, its shape and the model's. An array's
header is checked before its data is read (it may claim no more bytes than the file holds, nor
more than MAX_ARRAY_BYTES), and an array of NaN or infinite values is refused.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, overload

import numpy as np
from numpy.lib import format as npy

from mdla_compile.errors import CompileError
from mdla_compile.images import IMAGE_SUFFIXES, read_image
from mdla_compile.written import is_written

Array = np.ndarray[Any, Any]
Shapes = tuple[tuple[int, ...], ...]
DATA_SUFFIXES = (".npy", ".npz")
Prepare = Callable[[Array], Array]  # HWC uint8 photo -> the model's input
MAX_ARRAY_BYTES = 1 << 30  # one input array (1 GiB: 256 M float32 values)
HEADER_READERS = {(1, 0): npy.read_array_header_1_0, (2, 0): npy.read_array_header_2_0}


def is_data(name: str | Path) -> bool:
    return Path(name).suffix.lower() in DATA_SUFFIXES


def input_files(directory: str | Path) -> list[Path]:
    """The images, .npy and .npz files in `directory`, sorted by name; files the workbench
    wrote there (`mdla_compile.written`: class maps, saved outputs) are skipped."""
    root = Path(directory)
    if not root.is_dir():
        raise CompileError(f"input directory `{root}` does not exist")
    suffixes = (*IMAGE_SUFFIXES, *DATA_SUFFIXES)
    found = sorted(p for p in root.iterdir() if p.is_file() and p.suffix.lower() in suffixes)
    files = [p for p in found if not is_written(p)]
    if not files:
        skipped = f" (only {len(found)} file(s) the workbench wrote)" if found else ""
        raise CompileError(
            f"input directory `{root}` holds no images {IMAGE_SUFFIXES} nor arrays "
            f".npy/.npz{skipped}"
        )
    return files


def expand(names: Sequence[str]) -> list[str]:
    """Each directory among `names` replaced by its input files."""
    out: list[str] = []
    for name in names:
        out += [str(p) for p in input_files(name)] if Path(name).is_dir() else [name]
    return out


def load_sample(
    name: str | Path,
    shapes: Shapes,
    prepare: Prepare | None,
    model: str,
    names: Sequence[str] | None = None,
) -> list[Array]:
    """One sample (a list with one array per model input) from an image or an array file.
    An `.npz` whose keys are the model's input `names` gives each input its array by name;
    otherwise (`arr_0`, `arr_1`, ... as `np.savez` names unnamed arrays, or no names known)
    its arrays go to the inputs in the file's order."""
    path = Path(name)
    if not is_data(path):
        if prepare is None:
            raise CompileError(
                f"`{model}` takes no images (it records no image preprocessing), so not "
                f"`{name}`: give .npy/.npz inputs, or compile it with --preset or --mean/--std"
            )
        return [prepare(read_image(name))]
    labels = list(names) if names is not None and len(names) == len(shapes) else None
    keyed = _arrays(path)
    if labels is not None and not all(k == f"arr_{i}" for i, (k, _) in enumerate(keyed)):
        keyed = _by_name(dict(keyed), shapes, labels, path, model)
    if len(keyed) != len(shapes):
        missing = (
            f": no array for input {len(keyed)} ({_expected(shapes, labels, len(keyed))})"
            if len(keyed) < len(shapes)
            else ""
        )
        raise CompileError(
            f"`{path}` holds {len(keyed)} array(s); `{model}` takes {len(shapes)} input(s){missing}"
        )
    return [
        _fit(a, s, path, (k, key), _expected(shapes, labels, k))
        for k, ((key, a), s) in enumerate(zip(keyed, shapes, strict=True))
    ]


def _expected(shapes: Shapes, labels: Sequence[str] | None, k: int) -> str:
    """Input k as an error line shows it: its shape and dtype, and its name when known."""
    where = f" (`{labels[k]}`)" if labels is not None else ""
    return f"{list(shapes[k])} float32{where}"


def _by_name(
    arrays: dict[str, Array], shapes: Shapes, labels: list[str], path: Path, model: str
) -> list[tuple[str, Array]]:
    """The arrays of an `.npz` in the order of the model's inputs, matched by key."""
    for k, label in enumerate(labels):
        if label not in arrays:
            raise CompileError(
                f"`{path}` has no array `{label}` for `{model}`'s input {k}, "
                f"{_expected(shapes, None, k)}: save it with np.savez(..., {label}=x) (keys "
                f"given: {', '.join(sorted(arrays))})"
            )
    extra = sorted(set(arrays) - set(labels))
    if extra:
        raise CompileError(
            f"`{path}` holds array `{extra[0]}`, which is none of `{model}`'s inputs "
            f"({', '.join(labels)}): drop it or name it after one of them"
        )
    return [(label, arrays[label]) for label in labels]


def _arrays(path: Path) -> list[tuple[str, Array]]:
    """(key, array) per array of the file: an `.npz`'s keys in its order, `.npy`'s `arr_0`."""
    try:
        if path.suffix.lower() == ".npz":
            _check_npz(path)
            with np.load(path, allow_pickle=False) as z:
                return [(k, np.asarray(z[k])) for k in z.files]
        with path.open("rb") as f:
            _check_header(f, path.stat().st_size, f"`{path}`")
        return [("arr_0", np.asarray(np.load(path, allow_pickle=False)))]
    except FileNotFoundError:
        raise CompileError(f"input `{path}` does not exist") from None
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        text = " ".join(str(exc).split())
        raise CompileError(f"cannot read `{path}` as a numpy array file: {text}") from None


def _check_npz(path: Path) -> None:
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            if info.filename.endswith(".npy"):
                with z.open(info) as f:
                    _check_header(f, info.file_size, f"`{path}` array `{info.filename[:-4]}`")


def _check_header(f: IO[bytes], size: int, what: str) -> None:
    """CompileError unless the .npy header at `f` claims at most the `size` bytes its file
    (or zip member) holds after the header, and at most MAX_ARRAY_BYTES: checked before numpy
    allocates the array the header claims (10^15 elements: MemoryError)."""
    version = npy.read_magic(f)
    reader = HEADER_READERS.get(version)
    if reader is None:
        raise CompileError(f"{what}: .npy format version {version} is not read here (1.0, 2.0)")
    shape, _fortran, dtype = reader(f)
    claimed = int(np.prod(shape, dtype=object)) * dtype.itemsize
    held = size - f.tell()
    if claimed > min(held, MAX_ARRAY_BYTES):
        why = (
            f"the file holds {held} bytes of data"
            if claimed > held
            else f"more than the {MAX_ARRAY_BYTES >> 20} MiB an input array may have"
        )
        raise CompileError(
            f"{what}: its header claims shape {list(shape)} of {dtype} ({claimed} bytes); {why}"
        )


def _fit(a: Array, shape: tuple[int, ...], path: Path, at: tuple[int, str], expected: str) -> Array:
    """`a` as input `at[0]`'s float32 array; the array is named by its key `at[1]` in errors
    (by its place for `arr_N`, the key numpy gives an unnamed array)."""
    k, key = at
    what = f"array {k}" if key == f"arr_{k}" else f"array `{key}`"
    if a.dtype.kind not in "fiub":
        raise CompileError(f"`{path}` {what} has dtype {a.dtype}: expected numbers")
    if tuple(a.shape) != shape and (1, *a.shape) == shape:
        a = a[None]
    if tuple(a.shape) != shape:
        raise CompileError(
            f"`{path}` {what} has shape {list(a.shape)}; the model's input {k} is {expected}"
        )
    with np.errstate(over="ignore", invalid="ignore"):  # 1e300 -> inf: refused just below
        out = np.ascontiguousarray(a, dtype=np.float32)
    bad = np.flatnonzero(~np.isfinite(out))
    if bad.size:
        first = [int(i) for i in np.unravel_index(int(bad[0]), out.shape)]
        raise CompileError(
            f"`{path}` {what} holds {bad.size} NaN or infinite value(s) in float32 (the "
            f"first at {first}: {out.flat[int(bad[0])]}); a model's input must be finite numbers"
        )
    return out


class LazyInputs(Sequence[list[Array]]):
    """Calibration samples read from their files on access (never all held at once); an
    `.npz`'s arrays matched to the inputs by `names` as `load_sample` does."""

    def __init__(
        self,
        files: Sequence[str | Path],
        shapes: Shapes,
        prepare: Prepare | None,
        model: str,
        names: Sequence[str] | None = None,
    ) -> None:
        self.files = list(files)
        self.shapes = shapes
        self.prepare = prepare
        self.model = model
        self.names = names

    def __len__(self) -> int:
        return len(self.files)

    @overload
    def __getitem__(self, i: int) -> list[Array]: ...
    @overload
    def __getitem__(self, i: slice) -> LazyInputs: ...
    def __getitem__(self, i: int | slice) -> list[Array] | LazyInputs:
        if isinstance(i, slice):
            return LazyInputs(self.files[i], self.shapes, self.prepare, self.model, self.names)
        return load_sample(self.files[i], self.shapes, self.prepare, self.model, self.names)

    def __iter__(self) -> Iterator[list[Array]]:
        for f in self.files:
            yield load_sample(f, self.shapes, self.prepare, self.model, self.names)
