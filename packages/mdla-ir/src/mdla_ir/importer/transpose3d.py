"""ConvTranspose3d: no route yet, refused by name with the ways around it (the generic "no
converter" line named no fix that works here)."""

from __future__ import annotations

from typing import Any

from mdla_ir.importer.context import Unsupported

WHY = (
    "ConvTranspose3d (a transposed 3-D convolution) has no route: no MDLA form and no CPU "
    "kernel; fix: upsample the clip with a ConvTranspose2d per frame when its temporal kernel "
    "and stride are 1 (frames folded into the batch), or use nn.Upsample + Conv3d"
)


def refuse_conv_transpose3d(c: Any, m: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    raise Unsupported(WHY)
