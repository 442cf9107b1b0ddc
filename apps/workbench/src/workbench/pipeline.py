"""The compile is `mdla_compile`'s (re-exported here for the commands and their tests); what
stays is the workbench's own: opening a compiled manifest, with the command that makes one.

    compiled = mdla_compile.compile(CompileOptions("efficientnet_lite0"), on_event=show)
    manifest = load_manifest("lite0.mdla")          # exit 2 for a model spec: compile it first
"""

from __future__ import annotations

from pathlib import Path

import mdla_runtime
from mdla_compile import Compiled as Compiled
from mdla_compile import Source as Source
from mdla_compile import calibration_inputs as calibration_inputs
from mdla_compile import legalize_graph as legalize_graph
from mdla_compile import load_source as load_source
from mdla_compile import prepare_image as prepare_image
from mdla_compile import quantize_graph as quantize_graph
from mdla_compile import random_weights_warning as random_weights_warning
from mdla_compile import rule_names as rule_names
from mdla_compile.compiled import LayerProgress as LayerProgress
from mdla_compile.source import is_manifest
from mdla_compile.source import model_name as model_name
from workbench.errors import USAGE, WorkbenchError


def load_manifest(
    path: str | Path, budget: mdla_runtime.Budget | None = None
) -> mdla_runtime.Manifest:
    """The manifest at `path` (a ManifestError names the file, the field and the byte)."""
    if Path(path).is_dir():
        raise WorkbenchError(f"manifest `{path}` is a directory; a .mdla is a file")
    if not Path(path).is_file():
        if Path(path).suffix == "" or ":" in str(path):  # a model spec, not a compiled model
            raise WorkbenchError(
                f"`{path}` is not a manifest (.mdla): compile it first, e.g. "
                f"`workbench compile {path} -o {model_name(str(path))}.mdla`",
                USAGE,
            )
        raise WorkbenchError(f"manifest `{path}` does not exist")
    return mdla_runtime.load(path, budget or mdla_runtime.Budget())


def manifest_or_none(spec: str) -> mdla_runtime.Manifest | None:
    return load_manifest(spec) if is_manifest(spec) else None
