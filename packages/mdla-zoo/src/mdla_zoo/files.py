"""Whole-model files as model specs: `torch.save(model)` `.pt`, TorchScript, `torch.export` `.pt2`.

    full.pt     torch.load(weights_only=False): unpickling runs code from the file, so only a
                file the user names as the model is opened this way, with a note saying so; the
                classes it pickled must be importable (the file's folder is on sys.path)
    net.ts      torch.jit.load, then torch's TorchScript -> torch.export converter (fx cannot
                trace a ScriptModule) on zeros of the input shape
    net.pt2     torch.export.load; its own example inputs give the input shape

A program is loaded as a `ProgramModule` (it runs the program): `mdla_ir.from_torch` imports its
ATen graph (core ATen, op by op) whatever import path is asked for. A file that holds a state
dict is refused with the command that uses it (`--weights`). The kind is read from the zip's
entries, not the suffix.
"""

from __future__ import annotations

import logging
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from mdla_ir.importer.exported import ProgramModule
from mdla_zoo.errors import ZooError
from mdla_zoo.specs import folder_on_path


@dataclass(frozen=True)
class Loaded:
    module: nn.Module
    example: tuple[torch.Tensor, ...] | None  # the file's own example inputs (.pt2), if any
    note: str  # what was done to read the file, said to the user


def file_kind(path: Path) -> str:
    """`export`, `torchscript` or `pickle` (torch.save), from the archive's entries."""
    if not zipfile.is_zipfile(path):
        return "pickle"  # torch.save's legacy (non-zip) format
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
    if any(n.endswith(("/models/model.json", "serialized_exported_program.json")) for n in names):
        return "export"
    if any("/code/" in n for n in names):
        return "torchscript"
    return "pickle"


def load_file(spec: str, input_shape: tuple[int, ...] | None) -> Loaded:
    path = Path(spec)
    if not path.is_file():
        raise ZooError(f"model file `{spec}` does not exist")
    kind = file_kind(path)
    shape = input_shape or (1, 3, 224, 224)
    if kind == "export":
        return _exported(path)
    if kind == "torchscript":
        return _torchscript(path, shape)
    return _pickled(path)


def _pickled(path: Path) -> Loaded:
    with folder_on_path(str(path.resolve().parent)):
        try:
            obj = torch.load(path, map_location="cpu", weights_only=False)
        except AttributeError as exc:
            if "__main__" not in str(exc):
                raise ZooError(_unimportable(path, exc)) from None
            raise ZooError(
                f"`{path}` pickles a model whose class was defined in the script that saved it "
                f"(`__main__`), so no other program can rebuild it ({exc}): move the class into "
                "a file (my_net.py), import it from there and save again, or save a state dict "
                "and compile `my_net.py:Net --weights state.pt`"
            ) from None
        except (ModuleNotFoundError, ImportError) as exc:
            raise ZooError(_unimportable(path, exc)) from None
        except Exception as exc:
            raise ZooError(
                f"cannot read `{path}` as a torch.save file: {type(exc).__name__}: {_one_line(exc)}"
            ) from None
    if isinstance(obj, dict):
        raise ZooError(
            f"`{path}` holds a state dict ({len(obj)} entries), not a model: name the model's "
            f"code and pass this file as its weights (`workbench compile my_net.py:Net "
            f"--weights {path}`)"
        )
    if not isinstance(obj, nn.Module):
        raise ZooError(f"`{path}` holds a {type(obj).__name__}, not a torch.nn.Module")
    note = (
        f"note: `{path}` is a whole pickled model: read with torch.load(weights_only=False), "
        "which runs code from the file (open only files you trust)"
    )
    return Loaded(obj, None, note)


def _unimportable(path: Path, exc: BaseException) -> str:
    return (
        f"`{path}` pickles a model whose class cannot be imported here ({exc}): put "
        "the .py file that defines it beside the file or on PYTHONPATH, or save a state "
        "dict and compile `file.py:Net --weights state.pt`"
    )


def _one_line(exc: BaseException) -> str:
    """`exc`'s message with its runs of whitespace (newlines too) made single spaces."""
    return " ".join(str(exc).split())


def _exported(path: Path) -> Loaded:
    try:
        program = torch.export.load(path)
    except Exception as exc:
        raise ZooError(
            f"cannot read `{path}` with torch.export.load: {type(exc).__name__}: {_one_line(exc)} "
            "(save it with torch.export.save from this torch version)"
        ) from None
    example = _program_inputs(program)
    note = f"note: `{path}` is a torch.export program: its aten graph is imported"
    return Loaded(ProgramModule(program), example, note)


def _program_inputs(program: Any) -> tuple[torch.Tensor, ...] | None:
    found = getattr(program, "example_inputs", None)
    if not found:
        return None
    args, kwargs = found
    if kwargs or not all(isinstance(a, torch.Tensor) for a in args):
        return None
    return tuple(torch.zeros(a.shape) for a in args)


def _torchscript(path: Path, shape: tuple[int, ...]) -> Loaded:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # torch.jit is deprecated upstream
            script = torch.jit.load(str(path), map_location="cpu")  # type: ignore[no-untyped-call]
    except Exception as exc:
        raise ZooError(f"cannot read `{path}` with torch.jit.load: {_one_line(exc)}") from None
    try:
        from torch._export.converter import TS2EPConverter

        quiet = logging.getLogger("torch._export")
        level = quiet.level
        quiet.setLevel(logging.ERROR)  # its notes on specialized batch sizes are not ours
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                program = TS2EPConverter(script, (torch.zeros(shape),)).convert()
        finally:
            quiet.setLevel(level)
    except Exception as exc:
        text = _one_line(exc)[:200]
        raise ZooError(
            f"`{path}` is TorchScript, which torch.fx cannot trace, and torch's converter to "
            f"torch.export failed ({type(exc).__name__}: {text}): compile the Python model "
            "instead (`my_net.py:Net --weights state.pt`) or save it with torch.export.save "
            "as a .pt2 (give --input-shape if the input is not 1,3,224,224)"
        ) from None
    note = (
        f"note: `{path}` is TorchScript: torch.fx cannot trace it, so it was converted to a "
        f"torch.export program on a {list(shape)} input (torch._export.converter)"
    )
    return Loaded(ProgramModule(program), None, note)
