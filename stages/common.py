"""What every stage shares: the repository root, its params, and its file layout."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from agenteval.params import load_params
from agenteval.pipeline import Layout


def root() -> Path:
    # DVC runs stages from the repository root (or a temporary copy of it for queued
    # experiments); DVC_ROOT names it when set.
    return Path(os.environ.get("DVC_ROOT") or Path.cwd()).resolve()


def params() -> dict[str, Any]:
    return load_params(root() / "params.yaml")


def layout() -> Layout:
    return Layout.repository(root())


def show_progress() -> bool:
    return sys.stderr.isatty()
