"""A fresh MLflow SQL store without paying its schema migrations again.

Creating a SQLite tracking store runs every MLflow migration (the costliest part of an MLflow
test on a loaded machine). The first call of a test process migrates one template database;
every later call copies it: a new, empty store that MLflow opens as it would its own, through
its public client only.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from functools import cache
from pathlib import Path

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


@cache
def _template() -> Path:
    from mlflow import MlflowClient

    path = Path(tempfile.mkdtemp(prefix="mlflow-template-")) / "mlflow.db"
    MlflowClient(tracking_uri=f"sqlite:///{path.as_posix()}").search_experiments()
    return path


def fresh_store(folder: Path) -> str:
    """The tracking URI of a new, migrated, empty SQLite store in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "mlflow.db"
    shutil.copyfile(_template(), db)
    return f"sqlite:///{db.as_posix()}"
