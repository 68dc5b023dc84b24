"""Hidden probe inputs: held by the evaluator, made at grading time from a seed.

A probe whose inputs are in the prompt or the copy can be met by hard-coding them. Each
generator here makes inputs neither shows, from the run's seed, with the expected outcome
computed by an oracle of its own (never the agent's code, never the reference solution):

* `durations` (a function): a property-based probe with hypothesis, seeded, run in the graded
  tree: compound durations in any order, spacing and size, against their sum; dangling
  numbers must be rejected;
* `weekly` (a report): another sales file of the same schema (dates across a year boundary,
  refunds), written into the graded tree under a name no one saw, against the report the
  oracle computes;
* `textstats` (write-tests): an equivalent but differently written implementation of the
  module put in place of the original; the agent's tests must still pass on it (a test that
  pins bytes or hashes does not).

Expect names the generators (`expect.hidden`); each gives probes (and files) or an
equivalent implementation, checked by agenteval.benchmarks.tasks.checks.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal

from agenteval.schema.tasks import Probe

DURATIONS_SCRIPT = """
from hypothesis import given, seed, settings, strategies as st
from toybox.durations import parse_duration

UNIT = {{"s": 1, "m": 60, "h": 3600}}
parts = st.lists(st.tuples(st.integers(0, 9999), st.sampled_from("smh")), min_size=1,
                 max_size=5)

@seed({seed})
@settings(max_examples=150, database=None, deadline=None)
@given(parts, st.sampled_from(["", " "]), st.integers(1, 99))
def check(found, gap, dangling):
    text = gap.join(f"{{n}}{{u}}" for n, u in found)
    assert parse_duration(text) == sum(n * UNIT[u] for n, u in found), text
    try:
        parse_duration(text + str(dangling))
    except ValueError:
        pass
    else:
        raise AssertionError(f"accepted {{text + str(dangling)!r}}")

check()
print("held")
"""

TEXTSTATS_EQUIVALENT = '''"""Word statistics (an equivalent implementation, written differently)."""

import re


def words(text):
    found = []
    for token in re.findall(r"[a-zA-Z']+", text):
        token = token.strip("'").lower()
        if token:
            found.append(token)
    return found


def word_count(text):
    return sum(1 for _ in words(text))


def top_words(text, n=3):
    counts, order = {}, []
    for word in words(text):
        if word not in counts:
            counts[word] = 0
            order.append(word)
        counts[word] += 1
    ranked = sorted(order, key=lambda w: (-counts[w], order.index(w)))
    return [(w, counts[w]) for w in ranked[:n]]


def average_word_length(text):
    found = words(text)
    return round(sum(map(len, found)) / len(found), 2) if found else 0.0
'''


@dataclass
class Hidden:
    """What one generator adds to a task's checks."""

    probes: list[Probe] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # written into the graded tree
    equivalents: dict[str, str] = field(default_factory=dict)  # path -> another implementation


def durations(seed: int) -> Hidden:
    script = DURATIONS_SCRIPT.format(seed=seed)
    return Hidden(probes=[Probe(command=f"python -c '{script}'", stdout="held")])


def _sales(rng: random.Random) -> list[tuple[str, str, Decimal]]:
    start = date(rng.choice([2023, 2024, 2025]), 12, rng.randint(1, 20))
    rows = []
    for index in range(rng.randint(25, 60)):
        day = start + timedelta(days=rng.randint(0, 45))
        cents = rng.randint(-5_000, 90_000) if rng.random() < 0.15 else rng.randint(100, 90_000)
        rows.append((day.isoformat(), f"H{index:04d}", Decimal(cents) / 100))
    rng.shuffle(rows)
    return rows


def weekly(seed: int) -> Hidden:
    rng = random.Random(f"weekly:{seed}")
    rows = _sales(rng)
    name = f"data/hidden-{rng.getrandbits(32):08x}.csv"
    text = "date,order_id,amount\n" + "".join(f"{d},{o},{a:.2f}\n" for d, o, a in rows)
    weeks: dict[tuple[int, int], list[Decimal]] = defaultdict(list)
    for day, _order, amount in rows:
        year, week, _ = date.fromisoformat(day).isocalendar()
        weeks[year, week].append(amount)
    lines = ["week,orders,total"] + [
        f"{y}-W{w:02d},{len(a)},{sum(a, Decimal(0)):.2f}" for (y, w), a in sorted(weeks.items())
    ]
    probe = Probe(command=f"python -m toybox.weekly {name}", stdout="\n".join(lines))
    return Hidden(probes=[probe], files={name: text})


def textstats(_seed: int) -> Hidden:
    return Hidden(equivalents={"toybox/textstats.py": TEXTSTATS_EQUIVALENT})


GENERATORS = {"durations": durations, "weekly": weekly, "textstats": textstats}


def generate(names: list[str], seed: int) -> Hidden:
    out = Hidden()
    for name in names:
        part = GENERATORS[name](seed)
        out.probes += part.probes
        out.files |= part.files
        out.equivalents |= part.equivalents
    return out
