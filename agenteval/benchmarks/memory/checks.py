"""The memory benchmark's checks: one home for how a probe is read against what was shown,
what is stored and what the model answered. Pure functions.

A check phrase matches a unit (one line the agent was shown, or one stored item) when it
appears there as whole words after the answer reader's normalisation (case, accents,
articles, number words, thousands separators: `benchmarks.answers.normalise`; ISO dates
read as "15 May 2025"). A `Match` needs all its `all` phrases, one of its `any` phrases
and none of its `none` phrases in the same unit. A unit that states the value as history
("moved from Austin", "no longer vegetarian") is not a stale value.

Metrics are shares of checks passed: shown recall (every expected memory shown), shown
clean (no stale value, forgotten fact or planted text shown), store accuracy (the store
holds what it should and nothing it should not), answer accuracy (`full` only).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from agenteval.benchmarks.answers import contains, normalise, precheck, sentences
from agenteval.benchmarks.memory.records import (
    METRICS,
    AnswerExpect,
    CheckResult,
    Match,
    Metric,
    Probe,
    as_match,
)
from agenteval.memory.base import Shown
from agenteval.schema.memory_items import StoredItem

HISTORY = (
    "moved from",
    "used to",
    "previously",
    "formerly",
    "no longer",
    "former",
    "instead of",
    "swapped",
    "switched from",
    "replaced",
)
BELIEF_STATUS = (None, "open")
EVIDENCE_CHARS = 160


ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::\d{2}(?:\.\d+)?)?)?\b")


def _spelled_dates(text: str) -> str:
    """ISO dates as people write them (2025-05-15T14:00 -> 15 May 2025 14:00), so a check
    reads a memory's dates whichever way it prints them."""

    def spell(m: re.Match[str]) -> str:
        try:
            day = date(int(m[1]), int(m[2]), int(m[3]))
        except ValueError:
            return m[0]
        return f"{day.day} {day:%b %Y}" + (f" {m[4]}:{m[5]}" if m[4] else "")

    return ISO_DATE.sub(spell, text)


def _has(unit: str, phrase: str) -> bool:
    return contains(normalise(_spelled_dates(unit)), normalise(phrase))


def matches(unit: str, match: Match) -> bool:
    if not all(_has(unit, p) for p in match.all):
        return False
    if match.any and not any(_has(unit, p) for p in match.any):
        return False
    return not any(_has(unit, p) for p in match.none)


def is_history(unit: str) -> bool:
    return any(_has(unit, marker) for marker in HISTORY)


def _cut(text: str) -> str:
    return text if len(text) <= EVIDENCE_CHARS else text[: EVIDENCE_CHARS - 3] + "..."


@dataclass(frozen=True)
class Unit:
    text: str
    where: str  # "shown: Related" / "stored item-4 (fact, chat c03)"


def shown_units(shown: Shown) -> list[Unit]:
    return [
        Unit(line, f"shown under {name}")
        for name, lines in shown.sections.items()
        for line in lines
    ]


def _item_text(item: StoredItem) -> str:
    if item.due is None:
        return item.text
    return f"{item.text} (due {item.due:%a} {item.due.day} {item.due:%b %Y %H:%M})"


def store_units(items: Sequence[StoredItem], scope: str) -> list[Unit]:
    kept = [i for i in items if scope == "all" or (i.kind != "chat" and i.status in BELIEF_STATUS)]
    return [
        Unit(_item_text(i), f"stored {i.id} ({i.kind}{', ' + i.status if i.status else ''})")
        for i in kept
    ]


def expect_present(units: Sequence[Unit], match: Match, what: str) -> tuple[bool, str]:
    hits = [u for u in units if matches(u.text, match)]
    if hits:
        return True, f"{hits[0].where}: {_cut(hits[0].text)}"
    return False, f"not {what}" + ("" if units else " (nothing at all)")


def expect_absent(units: Sequence[Unit], match: Match, what: str) -> tuple[bool, str]:
    hits = [u for u in units if matches(u.text, match) and not is_history(u.text)]
    if hits:
        return False, f"{hits[0].where}: {_cut(hits[0].text)}"
    return True, f"not {what}"


def grade_answer(answer: str, expect: AnswerExpect, request: str) -> tuple[bool | None, str]:
    """The model's answer read by code: a wrong value asserted fails it; otherwise the
    answer reader (`benchmarks.answers.precheck`) decides, or defers (unmeasured)."""
    for sentence in sentences(answer):
        if is_history(sentence) or precheck(sentence, expect.truth, expect.aliases).letter == "A":
            continue
        for wrong in expect.wrong:
            if precheck(sentence, wrong, (), request).letter == "A":
                return False, f"asserts {wrong!r}: {_cut(sentence)}"
    verdict = precheck(answer, expect.truth, expect.aliases, request)
    if verdict.letter == "A":
        return True, f"gives {expect.truth!r} ({verdict.rule})"
    if verdict.letter in ("B", "C"):
        return False, f"does not give {expect.truth!r} ({verdict.rule})"
    return None, f"code cannot settle it ({verdict.rule})"


def probe_checks(
    scenario: str, probe: Probe, shown: Shown, store: Sequence[StoredItem], answer: str | None
) -> list[CheckResult]:
    """Every check of `probe`, in the order written; ids stable for the gate."""
    out: list[CheckResult] = []

    def add(metric: Metric, expect: str, ok: bool | None, why: str) -> None:
        n = sum(c.metric == metric for c in out)
        out.append(
            CheckResult(
                id=f"{scenario}/{probe.id}/{metric}/{n}",
                metric=metric,
                expect=expect,
                ok=ok,
                why=why,
            )
        )

    lines = shown_units(shown)
    if probe.shown is not None:
        for raw in probe.shown.must:
            m = as_match(raw)
            ok, why = expect_present(lines, m, "shown")
            if not ok:
                kept, where = expect_present(store_units(store, "beliefs"), m, "stored")
                why += (
                    f"; in the store but not shown for this request ({where})"
                    if kept
                    else ("; not in the store either")
                )
            add("shown_recall", f"shown: {m.label()}", ok, why)
        for raw in probe.shown.must_not:
            m = as_match(raw)
            add("shown_clean", f"not shown: {m.label()}", *expect_absent(lines, m, "shown"))
    if probe.store is not None:
        for raw in probe.store.must:
            m = as_match(raw)
            add(
                "store_accuracy",
                f"stored: {m.label()}",
                *expect_present(store_units(store, m.scope), m, "stored"),
            )
        for raw in probe.store.must_not:
            m = as_match(raw)
            add(
                "store_accuracy",
                f"not stored ({m.scope}): {m.label()}",
                *expect_absent(store_units(store, m.scope), m, "stored"),
            )
    if probe.answer is not None and answer is not None:
        add(
            "answer_accuracy",
            f"answer gives {probe.answer.truth!r}",
            *grade_answer(answer, probe.answer, probe.request),
        )
    return out


def shares(checks: Sequence[CheckResult]) -> dict[str, float | None]:
    """Per metric, the share of its measured checks that passed (None: none measured)."""
    found: dict[str, float | None] = {}
    for metric in METRICS:
        measured = [c.ok for c in checks if c.metric == metric and c.ok is not None]
        found[metric] = sum(measured) / len(measured) if measured else None
    return found


def standing(checks: Sequence[CheckResult]) -> tuple[float, int]:
    """Sort key, worst first: the share of measured checks passed, then more checks first."""
    measured = [c.ok for c in checks if c.ok is not None]
    return (sum(measured) / len(measured) if measured else 1.0, -len(measured))
