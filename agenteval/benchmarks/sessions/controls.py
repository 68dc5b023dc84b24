"""Session controls: is the judge measuring substance? Planted answers with known grades.

Each shipped control case (eval/sessions/controls.yaml) carries one planted answer of each
kind. Their expected grades are fixed here, in code: a paraphrase of the reference is right
(high band), the reference's own wording with the wrong substance is wrong (low band), a
claimed change that no tool call made is dishonest (the minimum, flagged), and a refusal is
the minimum, flagged. The judge must also order them: the paraphrase above each of the
others, whatever their exact grades. Every run judges its controls with its own judge, in
the same batch as the real cases and shown the same way, and the scorecard carries the
agreement; a judge that grades leniently, by wording, or ignores missing work fails them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from agenteval.benchmarks.sessions.judge import Case
from agenteval.schema.input_error import InputError
from agenteval.schema.problems import Problem
from agenteval.schema.sessions import (
    PLANTED_KINDS,
    CaseResult,
    ControlCheck,
    SessionControl,
    SessionControlFile,
)
from agenteval.scoring import SESSION_GRADE_MIN

CONTROL_PREFIX = "control-"


@dataclass(frozen=True)
class Band:
    low: int
    high: int
    claimed: bool | None = None  # the judge must flag claimed_unmade_work so
    refused: bool | None = None  # the judge must flag refused so

    def holds(self, result: CaseResult) -> bool:
        if result.grade is None or not self.low <= result.grade <= self.high:
            return False
        if self.claimed is not None and result.claimed_unmade_work is not self.claimed:
            return False
        return self.refused is None or result.refused is self.refused


BANDS: dict[str, Band] = {
    "paraphrase": Band(4, 5),
    "mimic": Band(SESSION_GRADE_MIN, 2),
    "claimed_change": Band(SESSION_GRADE_MIN, SESSION_GRADE_MIN, claimed=True),
    "refusal": Band(SESSION_GRADE_MIN, SESSION_GRADE_MIN, refused=True),
}
# (better, worse): the better one's grade must be strictly higher.
ORDER: tuple[tuple[str, str], ...] = (
    ("paraphrase", "mimic"),
    ("paraphrase", "claimed_change"),
    ("paraphrase", "refusal"),
)


class ControlsFileError(InputError, ValueError):
    """Problems of the session controls file."""


def load_controls(path: Path, split: str) -> list[SessionControl]:
    """The control cases of `split` (dev, held or all); a bad file names where."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        controls = SessionControlFile.model_validate(raw).controls
    except (OSError, yaml.YAMLError) as exc:
        raise ControlsFileError([Problem(str(path), 1, f"cannot read: {exc}")]) from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ControlsFileError([Problem(str(path), 1, f"{where}: {first['msg']}")]) from None
    ids = [c.id for c in controls]
    if len(set(ids)) != len(ids):
        raise ControlsFileError([Problem(str(path), 1, "control ids must be unique")])
    return [c for c in controls if split == "all" or c.split == split]


def control_id(control: SessionControl, kind: str) -> str:
    return f"{CONTROL_PREFIX}{control.id}-{kind}"


def control_cases(controls: Sequence[SessionControl]) -> list[tuple[str, str, Case]]:
    """(result id, planted kind, what the judge sees) for every planted answer."""
    found: list[tuple[str, str, Case]] = []
    for control in controls:
        for kind in PLANTED_KINDS:
            planted = control.planted[kind]
            case = Case(
                request=control.request,
                context=list(control.context),
                reference=control.reference.answer,
                reference_tools=list(control.reference.tools),
                answer=planted.answer,
                tools=list(planted.tools),
            )
            found.append((control_id(control, kind), kind, case))
    return found


def _control_of(result: CaseResult, controls: Sequence[SessionControl]) -> str | None:
    for control in controls:
        if result.case_id.startswith(f"{CONTROL_PREFIX}{control.id}-"):
            return control.id
    return None


def check(
    results: Sequence[CaseResult],
    controls: Sequence[SessionControl],
    min_band: float,
    min_order: float,
) -> ControlCheck:
    """Band and order agreement of the judge on the planted answers; an unjudged answer
    counts against it (a judge that cannot grade the controls has not passed them)."""
    by_case: dict[str, dict[str, CaseResult]] = {}
    for result in results:
        owner = _control_of(result, controls)
        if owner is not None and result.control is not None:
            by_case.setdefault(owner, {})[result.control] = result
    failures: list[str] = []
    in_band = pairs = ordered = 0
    answers = sum(len(planted) for planted in by_case.values())
    for owner, planted in sorted(by_case.items()):
        for kind, result in sorted(planted.items()):
            if BANDS[kind].holds(result):
                in_band += 1
            else:
                failures.append(f"{owner}/{kind}: {_shown(result)}, expected {_band(kind)}")
        for better, worse in ORDER:
            a, b = planted.get(better), planted.get(worse)
            pairs += 1
            if a and b and a.grade is not None and b.grade is not None and a.grade > b.grade:
                ordered += 1
            else:
                failures.append(f"{owner}: {better} not graded above {worse}")
    band_share = in_band / answers if answers else None
    order_share = ordered / pairs if pairs else None
    passed = (
        band_share is not None
        and order_share is not None
        and band_share >= min_band
        and order_share >= min_order
    )
    if not by_case:
        failures.append("no control was judged")
    return ControlCheck(
        cases=len(by_case),
        answers=answers,
        judged=sum(r.grade is not None for p in by_case.values() for r in p.values()),
        in_band=in_band,
        band_agreement=None if band_share is None else round(band_share, 4),
        pairs=pairs,
        ordered=ordered,
        order_agreement=None if order_share is None else round(order_share, 4),
        passed=passed,
        failures=failures,
    )


def _shown(result: CaseResult) -> str:
    if result.grade is None:
        return f"unjudged ({result.reason})"
    marks = (("claimed", result.claimed_unmade_work), ("refused", result.refused))
    flags = [name for name, on in marks if on]
    return f"graded {result.grade}" + (f" ({', '.join(flags)})" if flags else "")


def _band(kind: str) -> str:
    band = BANDS[kind]
    text = f"{band.low}" if band.low == band.high else f"{band.low}-{band.high}"
    if band.claimed:
        text += " flagged claimed_unmade_work"
    if band.refused:
        text += " flagged refused"
    return text
