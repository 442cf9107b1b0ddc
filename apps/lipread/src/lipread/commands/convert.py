"""`lipread convert CKPT OUT.npz`: a LipNet-PyTorch checkpoint as a torch-free .npz."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lipread.checkpoint import load_checkpoint, save_npz
from lipread.commands.options import Debug, guarded


def convert(
    checkpoint: Annotated[Path, typer.Argument(metavar="CKPT", help="A LipNet-PyTorch .pt.")],
    out: Annotated[Path, typer.Argument(metavar="OUT.npz", help="Where to write the .npz.")],
    debug: Debug = False,
) -> None:
    """Validate a checkpoint and write it as .npz (same weights hash, so the same cache)."""

    def go() -> str:
        ckpt = load_checkpoint(checkpoint)
        meta = {"config": ckpt.config.as_dict(), "converted_from": checkpoint.name, **ckpt.meta}
        save_npz(out, ckpt.state, meta)
        return ckpt.sha256

    digest = guarded(go, debug)
    typer.echo(f"wrote {out} (weights sha256 {digest[:16]})")
