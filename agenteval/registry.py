"""Adapters (targets, simulators, judges) and benchmarks are looked up by `kind`; adding one
is one module (a benchmark: one folder) and one registry line.

Every factory is called as `factory(params, root)` with the whole params mapping, because
some need more than their own section (run.concurrency, or the target's endpoint to refuse
self-judging).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def build(registry: Mapping[str, str], role: str, params: dict[str, Any], root: Path) -> Any:
    section = params.get(role) or {}
    kind = str(section.get("kind"))
    if kind not in registry:
        known = ", ".join(sorted(registry))
        raise ValueError(f"unknown {role} kind {kind!r} (known: {known})")
    return resolve(registry[kind])(params, root)


def resolve(spec: str) -> Any:
    """The attribute a registry line names, `"package.module:attr"`, imported on first use
    (an adapter's or a benchmark's heavy imports are paid only by the runs that use it)."""
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)
