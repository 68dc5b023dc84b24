"""Adapters (targets, simulators, judges) are looked up by `kind`; adding one is one module.

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
    module, _, name = registry[kind].partition(":")
    return getattr(importlib.import_module(module), name)(params, root)
