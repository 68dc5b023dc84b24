"""`agenteval judge align`: edits to the LLM judge's prompt, kept only by the climb's rule
measured on the labelled controls.

Each round a proposer offers one sentence for the turn judge's prompt (eval/prompts/
judge_turn.md, under "## Alignment"): the search proposer walks a fixed catalogue of rubric
clarifications offline; the llm proposer asks `climb.llm`'s endpoint, showing it the judge's
disagreements on dev only. The candidate judge is measured on the controls; per control the
unit is agreement (1 when its verdict is the label, 0 otherwise: a deferral gains nothing).

    kept  <=>  dev's paired lower bound > 0              (improves beyond noise)
          and  0 false passes on held                     (never buys agreement with a pass)
          and  held non-inferior through Thresholdout     (climb.keep.held_verdict, knob rule)

Held is queried only for an edit that cleared dev; every query goes through the mechanism,
whose state is kept per held set in eval/climb/align_holdout.json (limits from
`climb.holdout`), so a second session cannot ask held afresh. The fresh split is read once,
with the final prompt, and every read is counted there too.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenteval.climb.holdout import HoldoutSpent, Thresholdout
from agenteval.climb.keep import Delta, KeepRule, held_verdict, lower_bound
from agenteval.controls.load import LoadedControl
from agenteval.controls.measure import chosen_controls
from agenteval.controls.people import LoadedPeople, judge_people, load_people, people_file
from agenteval.controls.run import DEFERRED, Pair, judge_controls, pairs_of
from agenteval.fileio import digest_of, read_json, write_json
from agenteval.judges.base import make_judge
from agenteval.schema.corpus import Manifest
from agenteval.scoring import ScoringRules
from agenteval.scratch import temporary_folder

PROMPT = "judge_turn.md"
HEADING = "\n\n## Alignment\n\nRules added by `agenteval judge align`, each kept on controls:\n"
STATE_FILE = Path("eval/climb/align_holdout.json")
FALSE_PASS_RULE = "0 false passes on held"
# The search proposer's catalogue: clarifications of the rubric a careful grader would make.
CATALOGUE = (
    "Ignore what a reply says about its own accuracy or confidence; grade only what it states.",
    "A reply that offers several candidate values and leaves the choice to the reader has not "
    "stated the answer: correctness gets the lowest anchor.",
    "Length, padding and polish earn nothing: text unrelated to the question neither helps "
    "nor excuses a wrong figure.",
    "A figure given in other units or words than the expected answer is right when it is the "
    "same quantity.",
    "When the documents do not give the answer, a reply that says so plainly is fully correct.",
)


@dataclass
class Measured:
    agree: dict[str, float]  # control id -> 1.0 when the verdict is the label
    false_passes: int
    agreement: float | None


@dataclass(frozen=True)
class Controls:
    manifest: Manifest
    by_split: dict[str, list[LoadedControl]]
    pairs: dict[str, list[Pair]]  # built once: every judge sees the same turns
    # the reviewers' labels (`agenteval controls import`), dealt by their own salted hash
    people: dict[str, list[LoadedPeople]] = field(default_factory=dict)

    def count(self, split: str) -> int:
        return len(self.by_split.get(split, [])) + len(self.people.get(split, []))


def with_prompts(params: dict[str, Any], folder: Path) -> dict[str, Any]:
    return {**params, "judge": {**params["judge"], "prompts": str(folder)}}


def load_controls(params: dict[str, Any], root: Path) -> Controls:
    """The labelled controls by split, each turned once into the (item, transcript) judged."""
    _, loaded = chosen_controls(params, root, "all", None)
    manifest = chosen_controls(params, root, "dev", None)[0]
    by_split = {s: [c for c in loaded if c.split == s] for s in ("dev", "held", "fresh")}
    pairs = {s: pairs_of(cs, manifest, root) for s, cs in by_split.items()}
    people = load_people(people_file(params, root))
    return Controls(manifest, by_split, pairs, {s: [p for p in people if p.split == s]
                                                for s in by_split})  # fmt: skip


def measure(
    params: dict[str, Any], root: Path, controls: Controls, split: str, judge: Any = None
) -> Measured:
    """Agreement of the params' judge (or `judge`, any judge kind) with the split's labels,
    the written controls' and the reviewers'."""
    chosen = controls.by_split[split]
    rules = ScoringRules.from_params(params["judge"])
    pairs = controls.pairs[split]
    judge = judge or make_judge(params, root)
    concurrency = int(params["run"].get("concurrency", 4))
    run = judge_controls(judge, chosen, controls.manifest, root, rules,
                         concurrency=concurrency, pairs=pairs)  # fmt: skip
    outcomes = asyncio.run(run)
    if controls.people.get(split):
        outcomes += asyncio.run(judge_people(judge, controls.people[split], rules, concurrency))
    agree = {o.id: float(o.first.verdict == o.label) for o in outcomes}
    judged = [o for o in outcomes if o.first.verdict != DEFERRED]
    fps = sum(o.label == "fail" and o.first.verdict == "pass" for o in outcomes)
    rate = sum(o.first.verdict == o.label for o in judged) / len(judged) if judged else None
    return Measured(agree, fps, None if rate is None else round(rate, 4))


def delta(parent: Measured, candidate: Measured, conf: float) -> Delta:
    ids = sorted(parent.agree)
    diffs = [candidate.agree[i] - parent.agree[i] for i in ids]
    mean = sum(diffs) / len(diffs)
    return Delta(
        mean=round(mean, 6),
        low=round(lower_bound(diffs, conf), 6),
        n=len(ids),
        parent=round(sum(parent.agree.values()) / len(ids), 6),
        candidate=round(sum(candidate.agree.values()) / len(ids), 6),
        parent_judged=parent.agreement,
        candidate_judged=candidate.agreement,
        improved=[i for i, d in zip(ids, diffs, strict=True) if d > 0],
        worsened=[i for i, d in zip(ids, diffs, strict=True) if d < 0],
    )


def variant(base: Path, rules: Sequence[str], into: Path) -> Path:
    """A copy of the prompts folder whose turn prompt carries the given alignment rules."""
    if into.exists():
        shutil.rmtree(into)
    shutil.copytree(base, into)
    if rules:
        prompt = into / PROMPT
        added = HEADING + "".join(f"- {r}\n" for r in rules)
        prompt.write_text(prompt.read_text(encoding="utf-8").rstrip("\n") + added, "utf-8")
    return into


class HoldoutState:
    """The Thresholdout mechanism of one held control set, kept across sessions."""

    def __init__(self, path: Path, held_digest: str, limits: dict[str, Any]) -> None:
        self.path = path
        self.key = held_digest
        self.all = read_json(self.path) if self.path.is_file() else {}
        entry = self.all.get(held_digest) or {}
        state = entry.get("mechanism") or {**limits, "queries": 0, "overfits": 0, "draws": 0}
        self.mechanism = Thresholdout.from_state(state)
        self.fresh_reads = int(entry.get("fresh_reads", 0))

    def save(self) -> None:
        self.all[self.key] = {"mechanism": self.mechanism.state(), "fresh_reads": self.fresh_reads}
        write_json(self.path, self.all)


Proposer = Callable[[int, list[str], Measured], str | None]


def search_proposer(catalogue: Sequence[str] = CATALOGUE) -> Proposer:
    """Each round the next rule of the catalogue not already in the prompt."""

    def propose(round_no: int, kept: list[str], dev: Measured) -> str | None:
        left = [e for e in catalogue[round_no:] if e not in kept]
        return left[0] if left else None

    return propose


def figures(dev: Measured, held: Measured) -> dict[str, Any]:
    return {"dev": dev.agreement, "dev_false_passes": dev.false_passes,
            "held": held.agreement, "held_false_passes": held.false_passes}  # fmt: skip


def held_key(controls: Controls) -> str:
    """The held split's content digest: its Thresholdout state is kept under it."""
    labels = [c.control.model_dump(mode="json", by_alias=True) for c in controls.by_split["held"]]
    # reviewers' held labels join the key only when there are some (old keys stay valid)
    labels += [{"id": p.control.id, "label": p.control.label.verdict}
               for p in controls.people.get("held", [])]  # fmt: skip
    return digest_of(labels)


