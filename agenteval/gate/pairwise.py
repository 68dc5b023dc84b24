"""`agenteval compare --pairwise RUN_A RUN_B`: which run's replies a pairwise judge prefers.

For work without ground truth. The units are the turns both runs answered for the same
scenario, iteration and user message (a turn whose user message differs between the runs, or
that either run did not complete, is counted and left out). Two tasks runs (`suite.kind:
tasks`, attempts under data/attempts) are compared on the tasks' quality axis instead: a unit
is a task and repeat both runs completed with the same request, the reply its final answer
with the diff it left, clustered by task. Two sessions benchmark outputs (dataset.json beside
transcripts/) are compared like scenario runs: every replayed turn both answered, by case.
Each unit is judged in both orders (`judges.pairwise`): B wins, ties or loses against A. The
report gives the three shares with Wilson intervals and the net preference (wins minus losses
over units) with a bootstrap interval clustered by scenario, and the judge's position bias on
these very units.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.judges.pairwise import PairOutcome, PairwiseJudge, position_bias
from agenteval.layout import Layout, transcript_path
from agenteval.schema.status import COMPLETED
from agenteval.schema.transcript import Transcript
from agenteval.stats import mean_ci, wilson_interval


class PairwiseInputError(ValueError):
    """A run folder without transcripts: bad input (exit 4), nothing judged."""


@dataclass(frozen=True)
class Unit:
    scenario: str
    iteration: int
    turn: int
    question: str
    context: str
    a: str
    b: str


def _transcripts(run: Path) -> dict[tuple[str, int], Transcript]:
    # a sessions benchmark output folder (dataset.json beside the engine's transcripts/) or a
    # scenario run folder (data/transcripts/)
    sessions = (run / "dataset.json").is_file() and (run / "transcripts").is_dir()
    folder = run / "transcripts" if sessions else Layout.run_dir(run, run).transcripts
    if not folder.is_dir():
        raise PairwiseInputError(f"{run}: no transcripts ({folder} is missing)")
    found = {}
    for path in sorted(folder.glob("*/*.json")):
        t = Transcript.model_validate_json(path.read_bytes())
        if transcript_path(folder, t.scenario_id, t.iteration) == path:
            found[t.scenario_id, t.iteration] = t
    return found


def _attempts_folder(run: Path) -> Path:
    return Layout.run_dir(run, run).data / "attempts"


def _task_replies(run: Path) -> dict[tuple[str, int], tuple[str, str | None]]:
    """(task, repeat) -> (request, final answer with its diff; None when not COMPLETED)."""
    from agenteval.benchmarks.tasks.commands import cut
    from agenteval.benchmarks.tasks.judge import DIFF_CHARS
    from agenteval.benchmarks.tasks.runner import attempt_dir, load_attempt

    data = Layout.run_dir(run, run).data
    found: dict[tuple[str, int], tuple[str, str | None]] = {}
    for folder in sorted(_attempts_folder(run).glob("*/r*")):
        attempt = load_attempt(folder)
        if attempt is None or attempt_dir(data, attempt.task_id, attempt.repeat) != folder:
            continue
        reply = None
        if attempt.status == COMPLETED:
            diff = folder / "workspace.diff"
            changes = diff.read_text(encoding="utf-8") if diff.is_file() else ""
            reply = (attempt.final_answer or "(no answer)") + (
                f"\n\nThe diff it left:\n{cut(changes, DIFF_CHARS)}" if changes else ""
            )
        found[attempt.task_id, attempt.repeat] = (attempt.prompt, reply)
    return found


def task_units_of(run_a: Path, run_b: Path) -> tuple[list[Unit], Counter[str]]:
    """The comparable attempts of two tasks runs, and why the others were left out."""
    a, b = _task_replies(run_a), _task_replies(run_b)
    left: Counter[str] = Counter()
    units = []
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            left["in one run only"] += 1
        elif a[key][1] is None or b[key][1] is None:
            left["not completed in both runs (unmeasured)"] += 1
        elif a[key][0] != b[key][0]:
            left["task with another request"] += 1
        else:
            units.append(Unit(key[0], key[1], 1, a[key][0], "", str(a[key][1]), str(b[key][1])))
    return units, left


def units_of(run_a: Path, run_b: Path) -> tuple[list[Unit], Counter[str]]:
    """The comparable turns (or tasks attempts) of two runs, and why the others were left out."""
    tasks = [_attempts_folder(r).is_dir() for r in (run_a, run_b)]
    if all(tasks):
        return task_units_of(run_a, run_b)
    if any(tasks):
        raise PairwiseInputError(f"{run_a} and {run_b}: one is a tasks run, the other is not")
    a, b = _transcripts(run_a), _transcripts(run_b)
    left: Counter[str] = Counter()
    units = []
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            left["in one run only"] += 1
            continue
        ta, tb = a[key], b[key]
        if ta.status != COMPLETED or tb.status != COMPLETED:
            left["not completed in both runs (unmeasured)"] += 1
            continue
        said_b = {t.turn: t for t in tb.turns}
        context: list[str] = []
        for turn in ta.turns:
            other = said_b.get(turn.turn)
            if other is None or other.user_message != turn.user_message:
                left["turn with another user message"] += 1
            else:
                units.append(Unit(key[0], key[1], turn.turn, turn.user_message,
                                  "\n".join(context), turn.response, other.response))  # fmt: skip
            context.append(f"User: {turn.user_message}")
    return units, left


def _share(k: int, n: int) -> dict[str, Any]:
    low, high = wilson_interval(k, n) if n else (None, None)
    return {"count": k, "rate": round(k / n, 4) if n else None,
            "low": None if low is None else round(low, 4),
            "high": None if high is None else round(high, 4)}  # fmt: skip


def summarize_pairs(units: list[Unit], outcomes: list[PairOutcome]) -> dict[str, Any]:
    judged = [(u, o) for u, o in zip(units, outcomes, strict=True) if o.winner is not None]
    n = len(judged)
    wins = sum(o.winner == "b" for _, o in judged)
    losses = sum(o.winner == "a" for _, o in judged)
    values = [{"b": 1.0, "a": -1.0}.get(o.winner or "", 0.0) for _, o in judged]
    clusters = [u.scenario for u, _ in judged]
    net: dict[str, Any] = {"value": round(sum(values) / n, 4) if n else None,
                           "low": None, "high": None}  # fmt: skip
    if len(set(clusters)) >= 2:
        ci = mean_ci(values, clusters, method="bootstrap", resamples=2000, seed=0)
        net |= {"low": round(ci.low, 4), "high": round(ci.high, 4)}
    return {
        "units": len(units),
        "judged": n,
        "unmeasured": len(units) - n,
        "b_wins": _share(wins, n),
        "ties": _share(n - wins - losses, n),
        "b_losses": _share(losses, n),
        "net_preference_b": net,
        "position_bias": position_bias(outcomes),
    }


def compare_pairwise(
    params: dict[str, Any], root: Path, run_a: Path, run_b: Path
) -> dict[str, Any]:
    units, left = units_of(run_a, run_b)
    judge = PairwiseJudge(params, root)
    concurrency = int((params.get("run") or {}).get("concurrency", 4))

    async def judge_all() -> list[PairOutcome]:
        semaphore = asyncio.Semaphore(max(1, concurrency))

        async def one(u: Unit) -> PairOutcome:
            async with semaphore:
                return await judge.compare(u.question, u.context, u.a, u.b, u.iteration)

        return list(await asyncio.gather(*(one(u) for u in units)))

    outcomes = asyncio.run(judge_all())
    return {
        "schema": "agenteval.pairwise/1",
        "judge": judge.participant.model_dump(mode="json"),
        "run_a": str(run_a),
        "run_b": str(run_b),
        "left_out": dict(left),
        **summarize_pairs(units, outcomes),
        "details": [
            {
                "scenario": u.scenario,
                "iteration": u.iteration,
                "turn": u.turn,
                "ab": o.ab,
                "ba": o.ba,
                "winner": o.winner,
            }
            for u, o in zip(units, outcomes, strict=True)
        ],
    }


def render_pairwise(report: dict[str, Any]) -> str:
    def share(s: dict[str, Any]) -> str:
        if s["rate"] is None:
            return f"{s['count']}"
        return f"{s['count']} ({s['rate']:.1%} [{s['low']:.1%}, {s['high']:.1%}])"

    net, bias = report["net_preference_b"], report["position_bias"]
    lines = [
        "# Pairwise comparison", "",
        f"- A: `{report['run_a']}` · B: `{report['run_b']}` · judge "
        f"{report['judge']['model']} (config `{(report['judge']['config_digest'] or '')[:12]}`)",
        f"- {report['judged']} of {report['units']} turn(s) judged in both orders "
        f"({report['unmeasured']} unmeasured); left out: {report['left_out'] or 'none'}",
        f"- B wins {share(report['b_wins'])}, ties {share(report['ties'])}, "
        f"loses {share(report['b_losses'])}",
        f"- net preference for B (wins - losses) / judged: {net['value']} "
        f"[{net['low']}, {net['high']}] (bootstrap over scenarios)",
        f"- position bias: the first-shown reply chosen {bias['first_chosen']} of "
        f"{bias['orders']} times ({bias['first_rate']}); {bias['flipped_with_order']} "
        "pair(s) flipped with the order and count as ties", "",
    ]  # fmt: skip
    return "\n".join(lines)
