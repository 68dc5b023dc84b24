"""The service log of the `big_log` setup: about 1.7 MB, the same bytes on every run.

Generated from a fixed seed rather than committed, so the repository stays small while every
copy holds the identical file. Two traps for an agent that does not read the format: INFO
lines carry an `ERROR_RATE=` metric (a plain `grep -c ERROR` overcounts), and WARN retry lines
carry error codes too (counting codes over every line crowns the wrong code).
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta

SEED = 20250304
LINES = 24_000
START = datetime(2025, 3, 4, 8, 0, 0, tzinfo=UTC)
COMPONENTS = ("api", "payments", "stock", "mailer", "scheduler")
ERROR_CODES = (("E301", 5), ("E204", 3), ("E118", 2), ("E502", 1))
RETRY_CODES = (("E204", 6), ("E118", 1))


def _pick(rng: random.Random, weighted: tuple[tuple[str, int], ...]) -> str:
    names = [name for name, _ in weighted]
    return rng.choices(names, weights=[w for _, w in weighted])[0]


def _line(rng: random.Random, when: datetime) -> str:
    stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    component = rng.choice(COMPONENTS)
    roll = rng.random()
    order = f"A{rng.randint(10000, 99999)}"
    if roll < 0.035:
        code = _pick(rng, ERROR_CODES)
        return f"{stamp} ERROR {component} request failed code={code} order={order}"
    if roll < 0.085:
        code = _pick(rng, RETRY_CODES)
        return f"{stamp} WARN  {component} retrying after error code={code} order={order}"
    if roll < 0.25:
        rate = rng.randint(0, 40) / 1000
        latency = rng.randint(3, 900)
        return f"{stamp} INFO  {component} health ok ERROR_RATE={rate:.3f} latency_ms={latency}"
    return f"{stamp} INFO  {component} handled order={order} latency_ms={rng.randint(3, 900)}"


def render(seed: int = SEED, lines: int = LINES) -> str:
    rng = random.Random(seed)
    out = []
    when = START
    for _ in range(lines):
        when += timedelta(seconds=rng.randint(1, 9))
        out.append(_line(rng, when))
    return "\n".join(out) + "\n"


def error_summary(text: str) -> tuple[int, Counter[str]]:
    """ERROR entries (by the level field) and their codes: what the question asks for."""
    codes: Counter[str] = Counter()
    count = 0
    for line in text.splitlines():
        fields = line.split()
        if len(fields) > 1 and fields[1] == "ERROR":
            count += 1
            codes.update(f.split("=", 1)[1] for f in fields if f.startswith("code="))
    return count, codes
