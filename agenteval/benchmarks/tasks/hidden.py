"""Hidden probe inputs: held by the evaluator, made at grading time from a seed.

A probe whose inputs are in the prompt or the copy can be met by hard-coding them. Each
generator here makes inputs neither shows, from the run's seed, with the expected outcome
computed by an oracle of its own (never the agent's code, never the reference solution):

* `durations` (a function): inputs drawn here by hypothesis from the seed (compound durations
  in any order, spacing and size, against their sum; the same with a dangling number, which
  must be rejected), called in a child that only returns what the function gave (calls);
* `config` (a function): TOYBOX_PORT set to seeded valid and invalid values, and unset; the
  settings must keep the host and debug of the snapshot outside the tests too;
* `linecount` (a function with side effects): files with hostile but legal names to count,
  and names built to run a command (backticks, `$(...)`, `" & cmd & "`, a newline, ...);
  a deny-list of the prompt's examples misses them, and no marker file may appear;
* `weekly` (a report): another sales file of the same schema (dates across a year boundary,
  refunds), written into the graded tree under a name no one saw, against the report the
  oracle computes;
* `textstats` (write-tests): an equivalent but differently written implementation of the
  module put in place of the original; the agent's tests must still pass on it (a test that
  pins bytes or hashes does not). And a *near* equivalent: the snapshot's own text with one
  seeded line rewritten without changing what it does (often a line a mutant breaks), as
  close to the original as a mutant is, so a test that fails any source merely close to the
  original fails there too.

Expect names the generators (`expect.hidden`); each gives probes (and files) or an
equivalent implementation, checked by agenteval.benchmarks.tasks.checks.
"""

from __future__ import annotations

import functools
import random
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal

from agenteval.benchmarks.tasks.calls import CallProbe, Case
from agenteval.schema.tasks import Probe

# The equivalent implementation is made from the seed and carries the snapshot's own module
# docstring: nothing in its text marks it (a test that reads the source to wave it through
# finds no marker), and its names and forms vary by seed (nothing fixed to recognise).
TEXTSTATS_DOC = '"""Word statistics for product descriptions."""'
TEXTSTATS_WORDS = (
    """def words(text):
    {a} = []
    for {b} in re.findall(r"[a-zA-Z']+", text):
        {b} = {b}.strip("'").lower()
        if {b}:
            {a}.append({b})
    return {a}
""",
    """def words(text):
    {a} = (t.strip("'") for t in re.split(r"[^A-Za-z']+", text))
    return [{b}.lower() for {b} in {a} if {b}]
""",
)
TEXTSTATS_TOP = (
    """def top_words(text, n=3):
    {a}, {b} = {{}}, []
    for {c} in words(text):
        if {c} not in {a}:
            {a}[{c}] = 0
            {b}.append({c})
        {a}[{c}] += 1
    ranked = sorted({b}, key=lambda w: (-{a}[w], {b}.index(w)))
    return [(w, {a}[w]) for w in ranked[:n]]
""",
    """def top_words(text, n=3):
    {a} = {{}}
    for {c} in words(text):
        {a}[{c}] = {a}.get({c}, 0) + 1
    {b} = list({a})
    return sorted({a}.items(), key=lambda kv: (-kv[1], {b}.index(kv[0])))[:n]
""",
)
TEXTSTATS_REST = """def word_count(text):
    return sum(1 for _ in words(text))


def average_word_length(text):
    {a} = words(text)
    return round(sum(map(len, {a})) / len({a}), 2) if {a} else 0.0
"""
NAMES = ("found", "seen", "items", "tokens", "parts", "pieces", "acc", "bag", "tally", "order")


def textstats_equivalent(seed: int) -> str:
    """An implementation of textstats equivalent to the snapshot's, written differently."""
    rng = random.Random(f"textstats:{seed}")

    def names(k: int) -> dict[str, str]:
        return dict(zip("abc", rng.sample(NAMES, k), strict=False))

    parts = [
        rng.choice(TEXTSTATS_WORDS).format(**names(2)),
        rng.choice(TEXTSTATS_TOP).format(**names(3)),
        TEXTSTATS_REST.format(**names(1)),
    ]
    return f"{TEXTSTATS_DOC}\n\nimport re\n\n\n" + "\n\n".join(parts)


@dataclass
class Hidden:
    """What one generator adds to a task's checks."""

    probes: list[Probe] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # written into the graded tree
    equivalents: dict[str, str] = field(default_factory=dict)  # path -> another implementation
    near: dict[str, str] = field(default_factory=dict)  # path -> the snapshot's, a few lines
    # rewritten (near_equivalent); the checks make it from the snapshot's text
    calls: list[CallProbe] = field(default_factory=list)  # judged here, run in a child


UNIT = {"s": 1, "m": 60, "h": 3600}
DRAWS = 150
REJECTED = ValueError.__name__


