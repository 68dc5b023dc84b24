"""Controls labelled by people (eval/people_controls/): read, dealt, judged, summarised.

A reviewer's feedback on a traced turn (`tracking.feedback` reads it from MLflow) becomes a
`PeopleControl`; this module turns those into the (SuiteItem, Transcript) pairs a run
produced, judges them with any judge, and measures the judge's agreement *with people*
beside its agreement with the written controls (`controls.run.summarize`, the same
figures and intervals).

Which feedback is a turn verdict: a feedback named for the whole turn (`VERDICT_NAMES`) with
a pass/fail value, or a feedback named for a rubric dimension whose value fails it (a
reviewer who marks correctness wrong fails the turn; one who marks it right says nothing
about the others). Every other feedback is left out with its reason, never guessed.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError

from agenteval.controls.build import case_id
from agenteval.controls.run import Graded, Outcome, grade, summarize
from agenteval.fileio import digest_of, read_json, write_json
from agenteval.judges.base import Judge
from agenteval.schema.params_base import DIMENSION_NAMES
from agenteval.schema.people import PeopleControl, PeopleControlFile, PeopleLabel, Review
from agenteval.schema.problems import Problem
from agenteval.schema.status import COMPLETED
from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import Participant, ToolCall, Transcript, TranscriptTurn
from agenteval.scoring import ScoringRules

PEOPLE_CLASS = "people"
# Fixed on purpose, as controls.load's: changing either re-deals every control.
PEOPLE_SALT = "agenteval-people-controls-v1"
SHARES = (("dev", 0.4), ("held", 0.4), ("fresh", 0.2))
VERDICT_NAMES = frozenset({"feedback", "verdict", "turn", "pass", "human_verdict"})
PASS_WORDS = frozenset({"pass", "yes", "true", "good", "correct", "thumbs_up", "1"})
FAIL_WORDS = frozenset({"fail", "no", "false", "bad", "incorrect", "thumbs_down", "0"})
DIMENSIONS = frozenset(get_args(DIMENSION_NAMES))


def people_split(control_id: str) -> str:
    """dev, held or fresh, from a salted sha256 of the id: stable across machines."""
    digest = hashlib.sha256(f"{PEOPLE_SALT}:{control_id}".encode()).hexdigest()
    point, edge = int(digest[:8], 16) / 0x1_0000_0000, 0.0
    for name, share in SHARES:
        edge += share
        if point < edge:
            return name
    return SHARES[-1][0]


def control_id(trace_id: str) -> str:
    return "p_" + hashlib.sha256(f"{PEOPLE_SALT}:trace:{trace_id}".encode()).hexdigest()[:16]


def _word(value: Any) -> str | None:
    if isinstance(value, bool):
        return "pass" if value else "fail"
    if isinstance(value, str):
        word = value.strip().lower().replace(" ", "_")
        if word in PASS_WORDS:
            return "pass"
        if word in FAIL_WORDS:
            return "fail"
    return None


def read_verdict(name: str, value: Any) -> tuple[str | None, str | None]:
    """(verdict, failing dimension) one feedback gives, or (None, why it gives none)."""
    word = _word(value)
    key = name.strip().lower()
    if key in DIMENSIONS:
        if word == "fail":
            return "fail", key
        why = "a dimension marked right says nothing of the turn" if word else "value unread"
        return None, f"{name}={value!r}: {why}"
    if key not in VERDICT_NAMES:
        return None, f"{name!r} is not a turn verdict (names: {', '.join(sorted(VERDICT_NAMES))})"
    if word is None:
        return None, f"{name}={value!r}: not a pass/fail value"
    return word, None


def label_of(reviews: Sequence[Review]) -> tuple[PeopleLabel | None, str | None]:
    """The turn's label from its reviews, or (None, why): reviewers who disagree give none."""
    verdicts, failing, notes, skipped = set(), [], [], []
    for review in reviews:
        verdict, extra = read_verdict(review.name, review.value)
        if verdict is None:
            skipped.append(extra or "")
            continue
        verdicts.add(verdict)
        if extra and extra not in failing:
            failing.append(extra)
        if review.rationale:
            notes.append(f"{review.reviewer}: {review.rationale}")
    if not verdicts:
        return None, "; ".join(skipped) or "no feedback"
    if len(verdicts) > 1:
        who = ", ".join(sorted({r.reviewer for r in reviews}))
        return None, f"reviewers disagree ({who}): left out, never settled by a vote"
    verdict = verdicts.pop()
    return PeopleLabel(verdict=verdict, failing=failing, note=" | ".join(notes) or None), None


@dataclass(frozen=True)
class LoadedPeople:
    control: PeopleControl
    split: str


