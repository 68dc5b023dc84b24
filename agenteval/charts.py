"""The report's charts as standalone SVG text: horizontal bars and a histogram.

Written here rather than through matplotlib, which the project used before: importing it
(its artists build their docstrings at import time) cost 0.6-0.9 CPU-seconds in every
`agenteval run`, about a sixth of a 500-conversation run's CPU, to draw two simple charts.
SVG also opens in any browser, diffs as text, and is byte-stable for the same data (no
timestamps or generated ids), so `dvc repro` rewrites identical files.
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape

WIDTH, HEIGHT = 700, 350
FONT = "font-family='DejaVu Sans, Helvetica, Arial, sans-serif'"
CHAR_PX = 6.6  # the width of an average character at 12 px, to make room for labels
BAR_COLOUR = "#3b7dd8"
HIST_COLOUR = "#55aa99"
AXIS_COLOUR = "#444444"
GRID_COLOUR = "#dddddd"


def _text(x: float, y: float, text: str, *, size: int = 12, anchor: str = "middle",
          extra: str = "") -> str:  # fmt: skip
    return (f"<text x='{x:.1f}' y='{y:.1f}' font-size='{size}' text-anchor='{anchor}'{extra}>"
            f"{escape(text)}</text>")  # fmt: skip


def _document(title: str, body: list[str]) -> str:
    head = (f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{HEIGHT}' "
            f"viewBox='0 0 {WIDTH} {HEIGHT}' {FONT}>")  # fmt: skip
    parts = [head, f"<title>{escape(title)}</title>",
             f"<rect width='{WIDTH}' height='{HEIGHT}' fill='white'/>",
             _text(WIDTH / 2, 22, title, size=15, extra=" font-weight='bold'")]  # fmt: skip
    return "\n".join(parts + body + ["</svg>"]) + "\n"


def _tick(value: float) -> str:
    return f"{value:g}"


def horizontal_bars(labels: Sequence[str], values: Sequence[float], *, title: str,
                    x_label: str, x_max: float = 1.0) -> str:  # fmt: skip
    """One bar per label, top to bottom in the given order, on a 0..x_max axis."""
    left = 16 + CHAR_PX * max((len(label) for label in labels), default=0)
    left, right, top, bottom = min(left, WIDTH / 2), WIDTH - 24, 40, HEIGHT - 48
    span = max(x_max, 1e-12)
    body = []
    for step in range(6):  # grid and ticks at 0, 1/5, ..., x_max
        value = x_max * step / 5
        x = left + (right - left) * value / span
        body.append(f"<line x1='{x:.1f}' y1='{top}' x2='{x:.1f}' y2='{bottom}' "
                    f"stroke='{GRID_COLOUR}'/>")  # fmt: skip
        body.append(_text(x, bottom + 16, _tick(round(value, 6))))
    if not labels:
        body.append(_text((left + right) / 2, (top + bottom) / 2, "no data", size=14))
    slot = (bottom - top) / max(len(labels), 1)
    for index, (label, value) in enumerate(zip(labels, values, strict=True)):
        y = top + slot * index
        width = (right - left) * min(max(value, 0.0), span) / span
        body.append(f"<rect class='bar' x='{left:.1f}' y='{y + slot * 0.15:.1f}' "
                    f"width='{width:.1f}' height='{slot * 0.7:.1f}' fill='{BAR_COLOUR}'>"
                    f"<title>{escape(label)}: {value:.3g}</title></rect>")  # fmt: skip
        body.append(_text(left - 6, y + slot / 2 + 4, label, anchor="end"))
    body.append(_axes(left, right, top, bottom))
    body.append(_text((left + right) / 2, HEIGHT - 12, x_label, size=13))
    return _document(title, body)


def bin_counts(values: Sequence[float], bins: int, low: float, high: float) -> list[int]:
    """Counts per equal-width bin over [low, high]; the last bin holds `high` itself (as
    numpy.histogram does); values outside the range are not counted."""
    counts = [0] * bins
    width = (high - low) / bins
    for value in values:
        if low <= value <= high:
            counts[min(int((value - low) / width), bins - 1)] += 1
    return counts


def _count_ticks(peak: int) -> list[int]:
    """Whole-number ticks from 0 to at least `peak`, at most six, in steps of 1, 2, 5, 10..."""
    step = 1
    while peak / step > 5:
        step = step * 5 // 2 if str(step)[0] == "2" else step * 2
    return list(range(0, peak + step, step))


def histogram(values: Sequence[float], *, bins: int, low: float, high: float, title: str,
              x_label: str, y_label: str) -> str:  # fmt: skip
    counts = bin_counts(values, bins, low, high)
    ticks = _count_ticks(max(counts, default=0) or 1)
    left, right, top, bottom = 64, WIDTH - 24, 40, HEIGHT - 48
    ceiling = ticks[-1]
    body = []
    for tick in ticks:
        y = bottom - (bottom - top) * tick / ceiling
        body.append(f"<line x1='{left}' y1='{y:.1f}' x2='{right}' y2='{y:.1f}' "
                    f"stroke='{GRID_COLOUR}'/>")  # fmt: skip
        body.append(_text(left - 6, y + 4, str(tick), anchor="end"))
    width = (right - left) / bins
    for index, count in enumerate(counts):
        height = (bottom - top) * count / ceiling
        start = low + (high - low) * index / bins
        body.append(f"<rect class='bar' x='{left + width * index:.1f}' y='{bottom - height:.1f}' "
                    f"width='{width:.1f}' height='{height:.1f}' fill='{HIST_COLOUR}' "
                    f"stroke='white'><title>{_tick(start)}-{_tick(start + (high - low) / bins)}: "
                    f"{count}</title></rect>")  # fmt: skip
    for step in range(6):
        value = low + (high - low) * step / 5
        body.append(_text(left + (right - left) * step / 5, bottom + 16, _tick(round(value, 6))))
    if not any(counts):
        body.append(_text((left + right) / 2, (top + bottom) / 2, "no data", size=14))
    body.append(_axes(left, right, top, bottom))
    body.append(_text((left + right) / 2, HEIGHT - 12, x_label, size=13))
    middle = (top + bottom) / 2
    body.append(_text(18, middle, y_label, size=13, extra=f" transform='rotate(-90 18 {middle})'"))
    return _document(title, body)


def _axes(left: float, right: float, top: float, bottom: float) -> str:
    return (f"<path d='M{left:.1f} {top} V{bottom} H{right}' fill='none' "
            f"stroke='{AXIS_COLOUR}'/>")  # fmt: skip
