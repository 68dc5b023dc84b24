"""The Markdown tables of a benchmark's summary.md, and the one way they show a value."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def cell(value: Any) -> str:
    """A float to three decimals, None as n/a, anything else as it prints."""
    return "n/a" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def table(first: str, columns: Sequence[str], rows: Mapping[str, Sequence[Any]]) -> list[str]:
    """The header, the alignment line (the value columns right-aligned), a line per row."""
    lines = ["| " + " | ".join([first, *columns]) + " |", "|---|" + "---:|" * len(columns)]
    for name, values in rows.items():
        lines.append(f"| {name} | " + " | ".join(cell(v) for v in values) + " |")
    return lines
