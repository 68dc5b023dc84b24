"""What a run is: its params, its provenance tags, and the key that makes logging idempotent."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import yaml

from agenteval import __version__
from agenteval.fileio import digest_of, sha256_file
from agenteval.llm.config import DEFAULT_CACHE_DIR
from agenteval.llm.scrub import MIN_SECRET_LEN, SECRET_ENV_NAME, Scrubber
from agenteval.params import flatten, section_digest
from agenteval.schema.scorecard import Scorecard
from agenteval.stamps import CODE_PREFIX, git_state, spans_commits

if TYPE_CHECKING:
    from agenteval.layout import Layout

# The params.yaml sections that decide what was measured; logged as MLflow params.
PARAM_SECTIONS = ("suite", "target", "simulator", "judge", "run")
TRACK_STAGE = "track"
PROMPTS_DIR = Path("eval/prompts")
# Hex characters of a digest shown in a run tag; provenance.json keeps the whole digest.
SHORT = 8
PROVENANCE_FILE = "provenance.json"
# DVC sets these for stage commands run by `dvc exp run` (workspace and queued alike).
DVC_EXP_ENV = {"DVC_EXP_NAME": "exp_name", "DVC_EXP_BASELINE_REV": "baseline_rev"}
_KEY_CHARS = re.compile(r"[^\w\-./ ]")
_BAD_NAME_CHARS = re.compile(r"[/:.%\"'\s]+")  # what MLflow refuses in a LoggedModel name


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
    """Who and what produced the numbers, as short run tags (see `headline_tags`)."""
    return config_tags(layout, params, card.config)


def config_tags(
    layout: Layout, params: Mapping[str, Any], config: Mapping[str, Any]
) -> dict[str, str]:
    """The provenance tags of any run described by a scorecard-shaped `config` (participants
    under target / judge / simulator, and the suite, corpus and params digests)."""
    return headline_tags(provenance_record(layout, params, config))


def provenance_record(
    layout: Layout, params: Mapping[str, Any], config: Mapping[str, Any]
) -> dict[str, Any]:
    """Everything that produced the numbers, in full: logged as the run's provenance.json.

    The run tags (`headline_tags`) repeat the parts a person looks for, with digests cut to
    SHORT characters; this record keeps every full digest, file path and code digest.
    """
    lock = layout.root / "dvc.lock"
    git = git_state(layout.root)
    return {
        "agenteval_version": __version__,
        "agent": participant(config.get("target")),
        "judge": participant(config.get("judge")),
        "simulator": participant(config.get("simulator")),
        "digests": {
            "scenario_set": config.get("scenario_set_digest"),
            "corpus": config.get("corpus_digest"),
            "params": config.get("params_digest"),
            "dvc_lock": sha256_file(lock) if lock.is_file() else None,
        },
        "files": prompt_digests(layout.root, params),
        "git": git or None,
        "dvc": {field: os.environ.get(env) for env, field in DVC_EXP_ENV.items()},
    }


def participant(found: Any) -> dict[str, Any]:
    """kind, model, protocol, config digest, and the digest of its code (details.code)."""
    participant = dict(found or {})
    code = (participant.get("details") or {}).get("code")
    participant["code_digest"] = digest_of(code) if code else None
    return participant


def headline_tags(record: Mapping[str, Any]) -> dict[str, str]:
    """Short tag names a person can read in the MLflow UI, values short enough to show whole.

    `agent.*`, `judge.*`, `simulator.*` name the participants (`.digest`: configuration
    digest), `suite.digest` / `corpus.digest` / `params.digest` / `dvc.lock.digest` the
    inputs, `prompt.<name>.sha256` and `agent.<file>.sha256` each prompt and agent file,
    `git.*` and `dvc.*` where the run came from. Every digest is its first SHORT characters;
    provenance.json holds them whole.
    """
    tags: dict[str, Any] = {"agenteval.version": record.get("agenteval_version")}
    for role in ("agent", "judge", "simulator"):
        participant = record.get(role) or {}
        for field in ("kind", "model", "protocol"):
            tags[f"{role}.{field}"] = participant.get(field)
        tags[f"{role}.digest"] = _short(participant.get("config_digest"))
    tags["agent.code.digest"] = _short((record.get("agent") or {}).get("code_digest"))
    digests = record.get("digests") or {}
    for name, key in (("suite", "scenario_set"), ("corpus", "corpus"), ("params", "params"),
                      ("dvc.lock", "dvc_lock")):  # fmt: skip
        tags[f"{name}.digest"] = _short(digests.get(key))
    tags |= file_tags(record.get("files") or {})
    git = record.get("git") or {}
    tags["git.commit"] = _short(git.get("commit"))
    tags["mlflow.source.git.commit"] = git.get("commit")
    tags["git.dirty"] = git.get("dirty")
    dvc = record.get("dvc") or {}
    tags["dvc.exp"] = dvc.get("exp_name")
    tags["dvc.baseline"] = _short(dvc.get("baseline_rev"))
    return {key: str(value) for key, value in tags.items() if value is not None}


def unit_commit_tags(
    commits: list[str], code: Mapping[str, Mapping[str, str]] | None = None
) -> dict[str, str]:
    """`units.span_commits` (true when the scorecard's units ran on several commits or
    content stamps, e.g. a `--resume` after a commit), `units.commits` (each, short, in the
    order they ran) and, for units stamped by content, `units.code` (each stamp, short; the
    files each covers are in the run's provenance.json, `units.code_stamps`, for ci-verify)."""
    code = code or {}
    spans = spans_commits([*commits, *code])
    tags = {"units.span_commits": "true" if spans else "false"}
    if commits:
        tags["units.commits"] = ",".join(c[:SHORT] for c in commits)
    if code:
        tags["units.code"] = ",".join(s.removeprefix(CODE_PREFIX)[:SHORT] for s in code)
    return tags


def _short(digest: Any) -> str | None:
    return str(digest)[:SHORT] if digest else None


def file_tags(files: Mapping[str, str]) -> dict[str, str]:
    """`prompt.judge_turn.sha256` for eval/prompts/judge_turn.md, `agent.system_prompt.sha256`
    for a file of the agent's folder (its path inside the folder, suffix dropped unless two
    files would share a name)."""
    names: dict[str, list[str]] = {}
    for path in files:
        names.setdefault(_file_tag(path, keep_suffix=False), []).append(path)
    tags = {}
    for name, paths in names.items():
        for path in paths:
            key = name if len(paths) == 1 else _file_tag(path, keep_suffix=True)
            tags[mlflow_key(key)] = files[path][:SHORT]
    return tags


def _file_tag(path: str, *, keep_suffix: bool) -> str:
    posix = PurePosixPath(path)
    if posix.parent == PurePosixPath(PROMPTS_DIR.as_posix()):
        role, inner = "prompt", PurePosixPath(posix.name)
    else:
        # eval/agents/<name>/<file...>: the agent folder's own path is in params.
        parts = posix.parts
        role, inner = "agent", PurePosixPath(*parts[3:]) if len(parts) > 3 else posix
    if not keep_suffix:
        inner = inner.with_suffix("")
    return f"{role}.{'.'.join(inner.parts)}.sha256"


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


def run_key(
    layout: Layout, params: Mapping[str, Any], trees: Mapping[str, str | None] | None = None
) -> tuple[str, str]:
    """(key, basis): equal keys mean the same evaluation, so it is logged once.

    With a dvc.lock that describes these very files the key is its stage entries (content
    hashes of every input, output and param); otherwise the files and params themselves.
    `trees` are `tree_digests(layout)` taken earlier, once the transcripts and verdicts
    were final (`agenteval run` has them taken while it scores).
    """
    stages = _lock_stages(layout)
    if stages is not None:
        return digest_of({"dvc.lock": stages}), "dvc.lock"
    basis = {
        "scorecard": sha256_file(layout.scorecard),
        **(trees if trees is not None else tree_digests(layout)),
        "params": section_digest(dict(params), *PARAM_SECTIONS),
    }
    return digest_of(basis), "files"


def tree_digests(layout: Layout) -> dict[str, str | None]:
    """The run's transcripts and verdicts, one digest per folder (part of its key)."""
    return {
        "transcripts": _tree_digest(layout.transcripts),
        "verdicts": _tree_digest(layout.verdicts),
    }


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
    return {
        name: _without_response_cache(entry)
        for name, entry in stages.items()
        if name != TRACK_STAGE
    }


def _without_response_cache(entry: Any) -> Any:
    """The stage entry minus the response cache, an `infer` output only so that `dvc push`
    carries it: it stores replies, it is no result. Replies an LLM judge caches after infer
    saved it change its hash at the next repro, and the same evaluation must keep its key."""
    if not isinstance(entry, dict) or not isinstance(entry.get("outs"), list):
        return entry
    outs = [
        o for o in entry["outs"] if not (isinstance(o, dict) and o.get("path") == DEFAULT_CACHE_DIR)
    ]
    return {**entry, "outs": outs}


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


def suite_label(config: Mapping[str, Any], params: Mapping[str, Any]) -> str:
    """`56 scenarios`, `smoke: 12 scenarios ×3`: which scenario set, how many times."""
    count = len(config.get("scenarios") or {})
    label = f"{count} scenario{'s' if count != 1 else ''}"
    tier = (params.get("suite") or {}).get("tier")
    if tier:
        label = f"{tier}: {label}"
    iterations = int(config.get("iterations") or 1)
    return label + (f" ×{iterations}" if iterations > 1 else "")


def participant_label(participant: Mapping[str, Any] | None, role: str) -> str:
    """`code judge`, `llm gpt-4o judge`."""
    found = participant or {}
    kind, model = found.get("kind") or "?", found.get("model")
    return f"{kind} {model} {role}" if model else f"{kind} {role}"


def agent_version_name(agent: Mapping[str, Any] | None) -> str:
    """`builtin-bm25-68a6aeba`: the agent's model (or kind) and its configuration digest, the
    name of its LoggedModel ("Agent versions") and the first part of every run name."""
    found = agent or {}
    base = str(found.get("model") or found.get("kind") or "agent")
    digest = str(found.get("config_digest") or "")[:SHORT]
    name = _BAD_NAME_CHARS.sub("-", f"{base}-{digest}" if digest else base).strip("-")
    return name or "agent"


def run_name(config: Mapping[str, Any], params: Mapping[str, Any]) -> str:
    """The agent version, the judge and the suite: `builtin-bm25-68a6aeba · code judge ·
    56 scenarios` (`tracking.names` leads it with what tells the run apart)."""
    return " · ".join(
        (
            agent_version_name(config.get("target")),
            participant_label(config.get("judge"), "judge"),
            suite_label(config, params),
        )
    )
