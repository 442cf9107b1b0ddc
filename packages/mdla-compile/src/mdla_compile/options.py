"""`CompileOptions`: everything one compile depends on, in one frozen record.

    options = CompileOptions("net.py:build", args=("width=0.5",), calib="random", count=2,
                             quant=QuantConfig(method="mse"), cpu=("LAYER_NORM",))

The target and device are the options' own: `config` is `quant` with them written in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mdla_compile.a16 import a16_request
from mdla_compile.calibration import SOURCES
from mdla_compile.contract import Contract
from mdla_compile.errors import CompileError, OptionError
from mdla_compile.inputs import input_files
from mdla_compile.kinds import parse as parse_kinds
from mdla_ir import DEFAULT_PATH, Graph
from mdla_ir.devices import DEFAULT_TARGET, NPU
from mdla_quant import QuantConfig
from mdla_zoo.names import check_name, check_shape

if TYPE_CHECKING:
    from mdla_zoo import Model

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class CompileOptions:
    """model     a model spec: torchvision name, efficientnet_lite0, `file.py:name`, a model file;
                or an `mdla_zoo.Model` already built (a module with its example inputs)
    args        `key=value` keyword arguments of a `file.py:name` factory
    weights     a state-dict file
    contract    the input contract (shape, normalization, channels, resize/crop, labels)
    calib       `samples`, `random`, `auto` (samples for a model that takes photos, else
                random), a directory of images and .npy/.npz inputs, or the inputs themselves
                (one list of arrays per sample); the first `count` of them
    quant       the quantizer's settings (method, rounding, AdaRound, ...)
    a16         which activations go int16: `auto[:BUDGET]` (chosen by measured gain within
                BUDGET, a share of activation bytes), `joint[:BUDGET]` (by backward
                elimination from all int16), `refit[:BUDGET]` (that, measured on weights
                AdaRound fits to the int16 activations) or `PATTERN,...` (tensor/op name globs);
                None: `quant.a16` as it is (`mdla_compile.a16`)
    cpu         op kinds or name patterns placed on the CPU (explicit partitions)
    target, device   the target description (`mdla3.5` or a .toml path) and Neuron device
    skip_rules  legalize rules that must not fire (the device then says what it thinks)
    seed        the random calibration inputs' seed
    import_path how the model is captured: `fx`, `export` or `auto` (`mdla_ir.import_torch`)
    extend      a rewrite of the device graph before calibration (lipread appends its tail)
    output_kinds  `NAME=KIND` (or `KIND` for a one-output model) overriding compile's guess of
                what an output is (`mdla_compile.kinds`)"""

    model: str | Model
    args: tuple[str, ...] = ()
    weights: str | None = None
    contract: Contract = field(default_factory=Contract)
    calib: str | Sequence[list[Array]] = "samples"
    count: int = 6
    quant: QuantConfig = field(default_factory=QuantConfig)
    a16: str | None = None
    cpu: tuple[str, ...] = ()
    target: str = DEFAULT_TARGET
    device: str = NPU
    skip_rules: tuple[str, ...] = ()
    seed: int = 0
    import_path: str = DEFAULT_PATH
    extend: Callable[[Graph], Graph] | None = None
    output_kinds: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.count < 1:
            raise OptionError(f"--count must be at least 1, got {self.count}")
        parse_kinds(self.output_kinds)
        if isinstance(self.model, str):
            check_name(self.model)  # a typo: at once, not after torch's import
            check_shape(self.model, self.contract.input_shape)
        if isinstance(self.calib, str) and self.calib not in SOURCES:
            _check_calib_folder(self.calib)
        a16_request(self.a16)  # malformed: a usage error before anything is imported

    @property
    def calib_name(self) -> str:
        """`calib` as the report names it (`inputs` for inputs given as arrays)."""
        return self.calib if isinstance(self.calib, str) else "inputs"

    @property
    def spec(self) -> str:
        """The model spec (a built model's name)."""
        return self.model if isinstance(self.model, str) else self.model.name

    @property
    def config(self) -> QuantConfig:
        """`quant` for this target and device."""
        return dataclasses.replace(self.quant, target=self.target, device=self.device)


def _check_calib_folder(calib: str) -> None:
    """A --calib folder is checked before anything is imported: a file (a photo given where
    its folder was meant), a missing folder and one without inputs fail at once."""
    path = Path(calib)
    if path.is_file():
        folder = str(path.parent) if str(path.parent) != "." else "."
        raise CompileError(
            f"--calib `{calib}` is a file; it takes a folder of images or .npy/.npz arrays "
            f"(e.g. --calib {folder}), `samples` or `random`"
        )
    input_files(path)  # a missing or empty folder: its own line
