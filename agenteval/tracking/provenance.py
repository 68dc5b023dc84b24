"""What a run is: its params, its provenance tags, and the key that makes logging idempotent."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from agenteval import __version__
from agenteval.fileio import digest_of, sha256_file
from agenteval.llm.scrub import MIN_SECRET_LEN, SECRET_ENV_NAME, Scrubber
from agenteval.params import flatten, section_digest
from agenteval.schema.scorecard import Scorecard

if TYPE_CHECKING:
    from agenteval.layout import Layout

# The params.yaml sections that decide what was measured; logged as MLflow params.
PARAM_SECTIONS = ("suite", "target", "simulator", "judge", "run")
TRACK_STAGE = "track"
PROMPTS_DIR = Path("eval/prompts")
# DVC sets these for stage commands run by `dvc exp run` (workspace and queued alike).
DVC_EXP_ENV = {
    "DVC_EXP_NAME": "agenteval.dvc.exp_name",
    "DVC_EXP_BASELINE_REV": "agenteval.dvc.baseline_rev",
}
_KEY_CHARS = re.compile(r"[^\w\-./ ]")


def mlflow_key(name: str) -> str:
    """MLflow accepts letters, digits, _ - . / and space in keys, up to 250 characters."""
    return _KEY_CHARS.sub("_", name)[:250]


def key_env_names(params: Mapping[str, Any]) -> list[str]:
    """Variables named by `*_env` settings (e.g. target.api_key_env): their values are keys."""
    names: list[str] = []
    for key, value in flatten(dict(params)).items():
        if key.endswith("_env") and isinstance(value, str) and value:
            names.append(value)
    return names


def secret_scrubber(params: Mapping[str, Any]) -> Scrubber:
    return Scrubber.from_environment(key_env_names(params))


def known_secret_values(params: Mapping[str, Any]) -> list[str]:
    """The exact secret values in this environment, for redacting files we upload verbatim."""
    wanted = set(key_env_names(params))
    values = {
        value.strip()
        for name, value in os.environ.items()
        if name in wanted or SECRET_ENV_NAME.search(name)
    }
    return sorted((v for v in values if len(v) >= MIN_SECRET_LEN), key=len, reverse=True)


def run_params(params: Mapping[str, Any], scrubber: Scrubber, limit: int) -> dict[str, str]:
    """Flattened sections; lists and mappings as JSON; values cut to MLflow's length limit."""
    flat: dict[str, str] = {}
    for section in PARAM_SECTIONS:
        for key, value in flatten(params.get(section) or {}, section).items():
            text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
            flat[mlflow_key(key)] = scrubber.scrub_text(text)[:limit]
    return flat


def provenance_tags(layout: Layout, params: Mapping[str, Any], card: Scorecard) -> dict[str, str]:
    """Who and what produced the numbers: code, agent, judge, simulator, inputs, pipeline."""
    return config_tags(layout, params, card.config)


def config_tags(
    layout: Layout, params: Mapping[str, Any], config: Mapping[str, Any]
) -> dict[str, str]:
    """The provenance tags of any run described by a scorecard-shaped `config` (participants
    under target / judge / simulator, and the suite, corpus and params digests)."""
    tags: dict[str, Any] = {"agenteval.version": __version__}
    for role, fields in (
        ("target", ("kind", "model", "protocol", "config_digest")),
        ("judge", ("kind", "model", "protocol", "config_digest")),
        ("simulator", ("kind", "model")),
    ):
        participant = config.get(role) or {}
        for field in fields:
            tags[f"agenteval.{role}.{field}"] = participant.get(field)
    for field in ("scenario_set_digest", "corpus_digest", "params_digest"):
        tags[f"agenteval.{field}"] = config.get(field)
    lock = layout.root / "dvc.lock"
    tags["agenteval.dvc_lock_digest"] = sha256_file(lock) if lock.is_file() else None
    for env, tag in DVC_EXP_ENV.items():
        tags[tag] = os.environ.get(env)
    git = git_state(layout.root)
    tags["agenteval.git.commit"] = tags["mlflow.source.git.commit"] = git.get("commit")
    tags["agenteval.git.dirty"] = git.get("dirty")
    for path, digest in prompt_digests(layout.root, params).items():
        tags[mlflow_key(f"agenteval.sha256.{path}")] = digest
    return {key: str(value) for key, value in tags.items() if value is not None}


def git_state(root: Path) -> dict[str, str]:
    """HEAD and whether the work tree differs from it; empty outside git or without git."""
    try:
        commit = _git(root, "rev-parse", "HEAD")
        changes = _git(root, "status", "--porcelain")
    except (OSError, subprocess.SubprocessError):
        return {}
    return {"commit": commit, "dirty": "true" if changes else "false"}


def _git(root: Path, *args: str) -> str:
    # No optional locks: a status refresh must not take index.lock while DVC or the user
    # runs git in the same tree.
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")
    done = subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout.strip()


def prompt_digests(root: Path, params: Mapping[str, Any]) -> dict[str, str]:
    """sha256 of every file of the agent's configuration folder and of eval/prompts/*.md."""
    files: list[Path] = []
    agent = (params.get("target") or {}).get("agent")
    if isinstance(agent, str) and agent and (root / agent).is_dir():
        files += [p for p in (root / agent).rglob("*") if p.is_file() and not _hidden(p, root)]
    if (root / PROMPTS_DIR).is_dir():
        files += sorted((root / PROMPTS_DIR).glob("*.md"))
    return {p.relative_to(root).as_posix(): sha256_file(p) for p in sorted(set(files))}


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)


def run_key(layout: Layout, params: Mapping[str, Any]) -> tuple[str, str]:
    """(key, basis): equal keys mean the same evaluation, so it is logged once.

    With a dvc.lock that describes these very files the key is its stage entries (content
    hashes of every input, output and param); otherwise the files and params themselves.
    """
    stages = _lock_stages(layout)
    if stages is not None:
        return digest_of({"dvc.lock": stages}), "dvc.lock"
    basis = {
        "scorecard": sha256_file(layout.scorecard),
        "transcripts": _tree_digest(layout.transcripts),
        "verdicts": _tree_digest(layout.verdicts),
        "params": section_digest(dict(params), *PARAM_SECTIONS),
    }
    return digest_of(basis), "files"


def _lock_stages(layout: Layout) -> dict[str, Any] | None:
    path = layout.root / "dvc.lock"
    if not path.is_file():
        return None
    try:
        stages = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("stages")
    except (OSError, yaml.YAMLError, AttributeError):
        return None
    if not isinstance(stages, dict) or not _lock_describes(stages, layout):
        return None
    # Our own entry changes after we log (it records mlflow_run.json), so it is left out.
    return {name: entry for name, entry in stages.items() if name != TRACK_STAGE}


def _lock_describes(stages: dict[str, Any], layout: Layout) -> bool:
    """True when dvc.lock recorded the scorecard we are about to log (not a stale one, and
    not the repository's when the run was written elsewhere with `agenteval run --out`)."""
    if not layout.scorecard.is_file():
        return False
    target = layout.scorecard.resolve()
    for entry in stages.values():
        for out in (entry or {}).get("outs") or []:
            if isinstance(out, dict) and (layout.root / str(out.get("path"))).resolve() == target:
                return bool(out.get("md5") == _md5_file(layout.scorecard))
    return False


def _md5_file(path: Path) -> str:
    return hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()


def _tree_digest(folder: Path) -> str | None:
    if not folder.is_dir():
        return None
    files = sorted(p for p in folder.rglob("*.json") if p.is_file())
    return digest_of({p.relative_to(folder).as_posix(): sha256_file(p) for p in files})
