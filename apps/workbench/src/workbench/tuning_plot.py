"""The per-layer SQNR plot of a calibration comparison, as PNG bytes (Pillow; no matplotlib).

x: the device graph's tensors in op order; y: SQNR in dB on the held-out inputs; one line per
setting (new: blue, previous: orange). An exact tensor (SQNR inf) is drawn on the top edge as a
hollow marker, so no layer silently leaves the plot.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence

from PIL import Image, ImageDraw, ImageFont

from workbench.tuning import Comparison, Trial

SIZE = (800, 400)
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 40, 40
NEW, PREVIOUS, GRID, INK = (31, 119, 180), (255, 127, 14), (225, 225, 225), (40, 40, 40)


def y_range(values: Sequence[float]) -> tuple[float, float]:
    """Finite SQNRs rounded out to 10 dB steps (0..60 when there are none)."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return (0.0, 60.0)
    low, high = math.floor(min(finite) / 10) * 10, math.ceil(max(finite) / 10) * 10
    return (float(low), float(high if high > low else low + 10))


def sqnr_png(c: Comparison) -> bytes:
    trials = [t for t in (c.previous, c.new) if t is not None]
    low, high = y_range([x.sqnr_db for t in trials for x in t.layers])
    img = Image.new("RGB", SIZE, "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default()
    w, h = SIZE[0] - LEFT - RIGHT, SIZE[1] - TOP - BOTTOM
    n = max(len(c.new.layers), 1)

    def xy(i: int, db: float) -> tuple[float, float]:
        x = LEFT + (i + 0.5) * w / n
        clipped = high if not math.isfinite(db) and db > 0 else max(low, min(high, db))
        return (x, TOP + (high - clipped) / (high - low) * h)

    for tick in range(int(low), int(high) + 1, 10):
        _, y = xy(0, float(tick))
        draw.line([(LEFT, y), (LEFT + w, y)], fill=GRID)
        draw.text((LEFT - 8, y), f"{tick}", fill=INK, font=font, anchor="rm")
    draw.rectangle([(LEFT, TOP), (LEFT + w, TOP + h)], outline=INK)
    held = len(c.new.held_out)
    title = f"per-layer SQNR (dB) on {held} held-out input(s); {len(c.new.layers)} tensors"
    draw.text((LEFT, TOP - 24), title, fill=INK, font=font)
    draw.text((LEFT + w / 2, TOP + h + 20), "tensor (op order)", fill=INK, font=font, anchor="mm")
    for trial, colour in ((c.previous, PREVIOUS), (c.new, NEW)):
        if trial is not None:
            _series(draw, trial, colour, xy)
    legend = [(c.new.label, NEW)] + ([(c.previous.label, PREVIOUS)] if c.previous else [])
    x: float = LEFT + w
    for text, colour in legend:
        width = draw.textlength(text, font=font)
        x -= width + 24
        draw.rectangle([(x, TOP - 22), (x + 10, TOP - 12)], fill=colour)
        draw.text((x + 14, TOP - 24), text, fill=INK, font=font)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _series(
    draw: ImageDraw.ImageDraw,
    trial: Trial,
    colour: tuple[int, int, int],
    xy: Callable[[int, float], tuple[float, float]],
) -> None:
    points = [xy(i, t.sqnr_db) for i, t in enumerate(trial.layers)]
    if len(points) > 1:
        draw.line(points, fill=colour, width=2)
    for (x, y), t in zip(points, trial.layers, strict=True):
        exact = not math.isfinite(t.sqnr_db)
        draw.ellipse(
            [(x - 3, y - 3), (x + 3, y + 3)], outline=colour, fill=None if exact else colour
        )
