"""The committed baseline a regression gate compares against (`agenteval baseline save|show`).

The baseline file is the run's scorecard, unchanged, so `agenteval compare` reads it like any
other scorecard; a sidecar ``<name>.meta.json`` records where it came from and when.
A baseline must hold at least 3 iterations: from one iteration every flip looks like a change
and no scenario's noise can be told apart from a regression.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agenteval.fileio import digest_of, read_json, write_json
from agenteval.gate.runs import InputError, load_side, read_scorecard
from agenteval.schema.scorecard import Scorecard
from agenteval.uncertainty import noise_report, tally

DEFAULT_PATH = Path("eval/baselines/baseline.json")
MIN_ITERATIONS = 3


class BaselineError(Exception):
    """A run that cannot become a baseline, or a baseline that cannot be read."""


def iterations_of(card: Scorecard) -> int:
    """Iterations every scenario actually has: the config's count, capped by the rows present."""
    configured = int(card.config.get("iterations") or 1)
    runs = [t.runs for t in tally(card).values()]
    return min([configured, *runs]) if runs else 0


def meta_path(dest: Path) -> Path:
    return dest.with_name(dest.stem + ".meta.json")


def save_baseline(run: str | Path, dest: Path = DEFAULT_PATH) -> Path:
    """Copy a run's scorecard to ``dest``; refuse fewer than 3 iterations."""
    try:
        loaded = load_side(run)
    except InputError as exc:
        raise BaselineError(str(exc)) from None
    card = loaded.card
    iterations = iterations_of(card)
    if iterations < MIN_ITERATIONS:
        raise BaselineError(
            f"{loaded.source}: {iterations} iteration(s); a baseline needs at least "
            f"{MIN_ITERATIONS} so that run-to-run noise is measured "
            f"(rerun with --set suite.iterations={MIN_ITERATIONS})"
        )
    write_json(dest, card)
    meta = {
        "source": loaded.source,
        "saved_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "scorecard_digest": digest_of(card),
    }
    write_json(meta_path(dest), meta)
    return dest


def _pm(block: dict[str, Any], digits: int) -> str:
    value, low, high = block.get("value"), block.get("low"), block.get("high")
    if value is None:
        return "n/a"
    if low is None or high is None:
        return f"{value:.{digits}f} ({block.get('note') or 'no interval'})"
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def describe_baseline(path: Path = DEFAULT_PATH) -> list[str]:
    """What the baseline holds: provenance, config digests, iterations, seeds, headline numbers."""
    if not path.is_file():
        raise BaselineError(f"{path}: no baseline saved (agenteval baseline save RUN)")
    try:
        card = read_scorecard(path)
    except InputError as exc:
        raise BaselineError(str(exc)) from None
    cfg = card.config
    meta = read_json(meta_path(path)) if meta_path(path).is_file() else {}
    overall = noise_report(card, resamples=0)["overall"]
    target, judge = cfg.get("target") or {}, cfg.get("judge") or {}
    lines = [
        f"baseline: {path}",
        f"  saved from: {meta.get('source', 'unknown')} at {meta.get('saved_at', 'unknown')}",
        f"  agent: {target.get('kind')} / {target.get('model')} "
        f"(config {str(target.get('config_digest'))[:12]})",
        f"  judge: {judge.get('kind')} / {judge.get('model') or '-'} "
        f"(config {str(judge.get('config_digest'))[:12]}, rules {judge.get('rules')})",
        f"  simulator: {(cfg.get('simulator') or {}).get('kind')}",
        f"  scenario set {str(cfg.get('scenario_set_digest'))[:12]} · corpus "
        f"{str(cfg.get('corpus_digest'))[:12]} · params {str(cfg.get('params_digest'))[:12]}",
        f"  iterations: {cfg.get('iterations')} · seeds: {cfg.get('seeds')}",
        f"  scenarios: {len(tally(card))} · iteration rows: {card.summary.total}",
        f"  judged pass rate: {_pm(overall['judged_pass_rate'], 3)} (95% interval)",
        f"  average score: {_pm(overall['avg_score'], 2)}/10",
    ]
    return lines


def show_baseline(path: Path = DEFAULT_PATH) -> str:
    text = "\n".join(describe_baseline(path))
    print(text)
    return text