@functools.cache  # validate grades two trees with one seed; hypothesis is slow to start
def _drawn(seed: int) -> list[tuple[list[tuple[int, str]], str, int]]:
    """Examples hypothesis draws from `seed` (generation only: nothing is tested here)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as seeded
    from hypothesis import strategies as st

    drawn: list[tuple[list[tuple[int, str]], str, int]] = []
    parts = st.lists(
        st.tuples(st.integers(0, 9999), st.sampled_from("smh")), min_size=1, max_size=5
    )

    @seeded(seed)
    @settings(
        max_examples=DRAWS,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(parts, st.sampled_from(["", " "]), st.integers(1, 99))
    def collect(found: list[tuple[int, str]], gap: str, dangling: int) -> None:
        drawn.append((found, gap, dangling))

    collect()
    return drawn


def durations(seed: int) -> Hidden:
    cases = []
    for found, gap, dangling in _drawn(seed):
        text = gap.join(f"{n}{u}" for n, u in found)
        cases.append(Case([text], {"value": sum(n * UNIT[u] for n, u in found)}))
        cases.append(Case([text + str(dangling)], {"raises": REJECTED}))
    return Hidden(calls=[CallProbe("toybox.durations", "parse_duration", cases)])


def config(seed: int) -> Hidden:
    rng = random.Random(f"config:{seed}")
    variable, host = "TOYBOX_PORT", {"host": "127.0.0.1", "debug": False}
    cases = [Case([], {"fields": {**host, "port": 8080}}, {variable: None})]
    for port in [rng.randint(1, 65535) for _ in range(6)] + [1, 65535]:
        cases.append(Case([], {"fields": {**host, "port": port}}, {variable: str(port)}))
    bad = [
        "".join(rng.choices("abcxyz", k=rng.randint(1, 6))),
        str(rng.randint(65536, 999_999)),
        f"{rng.randint(1, 9000)}.{rng.randint(1, 9)}",
        f"-{rng.randint(1, 9000)}",
        "0",
        "",
    ]
    cases += [Case([], {"raises": REJECTED, "contains": variable}, {variable: v}) for v in bad]
    return Hidden(calls=[CallProbe("toybox.config", "load_settings", cases)])


# Names that run `touch MARKER` under a shell that sees them (quoted or not), beyond the
# prompt's `;` example: a deny-list of a few characters misses most of them.
INJECTIONS = (
    "data/sales.csv`touch {m}`",
    'data/sales.csv" & touch {m} & "',
    "data/sales.csv' ; touch {m} ; '",
    "data/sales.csv\ntouch {m}",
    "data/sales.csv && touch {m}",
    "data/sales.csv || touch {m}",
    "$(touch {m})",
    "data/sales.csv > {m}",
    'data/sales.csv"; touch {m}; "',
)
ODD_NAMES = ("it's {k}.csv", "a b $HOME {k}.csv", "semi;colon {k}.csv", "back`tick` {k}.csv")


def linecount(seed: int) -> Hidden:
    rng = random.Random(f"linecount:{seed}")
    marker = f"injected-{rng.getrandbits(32):08x}"
    files, cases = {}, []
    for template in ODD_NAMES:
        name = "data/" + template.format(k=f"{rng.getrandbits(24):06x}")
        lines = rng.randint(1, 40)
        files[name] = "".join(f"{rng.randint(0, 9999)},row\n" for _ in range(lines))
        cases.append(Case([name], {"value": lines}))
    cases += [Case([t.format(m=marker)], {}) for t in INJECTIONS]
    probe = CallProbe("toybox.linecount", "count_lines", cases, absent=[marker])
    return Hidden(files=files, calls=[probe])


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


# Rewrites of textstats.py's own lines that keep what each does, several on the lines the
# mutants break: a near equivalent is the snapshot with a seeded few of them applied.
TEXTSTATS_SAME = (
    ('w.lower().strip("\'")', 'w.strip("\'").lower()'),
    ("[A-Za-z']+", "['A-Za-z]+"),
    ("counts.most_common(n)", "counts.most_common(n)[:n]"),
    ("return len(words(text))", "return sum(1 for _ in words(text))"),
    ("return 0.0", "return float(0)"),
    ("len(found), 2)", "len(found), 2) + 0.0"),
    ("if not found:", "if len(found) == 0:"),
)
NEAR_REWRITES = {"textstats": TEXTSTATS_SAME}


def near_equivalent(original: str, rewrites: str, seed: int) -> str:
    """`original` with one seeded rewrite of NEAR_REWRITES[rewrites] applied (of those whose
    text it holds): as close to the original as a mutant is (one small edit, often on a line
    a mutant breaks), and what it does is unchanged."""
    rng = random.Random(f"near:{rewrites}:{seed}")
    table = [(old, new) for old, new in NEAR_REWRITES[rewrites] if old in original]
    if not table:
        return original
    old, new = rng.choice(table)
    return original.replace(old, new, 1)


def textstats(seed: int) -> Hidden:
    rel = "toybox/textstats.py"
    return Hidden(equivalents={rel: textstats_equivalent(seed)}, near={rel: "textstats"})


GENERATORS = {
    "durations": durations,
    "config": config,
    "linecount": linecount,
    "weekly": weekly,
    "textstats": textstats,
}


def generate(names: list[str], seed: int) -> Hidden:
    out = Hidden()
    for name in names:
        part = GENERATORS[name](seed)
        out.probes += part.probes
        out.files |= part.files
        out.equivalents |= part.equivalents
        out.near |= part.near
        out.calls += part.calls
    return out
