"""Durations written the way people type them: "45s", "15m", "2h"."""

import re

UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600}

_PAIR = re.compile(r"^\s*(\d+)\s*([smh])\s*$")


def parse_duration(text: str) -> int:
    """Seconds in a duration such as "90s", "15m" or "2h"."""
    match = _PAIR.match(text)
    if match is None:
        raise ValueError(f"not a duration: {text!r}")
    number, unit = match.groups()
    return int(number) * UNIT_SECONDS[unit]


def format_duration(seconds: int) -> str:
    """The largest unit that divides `seconds` exactly: 7200 -> "2h", 90 -> "90s"."""
    if seconds < 0:
        raise ValueError("a duration cannot be negative")
    for unit in ("h", "m"):
        size = UNIT_SECONDS[unit]
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
