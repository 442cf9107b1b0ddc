"""The model's source lines on torch.export's nodes, recorded without formatting whole stacks.

torch.export (non-strict) records on every node the stack of `forward` frames it was traced
under: it captures the whole Python stack, symbolizes it and reads each frame's source text
(`CapturedTraceback.extract().summary().format()`), about a quarter of the export of a
MobileNet. The importer reads only the file and line of the innermost `forward` outside
torch (`context.source_line`). `forward_lines()` records just that frame of the same stack,
its file and line, in the format torch writes (`File "...", line N, in forward`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from torch import fx

_TORCH = f"{os.sep}torch{os.sep}"


def forward_frames(frame: FrameType | None) -> str:
    """The innermost `forward` frame outside torch from `frame` outwards (the one the importer
    reads), as torch formats a stack frame (without the source text); "" if there is none."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == "forward" and _TORCH not in code.co_filename:
            return f'  File "{code.co_filename}", line {frame.f_lineno}, in forward'
        frame = frame.f_back
    return ""


@contextmanager
def forward_lines() -> Iterator[None]:
    """While active, a tracer that records stack traces records `forward_frames` instead."""
    base = fx.proxy.TracerBase
    original = base.create_node

    def create_node(self: Any, *args: Any, **kwargs: Any) -> fx.Node:
        record = self.record_stack_traces
        self.record_stack_traces = False
        try:
            node = original(self, *args, **kwargs)
        finally:
            self.record_stack_traces = record
        if record and not node.stack_trace:
            node.stack_trace = forward_frames(sys._getframe(1))
        return node

    base.create_node = create_node  # type: ignore[method-assign]
    try:
        yield
    finally:
        base.create_node = original  # type: ignore[method-assign]
