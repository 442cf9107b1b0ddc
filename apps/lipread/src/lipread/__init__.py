"""lipread: a silent mouth video in, the sentence out; LipNet's front-end INT8 on the MDLA.

ckpt = lipread.load_checkpoint()                       # the shipped synthetic demo model
reading = lipread.read_sentence(Path("clip.mp4"), ckpt, Roi("none"), on="emu")
reading.text, reading.ms_per_frame

The names load on first use: `import lipread.cli` (the command) stays light until its Ctrl-C
handler is in place (`lipread.cli`).
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False  # not typing's: importing typing costs the Ctrl-C handler ~20 ms
if TYPE_CHECKING:
    from lipread.checkpoint import Checkpoint, load_checkpoint
    from lipread.errors import LipreadError
    from lipread.pipeline import Reading, read_sentence
    from lipread.roi import Roi

__all__ = ["Checkpoint", "LipreadError", "Reading", "Roi", "load_checkpoint", "read_sentence"]
_HOME = {
    "Checkpoint": "lipread.checkpoint",
    "load_checkpoint": "lipread.checkpoint",
    "LipreadError": "lipread.errors",
    "Reading": "lipread.pipeline",
    "read_sentence": "lipread.pipeline",
    "Roi": "lipread.roi",
}


def __getattr__(name: str) -> object:
    if name not in _HOME:
        raise AttributeError(f"module 'lipread' has no attribute {name!r}")
    return getattr(import_module(_HOME[name]), name)
