"""Proposers: who makes the round's ONE edit, and what they are allowed to know.

A proposer gets a `Context` built from train only: the editable files and knob values of the
parent as it is now (after every kept round), the train failures with reference answers
removed, and the history of its own edits with their outcome (kept / reverted / rejected),
train figures and, when held was asked, what Thresholdout released (its answer, whether
train or held answered, the bound). Held and test results never reach it otherwise: no
held gain of its own, no scenario that changed (agenteval.climb.sealed).

* `search` — optuna over the agent's numeric knobs (agent.yaml ranges): each round a study
  (TPE sampler, seeded) tries `climb.search_trials` single-knob moves from the parent on
  train only, each scored by its paired train lower bound, and proposes the best one.
* `llm` — any configured endpoint (`climb.llm`) asked for one edit in JSON, from the
  prompt in `climb.llm.prompt`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agenteval.climb.artifacts import ClimbError, Edit, Spec
from agenteval.climb.failures import Failure
from agenteval.climb.keep import Delta

MAX_SAMPLES = 64  # trials a search may draw per round before it says it has nothing new


@dataclass
class Context:
    spec: Spec
    knobs: dict[str, Any]
    files: dict[str, str]
    failures: list[Failure]
    history: list[dict[str, Any]] = field(default_factory=list)
    round: int = 1
    parent: str = ""  # digest of the parent's artifacts: a score is only valid against it
    # Scores a candidate edit on train (never held): its paired delta, or None if refused.
    try_train: Callable[[Edit], Delta | None] | None = None
    # The parent's train transcripts (never held or test) and the redaction of every
    # reference answer a text could carry: what a fixer reads (agenteval.climb.fixers).
    transcripts: Path | None = None
    redact: Callable[[str], str] = str


class Proposer(Protocol):
    name: str

    def propose(self, ctx: Context) -> Edit | None:
        """One edit, or None when the proposer has nothing (more) to offer."""

    def observe(self, edit: Edit, outcome: str, train: Delta | None) -> None:
        """What became of the edit: kept, reverted or rejected, with its train figures."""


class SearchProposer:
    """Scores are cached per (parent, move): after a revert the next round, from the same
    parent, spends its trials on moves it has not tried yet; after a keep the parent is new
    and every move is scored again against it."""

    name = "search"

    def __init__(self, seed: int = 0, trials: int = 12) -> None:
        self.seed = seed
        self.trials = trials
        self._scores: dict[tuple[str, str, float | int], float] = {}
        self._proposed: set[tuple[str, str, float | int]] = set()

    def propose(self, ctx: Context) -> Edit | None:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sampler = optuna.samplers.TPESampler(seed=self.seed + ctx.round, n_startup_trials=6)
        study = optuna.create_study(direction="maximize", sampler=sampler)
        state = ctx.parent or json.dumps(ctx.knobs, sort_keys=True)
        fresh = 0
        for _ in range(MAX_SAMPLES):
            if fresh >= self.trials:
                break
            trial = study.ask()
            knob = trial.suggest_categorical("knob", sorted(ctx.spec.knobs))
            value = _suggest(trial, knob, ctx.spec)
            key = (state, knob, value)
            if value == ctx.knobs.get(knob) or key in self._proposed:
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
                continue
            if key not in self._scores:
                self._scores[key] = self._score(ctx, Edit(knob=knob, value=value))
                fresh += 1
            study.tell(trial, self._scores[key])
        mine = {k: v for k, v in self._scores.items() if k[0] == state and k not in self._proposed}
        if not mine:
            return None
        best = max(mine, key=lambda k: mine[k])
        self._proposed.add(best)
        _, knob, value = best
        why = (
            f"best of {len(mine)} single-knob moves tried on train (optuna TPE): {knob} "
            f"{ctx.knobs.get(knob)} -> {value}, train lower bound {mine[best]:+.3f}"
        )
        return Edit(knob=knob, value=value, why=why)

    @staticmethod
    def _score(ctx: Context, edit: Edit) -> float:
        if ctx.try_train is None:
            return 0.0
        delta = ctx.try_train(edit)
        return -1.0 if delta is None else delta.low

    def observe(self, edit: Edit, outcome: str, train: Delta | None) -> None:
        return None


def _suggest(trial: Any, knob: str, spec: Spec) -> float | int:
    limits = spec.knobs[knob]
    name = f"value.{knob}"
    if limits.type == "int":
        step = int(limits.step or 1)
        return int(
            trial.suggest_int(
                name, int(limits.low), int(limits.high), step=step, log=limits.log and step == 1
            )
        )
    if limits.step:
        value = trial.suggest_float(name, limits.low, limits.high, step=limits.step)
        return round(float(value), 10)
    return float(trial.suggest_float(name, limits.low, limits.high, log=limits.log))


class LLMProposer:
    """One model call (re-asked on unusable output) per round; sees train material only."""

    name = "llm"

    def __init__(self, params: dict[str, Any], root: Path) -> None:
        from pydantic import ValidationError

        from agenteval.llm.config import EndpointConfig

        section = params["climb"]["llm"]
        check_endpoint(section, root)
        try:
            self.config = EndpointConfig.from_params(
                {"proposer": section, "run": params["run"]}, "proposer", root
            )
        except (ValueError, ValidationError) as exc:
            raise ClimbError(f"climb.llm: {exc}") from None
        self.template = (root / section["prompt"]).read_text(encoding="utf-8")
        self.attempts = int(section.get("max_attempts", 2))
        self.cost_usd: float | None = None
        self.last_prompt = ""

    def propose(self, ctx: Context) -> Edit | None:
        import asyncio

        self.last_prompt = render_prompt(self.template, ctx)
        return asyncio.run(self._ask(self.last_prompt, ctx.round))

    async def _ask(self, prompt: str, round_no: int) -> Edit | None:
        messages: list[dict[str, str]] = [{"role": "user", "content": prompt}]
        client = self.config.open()
        try:
            for attempt in range(self.attempts):
                completion = await client.complete(messages, iteration=attempt, seed=round_no)
                if completion.cost_usd is not None:
                    self.cost_usd = (self.cost_usd or 0.0) + completion.cost_usd
                edit = parse_edit(completion.text)
                if edit is not None:
                    return edit
                messages += [
                    {"role": "assistant", "content": completion.text},
                    {"role": "user", "content": RE_ASK},
                ]
        finally:
            await client.aclose()
        return None

    def observe(self, edit: Edit, outcome: str, train: Delta | None) -> None:
        return None


def check_endpoint(section: dict[str, Any], root: Path) -> None:
    """The llm proposer's settings, checked before any work: a ClimbError naming the keys."""
    missing = [] if section.get("model") else ["climb.llm.model"]
    if not section.get("base_url") and not section.get("api_key_env"):
        missing.append("climb.llm.base_url")
    if missing:
        raise ClimbError(
            f"--proposer llm needs its endpoint: {' and '.join(missing)} not set (params.yaml "
            "or --set key=value); climb.llm.base_url is the server's address, e.g. "
            "http://127.0.0.1:8000/v1 (or climb.llm.api_key_env for a hosted API's key)"
        )
    variable = section.get("api_key_env")
    if variable and not os.environ.get(variable, "").strip():
        raise ClimbError(f"climb.llm.api_key_env: the environment variable {variable} is not set")
    if not (root / str(section.get("prompt"))).is_file():
        raise ClimbError(f"climb.llm.prompt: no file {section.get('prompt')}")


