"""What every stage shares: the repository root, its params, and its file layout."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from agenteval import heap
from agenteval.layout import Layout
from agenteval.params import load_params


def run_stage(main: Callable[[], int]) -> NoReturn:
    """A stage's entry point: the collector settled for a batch process (agenteval.heap),
    then main's return value as the exit status."""
    heap.claim()
    heap.settle()
    sys.exit(main())


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


# -- benchmark variants (pipelines/<name>/dvc.yaml, run with the repository root as wdir) --
def variant_dir(name: str) -> Path:
    return root() / "pipelines" / name


def variant_params(name: str) -> dict[str, Any]:
    return load_params(variant_dir(name) / "params.yaml")


def variant_layout(name: str) -> Layout:
    """data/ and reports/ of a variant live in its own folder beside its dvc.yaml."""
    folder = variant_dir(name)
    return Layout(root(), folder / "data", folder / "reports")
