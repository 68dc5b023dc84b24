"""report.md of a memory benchmark run: worst scenario first, every failed check with the
evidence of why, and for each failure what the store says about it (in the store but not
shown for that request, or never stored; the write that put a wrong item there).
"""

from __future__ import annotations

from agenteval.benchmarks.memory.checks import matches
from agenteval.benchmarks.memory.records import (
    METRICS,
    CheckResult,
    MemoryResults,
    ScenarioResult,
    WriteRecord,
)

LABELS = {
    "shown_recall": "shown recall",
    "shown_clean": "shown clean",
    "store_accuracy": "store accuracy",
    "answer_accuracy": "answer accuracy",
}


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _origin(scenario: ScenarioResult, text: str) -> str | None:
    """The write that put `text` in the store: chat, turn and how."""
    from agenteval.benchmarks.memory.records import Match

    found: list[tuple[str, WriteRecord]] = [
        (log.id, write)
        for log in scenario.chats
        for write in log.writes
        if write.text and write.outcome in ("stored", "updated") and write.text.strip() in text
    ]
    if not found and text:
        words = Match(all=[text[:60]])
        found = [
            (c.id, w)
            for c in scenario.chats
            for w in c.writes
            if w.text and w.outcome in ("stored", "updated") and matches(w.text, words)
        ]
    if not found:
        return None
    chat, write = found[-1]
    where = "upkeep" if write.turn is None else f"turn {write.turn}"
    return f"written in chat {chat} ({where}, by {write.via})"


def _explain(scenario: ScenarioResult, check: CheckResult) -> str:
    text = check.why.split(": ", 1)[1] if ": " in check.why else ""
    if check.metric in ("shown_clean", "store_accuracy") and text:
        origin = _origin(scenario, text.rstrip("."))
        return f"{check.why}; {origin}" if origin else check.why
    return check.why


CAUSES = {
    "recall": "in the store, but not shown for the request",
    "never_stored": "expected, but not in the store (never kept, or replaced)",
    "extract": "the model's extraction proposed it and the memory kept it",
    "consolidate": "consolidating old chats proposed it and the memory kept it",
    "call": "an explicit memory call wrote it",
    "chat_log": "kept in a chat log",
    "answer": "the model's answer",
    "other": "other",
}


def cause(scenario: ScenarioResult, check: CheckResult) -> str:
    """The kind of failure, read from its evidence (a key of CAUSES)."""
    if check.metric == "answer_accuracy":
        return "answer"
    if "in the store but not shown" in check.why:
        return "recall"
    if check.why.startswith("not ") and check.metric in ("shown_recall", "store_accuracy"):
        return "never_stored"
    if "(chat" in check.why.split(":", 1)[0]:
        return "chat_log"
    explained = _explain(scenario, check)
    for via in ("extract", "consolidate", "call"):
        if f"by {via})" in explained:
            return via
    return "other"


def _causes(results: MemoryResults) -> list[str]:
    counted: dict[str, list[str]] = {}
    for s in results.scenarios:
        for p in s.probes:
            for c in p.checks:
                if c.ok is False:
                    counted.setdefault(cause(s, c), []).append(c.id)
    lines = ["", "Failed checks by cause:", ""]
    for key, ids in sorted(counted.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"- {CAUSES[key]}: {len(ids)}")
    return lines if counted else []


def _refusals(scenario: ScenarioResult) -> list[str]:
    out = []
    for chat in scenario.chats:
        for w in chat.writes:
            if w.outcome == "refused":
                out.append(
                    f"- {chat.id} turn {w.turn} ({w.via} {w.op} {w.kind}): {w.text!r} - {w.reason}"
                )
    return out


def render(results: MemoryResults) -> str:
    c = results.counts
    digest = (results.memory.config_digest or "n/a")[:12]
    model = results.model.kind + (f" {results.model.model}" if results.model.model else "")
    lines = [
        f"# Memory benchmark: suite {results.suite}",
        "",
        f"Memory: `{results.memory.kind}` ({digest}); model: `{model}`.",
        f"{c['scenarios']} scenarios, {c['chats']} chats, {c['probes']} probes: "
        f"{c['passed']} of {c['checks']} checks passed, {c['failed']} failed, "
        f"{c['unmeasured']} unmeasured.",
        "",
        "| scenario | " + " | ".join(LABELS[m] for m in METRICS) + " | failed |",
        "|---|" + "---|" * (len(METRICS) + 1),
    ]
    for s in results.scenarios:
        lines.append(
            f"| {s.id} | "
            + " | ".join(_pct(s.metrics.get(m)) for m in METRICS)
            + f" | {s.failed} |"
        )
    lines.append(
        "| **all** | "
        + " | ".join(_pct(results.metrics.get(m)) for m in METRICS)
        + f" | {c['failed']} |"
    )
    lines += _causes(results)
    for s in results.scenarios:
        lines += ["", f"## {s.id}: {s.title}", "", "Stresses: " + "; ".join(s.stresses), ""]
        failing = [(p, ch) for p in s.probes for ch in p.checks if ch.ok is not True]
        if not failing:
            lines.append(f"All {s.passed} checks passed.")
        for probe, check in failing:
            state = "FAILED" if check.ok is False else "unmeasured"
            lines.append(
                f"- **{state}** `{check.id}` at {probe.at:%Y-%m-%d %H:%M}, request "
                f"{probe.request!r}: {check.expect}. Why: {_explain(s, check)}"
            )
        refused = _refusals(s)
        if refused:
            lines += ["", f"Writes the memory refused ({len(refused)}):", *refused]
        errors = [f"- {chat.id}: {e}" for chat in s.chats for e in chat.model_errors]
        if errors:
            lines += ["", f"Unusable model replies ({len(errors)}):", *errors]
    return "\n".join(lines) + "\n"