RE_ASK = (
    'Answer with one JSON object only: {"knob": NAME, "value": NUMBER, "why": TEXT} or '
    '{"file": PATH, "text": FULL NEW TEXT, "why": TEXT}.'
)
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def parse_edit(text: str) -> Edit | None:
    """The first JSON object of a reply as an Edit, or None when it is not one."""
    match = _OBJECT.search(text or "")
    if match is None:
        return None
    try:
        raw = json.loads(match.group(0))
    except json.JSONDecodeError:
        return None
    if not isinstance(raw, dict):
        return None
    why = str(raw.get("why") or "")
    if isinstance(raw.get("knob"), str) and isinstance(raw.get("value"), int | float):
        return Edit(knob=raw["knob"], value=raw["value"], why=why)
    if isinstance(raw.get("file"), str) and isinstance(raw.get("text"), str):
        return Edit(file=raw["file"], text=raw["text"], why=why)
    return None


def render_prompt(template: str, ctx: Context) -> str:
    knobs = (
        "\n".join(
            f"- {name} = {ctx.knobs.get(name)} (range {r.low:g} to {r.high:g}, {r.type})"
            for name, r in sorted(ctx.spec.knobs.items())
        )
        or "(none)"
    )
    files = "\n\n".join(f"--- {path}\n{text}" for path, text in sorted(ctx.files.items()))
    failures = (
        "\n".join(
            f"- [{f.category}] {f.failure_class}: asked {f.question!r}; the agent said {f.reply!r}"
            + (f"; judge: {f.reason}" if f.reason else "")
            for f in ctx.failures
        )
        or "(no train failures)"
    )
    history = "\n".join(_history_line(h) for h in ctx.history) or "(first round)"
    return template.format(knobs=knobs, files=files or "(none)", failures=failures, history=history)


def _history_line(h: dict[str, Any]) -> str:
    line = f"- round {h['round']}: {h['edit']} -> {h['outcome']}"
    if h.get("train_gain") is not None:
        line += f" (train gain {h['train_gain']:+.3f}"
        held = h.get("held")
        if held:
            line += (
                f"; held: Thresholdout answered {held['released']:+.3f} from "
                f"{held['answered_by']}, bound {held['bound']:+.3f}"
            )
        line += ")"
    return line
