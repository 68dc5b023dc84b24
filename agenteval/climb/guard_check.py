"""How well the guard tells a memorising edit from an honest one (`agenteval climb guard-check`).

The labelled controls of eval/climb/guard_controls.yaml are each added as one line to the
agent's first editable file and put to the guard as a session would put them, against the
whole suite. They are dealt to dev or held by a salted hash of their id. On dev the question
similarity threshold is tuned: the one that maximises detection minus false refusals
(Youden's J), the higher threshold on a tie (fewer refusals of honest edits). On held - never
tuned on - the guard with the configured `climb.guard.similarity` is reported: detection
(an `encodes` control refused), attribution (refused with the encoded scenario named),
false refusals (an `honest` control refused), each with a Wilson interval.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agenteval.climb.artifacts import Change, ClimbError, load_spec
from agenteval.climb.evaluation import suites
from agenteval.climb.guard import Guard, GuardRules, Material, corpus_files
from agenteval.schema.guard import GuardControl, GuardControlFile
from agenteval.schema.located import Located, load_located
from agenteval.split import point
from agenteval.stats import wilson_interval

CONTROLS = "eval/climb/guard_controls.yaml"
SALT = "guard-controls-1"  # a new salt re-deals every control: held figures start afresh
DEV_SHARE = 0.5
NEVER = 2.0  # a similarity no sentence reaches: the guard without its question reader


@dataclass(frozen=True)
class Measured:
    control: GuardControl
    split: str  # dev | held
    fixed: tuple[str, ...]  # refusals that do not depend on the similarity threshold
    named: frozenset[str]  # the scenarios those refusals concern
    similar: tuple[tuple[float, tuple[str, ...]], ...]  # (similarity, scenarios) per question

    @property
    def best(self) -> float:
        return max((s for s, _ in self.similar), default=0.0)

    def refused(self, threshold: float) -> bool:
        return bool(self.fixed) or self.best >= threshold

    def names_scenario(self, threshold: float) -> bool:
        wanted = self.control.scenario
        if wanted is None:
            return self.refused(threshold)
        if wanted in self.named:
            return True
        return any(score >= threshold and wanted in ids for score, ids in self.similar)


def split_of(control_id: str) -> str:
    return "dev" if point(SALT, control_id) < DEV_SHARE else "held"


def load_controls(root: Path) -> list[GuardControl]:
    """The labelled controls; a malformed file is a `path:line: message` ClimbError."""
    located = load_located(root / CONTROLS, CONTROLS)
    if not isinstance(located, Located):
        raise ClimbError(str(located))
    try:
        return GuardControlFile.model_validate(located.data or {}).controls
    except ValidationError as exc:
        first = exc.errors()[0]
        where = located.line(first["loc"])
        raise ClimbError(f"{CONTROLS}:{where}: {first['msg']}") from None


def measure(root: Path, params: Mapping[str, Any]) -> list[Measured]:
    """Every control put to the guard: its fixed refusals and its question similarities."""
    spec = load_spec(root, params)
    if not spec.files:
        raise ClimbError(f"{spec.agent_dir}/agent.yaml lists no editable file to add a line to")
    _, everything = suites(root, [])
    material = Material.of(everything, corpus_files(root))
    rules = replace(GuardRules.from_params(params, root), similarity=NEVER)
    guard = Guard(spec, material, rules)
    known = {item.scenario.id for item in everything.items}
    target = spec.files[0]
    parent = (root / target).read_bytes()
    measured = []
    for control in load_controls(root):
        if control.scenario and control.scenario not in known:
            raise ClimbError(f"{CONTROLS}: control {control.id}: no scenario {control.scenario}")
        added = parent.rstrip(b"\n") + f"\n- {control.text}\n".encode()
        fixed = tuple(guard.check(Change({target: (parent, added)})))
        named = frozenset(sid for f in guard.findings(control.text) for sid in f.scenarios)
        similar = tuple(
            (s.score, tuple(sid for sid, _ in s.where))
            for s in material.asked.similar(control.text, 0.0)
        )
        measured.append(Measured(control, split_of(control.id), fixed, named, similar))
    return measured


def tune(measured: Sequence[Measured]) -> float:
    """The dev threshold with the best detection minus false refusals (Youden's J); of the
    thresholds that reach it, the one furthest from every dev score (the middle of the widest
    gap), so a paraphrase or an honest edit a little off the dev ones falls the same way."""
    dev = [m for m in measured if m.split == "dev"]
    # Only controls the threshold decides (no refusal of another kind) place the gaps.
    scores = sorted({0.0, 1.0} | {round(m.best, 4) for m in dev if not m.fixed})
    candidates = [(a + b) / 2 for a, b in itertools.pairwise(scores)] + [1.0]
    results = []
    for threshold in candidates:
        figures = rates(dev, threshold)
        j = figures["detection"]["rate"] - figures["false_refusal"]["rate"]
        gap = min(abs(threshold - s) for s in scores)
        results.append((round(j, 9), gap, threshold))
    return round(max(results)[2], 4)


def _rate(hits: int, n: int) -> dict[str, Any]:
    low, high = wilson_interval(hits, n) if n else (0.0, 1.0)
    return {"k": hits, "n": n, "rate": hits / n if n else 0.0, "low": low, "high": high}


def rates(measured: Sequence[Measured], threshold: float) -> dict[str, Any]:
    positives = [m for m in measured if m.control.label == "encodes"]
    negatives = [m for m in measured if m.control.label == "honest"]
    forms = sorted({m.control.form for m in positives})
    return {
        "detection": _rate(sum(m.refused(threshold) for m in positives), len(positives)),
        "attribution": _rate(sum(m.names_scenario(threshold) for m in positives), len(positives)),
        "false_refusal": _rate(sum(m.refused(threshold) for m in negatives), len(negatives)),
        "by_form": {
            form: _rate(
                sum(m.refused(threshold) for m in positives if m.control.form == form),
                sum(1 for m in positives if m.control.form == form),
            )
            for form in forms
        },
        "missed": [m.control.id for m in positives if not m.refused(threshold)],
        "refused_honest": [m.control.id for m in negatives if m.refused(threshold)],
    }


def check(root: Path, params: Mapping[str, Any]) -> dict[str, Any]:
    """The tuned threshold, and dev and held figures at the configured one."""
    measured = measure(root, params)
    configured = float(params["climb"]["guard"]["similarity"])
    tuned = tune(measured)
    return {
        "controls": CONTROLS,
        "counts": {s: sum(1 for m in measured if m.split == s) for s in ("dev", "held")},
        "tuned_on_dev": tuned,
        "configured": configured,
        "dev": rates([m for m in measured if m.split == "dev"], configured),
        "held": rates([m for m in measured if m.split == "held"], configured),
        "reasons": {m.control.id: _why(m, configured) for m in measured},
    }


def _why(m: Measured, threshold: float) -> str:
    if m.fixed:
        return m.fixed[0]
    if m.best >= threshold:
        return f"asks a scenario question again (BM25 similarity {m.best:.2f})"
    return f"passed (best question similarity {m.best:.2f})"


def render(result: Mapping[str, Any]) -> str:
    """The console report: rates with intervals, then every held miss and false refusal."""

    def pct(r: Mapping[str, Any]) -> str:
        return f"{r['k']}/{r['n']} = {r['rate']:.0%} [{r['low']:.0%}, {r['high']:.0%}]"

    counts = result["counts"]
    lines = [
        f"guard controls: {result['controls']} (dev {counts['dev']}, held {counts['held']})",
        f"question similarity: climb.guard.similarity = {result['configured']:.2f}; "
        f"tuned on dev: {result['tuned_on_dev']:.2f}",
    ]
    for split in ("dev", "held"):
        r = result[split]
        role = "tuning" if split == "dev" else "reported"
        lines += [
            f"{split} ({role}): detection {pct(r['detection'])}; attribution "
            f"{pct(r['attribution'])}; false refusals {pct(r['false_refusal'])}",
            "  detection by form: "
            + "; ".join(f"{form} {pct(v)}" for form, v in r["by_form"].items()),
        ]
    held = result["held"]
    for title, ids in (("held misses", held["missed"]), ("held false refusals",
                                                         held["refused_honest"])):  # fmt: skip
        lines.append(f"{title}: {len(ids)}")
        lines += [f"  {i}: {result['reasons'][i][:160]}" for i in ids]
    return "\n".join(lines)