def run_align(
    params: dict[str, Any],
    root: Path,
    proposer: Proposer,
    rounds: int,
    echo: Callable[[str], None] = print,
    tracker: Any = None,
    state_file: Path | None = None,
    controls: Controls | None = None,
) -> dict[str, Any]:
    """One alignment session; returns the report (kept rules, every round, held and fresh)."""
    controls = controls or load_controls(params, root)
    by_split = controls.by_split
    climb = params["climb"]
    conf, margin = float(climb["conf"]), float(climb["margin"])
    state = HoldoutState(state_file or root / STATE_FILE, held_key(controls),
                         dict(climb["holdout"]))  # fmt: skip
    base = root / (params["judge"].get("prompts") or "eval/prompts")
    rule = KeepRule("non-inferior", -margin, "non-inferior")
    with temporary_folder("agenteval-") as tmp:
        kept: list[str] = []
        current = with_prompts(params, variant(base, kept, Path(tmp) / "parent"))
        dev, held = (
            measure(current, root, controls, "dev"),
            measure(current, root, controls, "held"),
        )
        start = figures(dev, held)
        echo(
            f"start: dev agreement {dev.agreement}, held {held.agreement}, "
            f"held false passes {held.false_passes}"
        )
        records = []
        for n in range(rounds):
            edit = proposer(n, kept, dev)
            if edit is None:
                break
            trial = with_prompts(params, variant(base, [*kept, edit], Path(tmp) / f"r{n}"))
            record, new = _round(n + 1, edit, trial, root, controls, dev, held, state, rule, conf)
            records.append(record)
            echo(f"round {n + 1}: {record['outcome']}: {record['reason']}")
            if tracker is not None:
                tracker.log_round(record)
            if record["outcome"] == "kept" and new is not None:
                kept.append(edit)
                current, (dev, held) = trial, new
            if record["outcome"] == "spent":
                break
        fresh = measure(current, root, controls, "fresh") if controls.count("fresh") else None
        state.fresh_reads += fresh is not None
        state.save()
        final_prompt = (Path(current["judge"]["prompts"]) / PROMPT).read_text(encoding="utf-8")
    return {
        "schema": "agenteval.judge_align/1",
        "controls": {
            s: {"written": len(by_split[s]), "people": len(controls.people.get(s, []))}
            for s in by_split
        },
        "kept": kept,
        "start": start,
        "end": figures(dev, held),
        "fresh": None
        if fresh is None
        else {
            "agreement": fresh.agreement,
            "false_passes": fresh.false_passes,
            "reads": state.fresh_reads,
        },
        "rounds": records,
        "held_queries": state.mechanism.state(),
        "prompt": final_prompt,
    }


