"""The two runs a comparison reads: loading them, and what makes them comparable.

An argument names a run directory, a scorecard file or an MLflow run id. The measuring
instrument is the judge (kind, model, prompt/config digests, weights and thresholds) and the
user simulator: if either differs, two scores do not measure the same thing. A corpus change is
confined to the scenarios whose ground truth (facts, document bytes) it changes when both runs
record it per scenario; otherwise it is an instrument difference too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agenteval.fileio import read_json
from agenteval.params import flatten
from agenteval.schema.scorecard import Scorecard
from agenteval.scratch import temporary_folder

# MLflow run ids are 32 lowercase hex digits; runs:/<id> is MLflow's own URI form.
_RUN_ID = re.compile(r"^(?:runs:/)?([0-9a-f]{32})/?$")


class InputError(Exception):
    """An argument is not a readable run directory, scorecard or MLflow run."""


@dataclass(frozen=True)
class LoadedRun:
    card: Scorecard
    source: str


def read_scorecard(path: Path) -> Scorecard:
    try:
        return Scorecard.model_validate(read_json(path))
    except (OSError, ValueError) as exc:  # JSONDecodeError and ValidationError are ValueErrors
        if isinstance(exc, ValidationError):
            first = exc.errors()[0]
            detail = f"{'.'.join(map(str, first['loc']))}: {first['msg']}"
        else:
            detail = str(exc)
        raise InputError(f"{path}: not a readable scorecard ({detail})") from None


def load_side(arg: str | Path) -> LoadedRun:
    """A run directory (scorecard.json or reports/scorecard.json), a scorecard file or an MLflow
    run id (32 hex digits, optionally as runs:/<id>)."""
    path = Path(arg)
    if path.is_dir():
        for candidate in (path / "scorecard.json", path / "reports" / "scorecard.json"):
            if candidate.is_file():
                return LoadedRun(read_scorecard(candidate), str(candidate))
        raise InputError(f"{path}: no scorecard.json or reports/scorecard.json in this directory")
    if path.is_file():
        return LoadedRun(read_scorecard(path), str(path))
    match = _RUN_ID.match(str(arg))
    if match:
        return _from_mlflow(match.group(1))
    raise InputError(f"{arg}: not a run directory, a scorecard file or an MLflow run id")


def tracking_uri() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path.cwd() / 'mlflow.db'}"


def _find_artifact(client: Any, run_id: str, name: str, path: str | None = None) -> str | None:
    """Breadth-first search of a run's artifacts for a file called ``name``."""
    folders = []
    for info in client.list_artifacts(run_id, path):
        if info.is_dir:
            folders.append(info.path)
        elif info.path.rsplit("/", 1)[-1] == name:
            return str(info.path)
    for folder in folders:
        found = _find_artifact(client, run_id, name, folder)
        if found:
            return found
    return None


def _from_mlflow(run_id: str) -> LoadedRun:
    import mlflow.artifacts
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    uri = tracking_uri()
    store = Path(uri.removeprefix("sqlite:///")) if uri.startswith("sqlite:///") else None
    if store is not None and not store.is_file():
        # MLflow would create an empty database just to say the run is not there.
        raise InputError(f"MLflow run {run_id}: no tracking database at {store}")
    client = MlflowClient(tracking_uri=uri)
    try:
        client.get_run(run_id)
        artifact = _find_artifact(client, run_id, "scorecard.json")
        if artifact is None:
            raise InputError(f"MLflow run {run_id} ({uri}) has no scorecard.json artifact")
        with temporary_folder("agenteval-") as tmp:
            local = mlflow.artifacts.download_artifacts(
                run_id=run_id, artifact_path=artifact, dst_path=tmp, tracking_uri=uri
            )
            card = read_scorecard(Path(local))
    except MlflowException as exc:
        raise InputError(f"MLflow run {run_id} ({uri}): {exc.message}") from None
    return LoadedRun(card, f"mlflow:{run_id}/{artifact}")


def _differences(section: str, a: Any, b: Any) -> list[str]:
    fa, fb = flatten(a or {}, section), flatten(b or {}, section)
    missing = "<absent>"
    return [
        f"{key}: {fa.get(key, missing)!r} -> {fb.get(key, missing)!r}"
        for key in sorted(fa.keys() | fb.keys())
        if fa.get(key, missing) != fb.get(key, missing)
    ]


def corpus_localised(base: Mapping[str, Any], cur: Mapping[str, Any]) -> bool:
    """The corpora differ, but both runs say which facts and bytes each scenario was graded
    against, so the difference can be confined to the scenarios it touches."""
    return base.get("corpus_digest") != cur.get("corpus_digest") and all(
        cfg.get("ground_truth") and all(cfg["ground_truth"].values()) for cfg in (base, cur)
    )


def instrument_differences(base: Mapping[str, Any], cur: Mapping[str, Any]) -> list[str]:
    """Every judge and simulator difference, and a corpus difference that cannot be confined
    to single scenarios: any of them changes what a score means."""
    diffs = _differences("judge", base.get("judge"), cur.get("judge"))
    diffs += _differences("simulator", base.get("simulator"), cur.get("simulator"))
    if base.get("corpus_digest") != cur.get("corpus_digest") and not corpus_localised(base, cur):
        diffs.append(f"corpus_digest: {base.get('corpus_digest')} -> {cur.get('corpus_digest')}")
    return diffs


def judge_gate_misses(card: Scorecard, side: str) -> list[str]:
    """Why this run's judge cannot be trusted to compare: it missed the controls gate on the
    controls it graded inside the run, or its repeated judgings flipped too often."""
    misses = []
    if card.calibration is not None and not card.calibration.passed:
        why = "; ".join(card.calibration.misses)
        misses.append(f"the {side} run's judge misses the controls gate in that run: {why}")
    if card.self_consistency is not None and not card.self_consistency.passed:
        why = "; ".join(card.self_consistency.misses)
        misses.append(f"the {side} run's judge is not self-consistent: {why}")
    return misses


def agent_models(config: Mapping[str, Any]) -> list[str]:
    """The models a run's measured units reported running; a scorecard from before that was
    recorded (or a run that measured nothing) falls back to the configured target.model."""
    served = config.get("agent_models")
    if served:
        return sorted(str(m) for m in served)
    model = (config.get("target") or {}).get("model")
    return [str(model)] if model else []


def model_difference(base: Mapping[str, Any], cur: Mapping[str, Any]) -> str | None:
    """How the agent model changed between two runs, or None when it did not."""
    before, after = agent_models(base), agent_models(cur)
    if before == after:
        return None
    return f"agent model {', '.join(before) or '?'} -> {', '.join(after) or '?'}"


def agent_differences(base: Mapping[str, Any], cur: Mapping[str, Any]) -> list[str]:
    return _differences("target", base.get("target"), cur.get("target"))


def describe(run: LoadedRun) -> dict[str, Any]:
    """Who and what a run measured, for the head of a comparison."""
    cfg = run.card.config
    target = cfg.get("target") or {}
    return {
        "source": run.source,
        "agent": f"{target.get('kind')} / {target.get('model')}",
        "iterations": cfg.get("iterations"),
        "seeds": cfg.get("seeds"),
        "judged_pass_rate": run.card.summary.judged_pass_rate,
        "avg_score": run.card.summary.avg_score,
    }
