"""params.yaml: the one place a run is configured. Sections are contracts with DVC stages."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from agenteval.fileio import digest_of

SECTIONS = ("suite", "target", "simulator", "judge", "run", "stats", "tracking")

# The embedded offline default: runs with no network and no keys.
DEFAULTS: dict[str, Any] = {
    "suite": {
        "scenarios": "eval/scenarios",
        "manifest": "eval/corpus/manifest.json",
        "categories": [],
        "ids": [],
        "iterations": 1,
        "seed": 0,
    },
    "target": {
        "kind": "builtin",
        "model": "builtin-bm25",
        "agent": "eval/agents/default",
        "params": {"chunk_size": 400, "top_k": 4, "abstain_threshold": 0.3, "temperature": 0.0},
    },
    "simulator": {"kind": "scripted"},
    "judge": {
        "kind": "code",
        "weights": {},
        "pass_threshold": 6.0,
        "min_correctness": 4.0,
    },
    "run": {
        "concurrency": 4,
        "timeout_s": 900,
        "budget_usd_per_scenario": None,
        "budget_usd_total": None,
        "cache_dir": ".cache/agenteval/llm",
        "max_attempts": 5,
        "request_timeout_s": 60,
        "prices": {},
    },
    "stats": {"conf": 0.95, "stability_tau": 0.2, "bootstrap_resamples": 2000},
    "tracking": {"experiment": "agenteval", "uri": None, "enabled": True, "traces": True},
}


class ParamsError(ValueError):
    pass


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def apply_overrides(params: Mapping[str, Any], assignments: Iterable[str]) -> dict[str, Any]:
    """Apply `a.b.c=value` overrides; the value is read as a YAML scalar (8, 0.5, true, [x])."""
    result = copy.deepcopy(dict(params))
    for assignment in assignments:
        key, sep, raw = assignment.partition("=")
        if not sep or not key.strip():
            raise ParamsError(f"--set expects key=value, got {assignment!r}")
        parts = key.strip().split(".")
        if parts[0] not in SECTIONS:
            raise ParamsError(f"--set {key}: unknown section {parts[0]!r} ({', '.join(SECTIONS)})")
        node = result
        for part in parts[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ParamsError(f"--set {key}: {part!r} is not a mapping")
            node = child
        node[parts[-1]] = yaml.safe_load(raw) if raw.strip() else ""
    return result


def load_params(path: Path | None = None, overrides: Iterable[str] = ()) -> dict[str, Any]:
    """Defaults, then params.yaml (if present), then --set overrides."""
    params = copy.deepcopy(DEFAULTS)
    if path is not None and path.exists():
        loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(loaded, dict):
            raise ParamsError(f"{path}:1: params must be a mapping of sections")
        params = deep_merge(params, loaded)
    return apply_overrides(params, overrides)


def section_digest(params: Mapping[str, Any], *sections: str) -> str:
    return digest_of({name: params.get(name) for name in sections or SECTIONS})


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """{'a': {'b': 1}} -> {'a.b': 1}; lists stay values."""
    if not isinstance(value, Mapping):
        return {prefix: value}
    flat: dict[str, Any] = {}
    for key, child in value.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(child, Mapping) and child:
            flat.update(flatten(child, name))
        else:
            flat[name] = child
    return flat