def _round(
    number: int,
    edit: str,
    trial: dict[str, Any],
    root: Path,
    controls: Controls,
    dev: Measured,
    held: Measured,
    state: HoldoutState,
    rule: KeepRule,
    conf: float,
) -> tuple[dict[str, Any], tuple[Measured, Measured] | None]:
    record: dict[str, Any] = {"round": number, "edit": edit, "diff": f"+ - {edit}"}
    new_dev = measure(trial, root, controls, "dev")
    train = delta(dev, new_dev, conf)
    record["train"] = {"mean": train.mean, "low": train.low, "agreement": new_dev.agreement}
    if train.low <= 0:
        record |= {
            "outcome": "reverted",
            "reason": f"dev does not improve beyond noise (paired bound {train.low:+.3f} <= 0)",
        }
        return record, None
    new_held = measure(trial, root, controls, "held")
    held_delta = delta(held, new_held, conf)
    try:
        verdict = held_verdict(train, held_delta, state.mechanism, rule, conf)
    except HoldoutSpent as exc:
        record |= {"outcome": "spent", "reason": f"held split spent: {exc}"}
        return record, None
    state.save()
    record["held"] = {
        "delta": {"mean": held_delta.mean, "low": held_delta.low},
        "released": verdict.released,
        "bound": verdict.bound,
        "query": state.mechanism.queries,
        "non_inferior": verdict.kept,
        "false_passes": new_held.false_passes,
    }
    if new_held.false_passes > 0:
        # Checked whatever held agreement says: agreement bought with a pass is never kept.
        record |= {
            "outcome": "rejected",
            "reason": f"{FALSE_PASS_RULE} rule: {new_held.false_passes} false pass(es) on held "
            f"({rule.describe(verdict.bound)}); an edit may never buy agreement with a pass",
        }
        return record, None
    if not verdict.kept:
        record |= {"outcome": "reverted", "reason": rule.describe(verdict.bound)}
        return record, None
    record |= {
        "outcome": "kept",
        "reason": "dev improved beyond noise; "
        + rule.describe(verdict.bound)
        + "; 0 false passes on held",
    }
    return record, (new_dev, new_held)


PROPOSER_SYSTEM = (
    "You improve the rubric of an LLM judge that grades a document assistant's replies. You "
    "see replies the judge graded against a careful grader's label. Propose ONE sentence to "
    "add to the judge's rubric that would make it agree with the labels, general enough for "
    "replies you have not seen. Never quote a reply, a figure or an expected answer. Reply "
    "with the sentence only."
)


def llm_proposer(params: dict[str, Any], root: Path) -> Proposer:
    """Asks `climb.llm`'s endpoint for one rubric sentence, showing the dev disagreements."""
    from agenteval.llm import Message, SystemMessage, UserMessage
    from agenteval.llm.config import EndpointConfig

    config = EndpointConfig.from_params({**params, "align": params["climb"]["llm"]}, "align", root)
    _, loaded = chosen_controls(params, root, "dev", None)
    replies = {c.control.id: (c.control.reply, c.control.label.verdict) for c in loaded}

    def propose(round_no: int, kept: list[str], dev: Measured) -> str | None:
        wrong = [i for i, a in sorted(dev.agree.items()) if a == 0 and i in replies][:20]
        if not wrong:
            return None
        shown = "\n".join(f"- label {replies[i][1]}, judge disagreed: {replies[i][0]!r}"
                          for i in wrong)  # fmt: skip
        rules = "\n".join(f"- {r}" for r in kept) or "(none yet)"
        case = f"Rules already added:\n{rules}\n\nDisagreements on dev:\n{shown}"

        async def ask() -> str:
            client = config.open()
            try:
                messages: list[Message] = [
                    SystemMessage(content=PROPOSER_SYSTEM),
                    UserMessage(content=case),
                ]
                done = await client.complete(messages, iteration=round_no, seed=0)
            finally:
                await client.aclose()
            return " ".join(done.text.split())

        text = asyncio.run(ask())
        return text or None

    return propose
