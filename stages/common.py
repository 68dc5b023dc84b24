"""What every stage shares: the repository root, its params, and its file layout."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from agenteval.layout import Layout
from agenteval.params import load_params


def root() -> Path:
    # DVC runs each stage with the working directory at the repository root of the workspace
    # being reproduced (a temporary copy for `dvc exp run --temp/--queue`). DVC_ROOT names the
    # *original* workspace in those runs, so it is right for the shared MLflow store only.
    return Path.cwd().resolve()


def params() -> dict[str, Any]:
    return load_params(root() / "params.yaml")


def layout() -> Layout:
    return Layout.repository(root())


def show_progress() -> bool:
    return sys.stderr.isatty()
