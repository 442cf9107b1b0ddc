"""What `compile` reports while it works: typed events to one `on_event` callback.

    def show(event: Event) -> None:
        match event:
            case StageStarted(stage, detail): print("start", stage, detail)
            case CalibrationTick(done, total): print(f"{done}/{total}")
    compile(options, on_event=show)

Stages come in order (import, legalize, quantize), each started and, unless it fails,
finished; the imported source right after import; calibration ticks and AdaRound layers inside
quantize; notes and the placement (with `cpu=`) where they arise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from mdla_compile.source import Source
from mdla_legalize import Placement


class Stage(StrEnum):
    IMPORT = "import"
    LEGALIZE = "legalize"
    QUANTIZE = "quantize"


@dataclass(frozen=True)
class StageStarted:
    stage: Stage
    detail: str = ""  # import: the model spec; legalize: the target; quantize: the calibration
    total: int | None = None  # quantize: the calibration inputs it will tick through

    def __str__(self) -> str:
        return f"{self.stage}: {self.detail}" + (f" x {self.total}" if self.total else "")


@dataclass(frozen=True)
class StageFinished:
    stage: Stage
    seconds: float

    def __str__(self) -> str:
        return f"{self.stage}: done in {self.seconds:.1f} s"


@dataclass(frozen=True)
class CalibrationTick:
    """`done` of `total` calibration inputs have run through the float graph."""

    done: int
    total: int

    def __str__(self) -> str:
        return f"calibrated {self.done}/{self.total}"


@dataclass(frozen=True)
class AdaRoundLayer:
    """AdaRound is fitting layer `layer` (1-based) of `layers`, op `name`."""

    layer: int
    layers: int
    name: str

    def __str__(self) -> str:
        return f"adaround {self.layer}/{self.layers}: {self.name}"


@dataclass(frozen=True, repr=False)
class Imported:
    """The model is imported: its float graph and inputs (a UI can show them while the
    later stages run, or when legalizing fails)."""

    source: Source

    def __str__(self) -> str:
        shapes = ", ".join("x".join(map(str, s)) for s in self.source.input_shapes)
        return (
            f"imported {self.source.graph.name}: {len(self.source.graph.ops)} ops, input {shapes}"
        )

    __repr__ = __str__  # the source's own repr holds every tensor


@dataclass(frozen=True)
class Note:
    """Something worth a line: what loading the model did (`mdla_zoo.Model.notes`)."""

    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Placed:
    """With `cpu=`: where each op runs (its warnings name ops placed that would map)."""

    placement: Placement

    def __str__(self) -> str:
        return f"placed {len(self.placement.graph.provenance.cpu_ops)} op(s) on the CPU"


Event = StageStarted | StageFinished | Imported | CalibrationTick | AdaRoundLayer | Note | Placed
OnEvent = Callable[[Event], None]


def ignore(_event: Event) -> None:
    """The `on_event` of a caller that wants no progress."""
