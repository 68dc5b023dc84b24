"""Scratch repositories for hillclimb tests: a copy of this project, never the real tree.

A session commits on a scratch branch, so every test runs in its own copy (git init, one
commit) with a small scenario selection, a chosen starting configuration and optional split
pins written into the copied scenario files.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
COPIED = (".dvc", ".dvcignore", ".gitignore", "dvc.yaml", "dvc.lock", "params.yaml", "eval",
          "stages", "reports", "agenteval")  # fmt: skip
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "mlflow_run.json", "holdout_ledger.jsonl")
IDENTITY = ["-c", "user.name=climb test", "-c", "user.email=test@agenteval.invalid"]

# Scenarios that need no fetched corpus. From the naive start (abstain 0.5, top_k 1, chunk
# 1000) the train ones marked + pass once abstain_threshold comes down; held likewise.
TRAIN = ["brief_under_time_pressure", "discover_travel_policy", "index_named_path",  # +
         "minutes_pronoun_chain", "no_sycophancy_wrong_number", "rapid_topic_switching",  # +
         "empty_file", "honest_about_limits", "csv_cell_lookup"]  # fmt: skip
HELD = [
    "discover_budget_csv",
    "minutes_decision_lookup",  # +
    "list_available_documents",
    "long_document_needle",
    "concise_answer",
    "negation_motor_type",
    "switch_between_documents",
    "recall_entity_across_turns",
    "empty_search_results",
    "vacation_synonym_lookup",
    "incident_root_cause_lookup",
]
TEST = ["html_prose_lookup", "quarterly_revenue_lookup", "misspelled_filename"]
NAIVE = {"abstain_threshold": 0.5, "top_k": 1, "chunk_size": 1000}
# The split these tests were written around, pinned in the copy: the deal (agenteval.split,
# which keeps scenarios sharing an expected answer together) may change without changing
# what the climb tests measure.
FIXTURE_SPLITS = {s: "train" for s in TRAIN} | {s: "held" for s in HELD} | {s: "test" for s in TEST}


def env() -> dict[str, str]:
    out = dict(os.environ, DVC_NO_ANALYTICS="1", MLFLOW_DISABLE_TELEMETRY="true")
    for name in ("DVC_ROOT", "MLFLOW_TRACKING_URI", "DVC_EXP_NAME"):
        out.pop(name, None)
    return out


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *IDENTITY, *args], cwd=repo, capture_output=True, text=True,
                          env=env(), check=True)  # fmt: skip
    return done.stdout


def agenteval(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["agenteval", *args], cwd=repo, capture_output=True, text=True,
                          env=env(), timeout=900)  # fmt: skip


def make_repo(
    path: Path,
    ids: Sequence[str] = (*TRAIN, *HELD, *TEST),
    knobs: Mapping[str, Any] = NAIVE,
    pins: Mapping[str, str] | None = None,
    climb: Mapping[str, Any] | None = None,
    tracking: bool = False,
) -> Path:
    """A committed copy with `ids` selected, `knobs` as the agent's start, splits pinned
    (`pins`, by default the fixture's split of the selected ids)."""
    path.mkdir(parents=True)
    for name in COPIED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, path / name, ignore=IGNORE)
        elif src.is_file():
            shutil.copy2(src, path / name)
    params = yaml.safe_load((path / "params.yaml").read_text())
    params["suite"]["ids"] = list(ids)
    params["target"]["params"].update(knobs)
    params["tracking"].update(enabled=tracking, traces=False)
    params["climb"] = {"repro": False, "search_trials": 8, **dict(climb or {})}
    (path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    if pins is None:
        pins = {sid: FIXTURE_SPLITS[sid] for sid in ids if sid in FIXTURE_SPLITS}
    for sid, split in pins.items():
        pin(path, sid, split)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "test repository")
    return path


def pin(repo: Path, sid: str, split: str) -> None:
    found = [p for p in (repo / "eval/scenarios").rglob("*.yaml") if p.stem == sid]
    assert found, sid
    with found[0].open("a", encoding="utf-8") as handle:
        handle.write(f"split: {split}\n")


def summary(repo: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((repo / "reports/climb.json").read_text())
    return loaded
