"""workbench: one CLI (Typer) and a Textual TUI for the whole mdla pipeline.

    workbench compile efficientnet_lite0 --calib samples -o lite0.mdla
    workbench check efficientnet_b0            # what maps on mtk-mdla, why not, which rule fixes it
    workbench run lite0.mdla cat.jpg --on emu  # top-5, latency, device
    workbench                                  # the TUI

The compile is `mdla_compile.compile`; the shared logic here lives in `workbench.images` (photos
in, the model's input out, torch-free), `workbench.validation` and `workbench.witnessing`; the
CLI commands (`workbench.commands.*`, their option blocks declared once in `commands.options`)
and the TUI screens (`workbench.tui.*`) only present it.
"""

from __future__ import annotations

__all__: list[str] = []
