"""lipread: a silent mouth video in, the sentence out; LipNet's front-end INT8 on the MDLA.

ckpt = lipread.load_checkpoint()                       # the shipped synthetic demo model
reading = lipread.read_sentence(Path("clip.mp4"), ckpt, Roi("none"), on="emu")
reading.text, reading.ms_per_frame
"""

from __future__ import annotations

from lipread.checkpoint import Checkpoint, load_checkpoint
from lipread.errors import LipreadError
from lipread.pipeline import Reading, read_sentence
from lipread.roi import Roi

__all__ = ["Checkpoint", "LipreadError", "Reading", "Roi", "load_checkpoint", "read_sentence"]
