"""Calibration inside every run: labelled controls mixed into the judge stage, unannounced.

With `judge.controls_per_run: N` the judge stage also grades N controls of the `held`
split (a stable sample, half fail labels), built exactly as a real scenario and transcript
and judged by the same judge in the same batch. The judge sees nothing that tells them
apart: opaque `case_<hash>` ids, the same case layout (judges.prompts shows every case
blind), real tool results. Their verdicts go to data/controls/, never into the scenario
results; the score stage turns them into the run's calibration: agreement and false-pass
rate with intervals, checked against the controls gate of params `controls`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenteval.fileio import digest_of, read_json, write_json
from agenteval.judges.code import CodeJudge, judge_transcript
from agenteval.judging import Case
from agenteval.layout import load_verdict_file
from agenteval.schema.scorecard import Calibration, CalibrationCase, Estimate, PeopleCalibration
from agenteval.scoring import ScoringRules

if TYPE_CHECKING:
    from agenteval.controls.run import Graded, Outcome

# The measuring machinery (controls.measure, .run, .report and, through their statistics,
# numpy) is imported only by a run that mixes controls in: a run without them starts its
# inference about 0.1 s sooner.

MIXED = "mixed.json"
SPLIT = "held"
PEOPLE = "people"  # the rows of reviewed turns (controls.people), reported apart


def check(params: dict[str, Any], root: Path) -> None:
    """Refuse bad control files before any work starts (ControlsError, path:line)."""
    if int((params.get("judge") or {}).get("controls_per_run") or 0) > 0:
        from agenteval.controls.measure import chosen_controls

        chosen_controls(params, root, SPLIT, 1)


def mix(params: dict[str, Any], root: Path, folder: Path) -> list[Case]:
    """The controls to judge alongside the run, with their labels written to folder/MIXED."""
    n = int((params.get("judge") or {}).get("controls_per_run") or 0)
    index = folder / MIXED
    if n == 0:
        # An empty index, never a stale one from an earlier setting (and the folder the
        # judge stage declares as an output exists).
        write_json(index, {"split": SPLIT, "controls_digest": None, "cases": []})
        return []
    from agenteval.controls.measure import chosen_controls
    from agenteval.controls.run import code_certain, pairs_of

    manifest, controls = chosen_controls(params, root, SPLIT, n)
    pairs = pairs_of(controls, manifest, root)
    rules = ScoringRules.from_params(params.get("judge") or {})
    code = CodeJudge().participant
    cases, rows = [], []
    for loaded, (item, transcript) in zip(controls, pairs, strict=True):
        c = loaded.control
        cases.append(Case(item, transcript, folder / item.scenario.id / "0.json"))
        rows.append(
            {
                "case": item.scenario.id,
                "control": c.id,
                "class": c.klass,
                "label": c.label.verdict,
                "failing": list(c.label.failing),
                "ranges": {str(d): list(r) for d, r in c.label.scores.items()},
                "certain": code_certain(c, judge_transcript(item, transcript, code), rules),
            }
        )
    more_cases, more_rows = _people(params, root, folder, n)
    digest = digest_of([c.control.model_dump(mode="json", by_alias=True) for c in controls])
    write_json(index, {"split": SPLIT, "controls_digest": digest, "cases": rows + more_rows})
    return cases + more_cases


def _people(
    params: dict[str, Any], root: Path, folder: Path, n: int
) -> tuple[list[Case], list[dict[str, Any]]]:
    """Up to n held turns people reviewed, as blind as the written controls."""
    from agenteval.controls.people import blind_pair, load_people, people_file

    held = [p for p in load_people(people_file(params, root)) if p.split == SPLIT][:n]
    cases: list[Case] = []
    rows: list[dict[str, Any]] = []
    for loaded in held:
        item, transcript = blind_pair(loaded.control)
        cases.append(Case(item, transcript, folder / item.scenario.id / "0.json"))
        c = loaded.control
        rows.append({"case": item.scenario.id, "control": c.id, "class": PEOPLE,
                     "label": c.label.verdict, "failing": list(c.label.failing),
                     "ranges": {}, "certain": None, "source": PEOPLE})  # fmt: skip
    return cases, rows


def _outcome(row: Mapping[str, Any], graded: Graded) -> Outcome:
    from agenteval.controls.run import Outcome

    ranges = {d: (float(r[0]), float(r[1])) for d, r in row["ranges"].items()}
    outcome = Outcome(row["control"], row["class"], SPLIT, row["label"], row["failing"], ranges)
    outcome.repeats.append(graded)
    outcome.certain = row.get("certain")
    return outcome


def calibration(folder: Path, params: Mapping[str, Any]) -> Calibration | None:
    """The run's calibration from the mixed-in controls' verdicts; None when none were."""
    index = folder / MIXED
    if not index.is_file():
        return None
    mixed = read_json(index)
    if not mixed["cases"]:
        return None
    from agenteval.controls.report import gate
    from agenteval.controls.run import DEFERRED, Graded, grade
    from agenteval.controls.run import summarize as summarize_outcomes

    rules = ScoringRules.from_params(params.get("judge") or {})
    section = params["controls"]
    outcomes: list[Outcome] = []
    people: list[Outcome] = []
    for row in mixed["cases"]:
        verdict = load_verdict_file(folder / row["case"] / "0.json")
        graded = (
            grade(verdict, rules)
            if verdict is not None
            else Graded(DEFERRED, None, {}, {}, "no verdict")
        )
        (people if row.get("source") == PEOPLE else outcomes).append(_outcome(row, graded))
    conf = float(section["conf"])
    resamples, seed = int(section["bootstrap_resamples"]), int(section["seed"])
    s = summarize_outcomes(outcomes, resamples, conf, seed)
    misses = gate(s, section)
    return Calibration(
        controls=s["controls"],
        judged=s["judged"],
        coverage=s["coverage"],
        agreement=Estimate(**s["agreement"]),
        kappa=Estimate(**s["kappa"]),
        false_passes=s["false_passes"],
        false_pass_rate=Estimate(value=s["false_pass_rate"], **s["false_pass_interval"]),
        false_fails=s["false_fails"],
        false_fail_rate=s["false_fail_rate"],
        code_certain=s["code_certain"],
        thresholds={k: section[k] for k in ("min_agreement", "max_false_passes", "min_coverage")},
        passed=not misses,
        misses=misses,
        split=mixed.get("split", SPLIT),
        controls_digest=mixed.get("controls_digest"),
        cases=[_case(o) for o in outcomes],
        people=_people_calibration(people, resamples, conf, seed),
    )


def _people_calibration(
    outcomes: list[Outcome], resamples: int, conf: float, seed: int
) -> PeopleCalibration | None:
    if not outcomes:
        return None
    from agenteval.controls.run import summarize as summarize_outcomes

    s = summarize_outcomes(outcomes, resamples, conf, seed)
    return PeopleCalibration(
        controls=s["controls"], judged=s["judged"], agreement=Estimate(**s["agreement"]),
        kappa=Estimate(**s["kappa"]), false_passes=s["false_passes"],
        false_pass_rate=Estimate(value=s["false_pass_rate"], **s["false_pass_interval"]),
    )  # fmt: skip


def _case(o: Outcome) -> CalibrationCase:
    g = o.first
    return CalibrationCase(
        control=o.id, klass=o.klass, label=o.label, verdict=g.verdict, score=g.score,
        certain=o.certain,
    )  # fmt: skip
