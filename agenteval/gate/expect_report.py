"""What `agenteval gate RUN --expect FILE` prints and writes: main beside the run, per limit."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from agenteval.fileio import write_json, write_text
from agenteval.gate.expectations import GateResult
from agenteval.schema.expectations import Expectations


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _status(ok: bool | None) -> str:
    return {True: "ok", False: "MISS", None: "not gated"}[ok]


def lines(result: GateResult, expected: Expectations, source: str, enforce: bool) -> list[str]:
    agent = expected.identity.agent
    out = [
        f"# Gate: {source}",
        "",
        f"Expectations for {agent.get('kind')} / {agent.get('model')} from "
        f"{expected.measured_on.get('draws')} draw(s) of main "
        f"(commit {expected.measured_on.get('commit') or 'unknown'}), proposed "
        f"{expected.proposed_at}; this run: {len(result.draws)} draw(s).",
        "",
    ]
    if not result.comparable:
        out.append("**Not comparable** — the limits belong to another agent model, suite or judge:")
        out += [f"- {d}" for d in result.differences]
    else:
        out += ["| check | limit | main worst | main best | this run (worst draw) | result |"]
        out.append("|---|---|---|---|---|---|")
        for c in result.checks:
            out.append(
                f"| {c.name} | {_fmt(c.limit)} | {_fmt(c.main_worst)} | {_fmt(c.main_best)} | "
                f"{_fmt(c.run)} | {_status(c.ok)} |"
            )
    changed = [row for row in result.scenarios if row.get("change")]
    out += ["", f"Scenarios that changed against main ({len(changed)}):"]
    out += [f"- {r['id']}: main {r['main']}, this run {r['run']} — {r['change']}" for r in changed]
    mode = "enforced: a miss exits 1" if enforce else "report only (--enforce to fail on a miss)"
    out += ["", f"Verdict: {result.verdict} ({mode})."]
    return out


def write_gate(result: GateResult, text: list[str], out: Path) -> Path:
    data = {
        "verdict": result.verdict,
        "comparable": result.comparable,
        "differences": result.differences,
        "checks": [asdict(c) for c in result.checks],
        "draws": [d.model_dump() for d in result.draws],
        "scenarios": result.scenarios,
    }
    write_json(out / "gate.json", data)
    write_text(out / "gate.md", "\n".join(text) + "\n")
    return out / "gate.md"