def people_file(params: dict[str, Any], root: Path) -> Path:
    """Where the people controls are (params `controls.people`)."""
    return root / str(params["controls"]["people"])


def load_people(path: Path) -> list[LoadedPeople]:
    """Every people control in `path` with its split; [] when the file does not exist."""
    if not path.is_file():
        return []
    try:
        parsed = PeopleControlFile.model_validate(read_json(path))
    except (ValidationError, ValueError) as exc:
        raise PeopleError([Problem(str(path), 1, _first_error(exc))]) from None
    return [LoadedPeople(c, people_split(c.id)) for c in parsed.controls]


class PeopleError(Exception):
    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        e = exc.errors()[0]
        return f"{'.'.join(map(str, e['loc']))}: {e['msg']}"
    return str(exc)


def merge(existing: Sequence[PeopleControl], found: Sequence[PeopleControl]) -> list[PeopleControl]:
    """Imported controls over the stored ones by id (a review changed upstream replaces its
    control; importing twice adds nothing), in id order so the file diffs cleanly."""
    by_id = {c.id: c for c in existing} | {c.id: c for c in found}
    return [by_id[k] for k in sorted(by_id)]


def write_people(path: Path, controls: Sequence[PeopleControl]) -> None:
    write_json(path, PeopleControlFile(controls=list(controls)).model_dump(by_alias=True))


def pair_of(control: PeopleControl) -> tuple[SuiteItem, Transcript]:
    """The reviewed turn as a run had it: the scenario cut after that turn, the conversation
    up to it, so a judge grades it with the context the reviewer saw."""
    scenario = control.item.scenario
    cut = scenario.model_copy(update={"turns": scenario.turns[: control.turn]})
    item = control.item.model_copy(update={"scenario": cut})
    turns = [
        TranscriptTurn(
            turn=n,
            user_message=t.user,
            response=t.reply,
            tool_calls=[ToolCall(**c.model_dump()) for c in t.tool_calls],
        )
        for n, t in enumerate(control.turns, start=1)
    ]
    transcript = Transcript(
        scenario_id=scenario.id,
        scenario_digest=control.item.digest,
        iteration=control.iteration,
        status=COMPLETED,
        target=Participant(kind="traced", config_digest=control.trace_id),
        simulator=Participant(kind="scripted"),
        turns=turns,
    )
    return item, transcript


def blind_pair(control: PeopleControl) -> tuple[SuiteItem, Transcript]:
    """`pair_of` under an opaque case id (controls.build.case_id), as the written controls
    are mixed into a run: the judge cannot tell a reviewed turn from a real scenario."""
    item, transcript = pair_of(control)
    opaque = case_id(f"people:{control.id}")
    scenario = item.scenario.model_copy(update={"id": opaque})
    item = item.model_copy(update={"scenario": scenario, "path": f"controls/{opaque}"})
    return item, transcript.model_copy(update={"scenario_id": opaque})


async def judge_people(
    judge: Judge, people: Sequence[LoadedPeople], rules: ScoringRules, concurrency: int = 4
) -> list[Outcome]:
    """Each people control judged once, as an `Outcome` with the reviewers' label."""
    semaphore = asyncio.Semaphore(max(1, concurrency))

    async def one(loaded: LoadedPeople) -> Graded:
        item, transcript = pair_of(loaded.control)
        async with semaphore:
            return grade(await judge.judge(item, transcript), rules)

    graded = await asyncio.gather(*(one(p) for p in people))
    outcomes = []
    for loaded, g in zip(people, graded, strict=True):
        c = loaded.control
        outcome = Outcome(c.id, PEOPLE_CLASS, loaded.split, c.label.verdict, c.label.failing, {})
        outcome.repeats.append(g)
        outcomes.append(outcome)
    return outcomes


def people_report(outcomes: Sequence[Outcome], section: dict[str, Any]) -> dict[str, Any]:
    """Agreement with people, per split and over all, with the written controls' statistics
    (raw agreement, kappa, AC1 with bootstrap intervals, false passes with Wilson)."""
    resamples, seed = int(section["bootstrap_resamples"]), int(section["seed"])
    conf = float(section["conf"])
    splits = {
        name: summarize([o for o in outcomes if o.split == name], resamples, conf, seed)
        for name, _ in SHARES
        if any(o.split == name for o in outcomes)
    }
    labels = sorted((o.id, o.label) for o in outcomes)
    return {
        "controls": len(outcomes),
        "digest": digest_of(labels),
        "overall": summarize(list(outcomes), resamples, conf, seed),
        "splits": splits,
        "disagreements": [
            {"id": o.id, "split": o.split, "label": o.label, "verdict": o.first.verdict}
            for o in outcomes
            if o.first.verdict != o.label
        ],
    }
