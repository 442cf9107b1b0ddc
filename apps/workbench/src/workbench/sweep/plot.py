"""The sweep's rows as a PNG (Pillow): x the cost (`pareto.axis`: the activation traffic, or an
older table's emulated latency), y the agreement with FP32;
each configuration a dot whose radius grows with its compile time, the Pareto front's dots
red and joined, the others grey, each labelled `method technique`."""

from __future__ import annotations

import io
from collections.abc import Sequence

from PIL import Image, ImageDraw, ImageFont

from workbench.sweep.pareto import axis, front
from workbench.sweep.table import Row

SIZE = (900, 520)
LEFT, RIGHT, TOP, BOTTOM = 64, 24, 40, 48
FRONT, OTHER, INK, GRID = (214, 39, 40), (150, 150, 150), (40, 40, 40), (225, 225, 225)


def _span(values: Sequence[float]) -> tuple[float, float]:
    low, high = min(values), max(values)
    pad = (high - low) * 0.08 or max(abs(high) * 0.05, 1e-3)
    return low - pad, high + pad


def pareto_png(rows: Sequence[Row], title: str) -> bytes:
    """The plot's PNG bytes (the measured rows; an empty plot says so)."""
    measured = [r for r in rows if r.ok and r.agree_all is not None]
    img = Image.new("RGB", SIZE, "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default()
    draw.text((LEFT, 12), title, fill=INK, font=font)
    w, h = SIZE[0] - LEFT - RIGHT, SIZE[1] - TOP - BOTTOM
    draw.rectangle((LEFT, TOP, LEFT + w, TOP + h), outline=INK)
    cost = axis(measured)
    draw.text((LEFT + w // 2 - 60, SIZE[1] - 20), f"{cost.name} ({cost.unit})", fill=INK, font=font)
    draw.text((6, TOP - 16), "agreement", fill=INK, font=font)
    if not measured:
        draw.text((LEFT + 20, TOP + 20), "no configuration was measured", fill=INK, font=font)
        return _png(img)
    x0, x1 = _span([cost.of(r) * cost.scale for r in measured])
    y0, y1 = _span([r.agree_all or 0.0 for r in measured])
    longest = max(r.compile_s or 0.0 for r in measured) or 1.0

    def at(r: Row) -> tuple[float, float]:
        x = LEFT + (cost.of(r) * cost.scale - x0) / (x1 - x0) * w
        return x, TOP + h - ((r.agree_all or 0.0) - y0) / (y1 - y0) * h

    for i in range(5):  # y gridlines and their values
        y = TOP + h * i / 4
        draw.line((LEFT, y, LEFT + w, y), fill=GRID)
        draw.text((8, y - 6), f"{y1 - (y1 - y0) * i / 4:.2%}", fill=INK, font=font)
        draw.text((LEFT + w * i / 4 - 12, TOP + h + 6), f"{x0 + (x1 - x0) * i / 4:.3f}", fill=INK)
    best = front(measured)
    if len(best) > 1:
        draw.line([at(r) for r in best], fill=FRONT, width=2)
    for r in measured:
        x, y = at(r)
        radius = 3 + 9 * (r.compile_s or 0.0) / longest
        colour = FRONT if r in best else OTHER
        draw.ellipse((x - radius, y - radius, x + radius, y + radius), fill=colour)
        draw.text((x + radius + 3, y - 6), f"{r.label}", fill=INK, font=font)
    return _png(img)


def _png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()
