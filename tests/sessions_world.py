"""A machine for session-replay tests: the fixture transcripts, their repositories, servers.

The fixture transcripts are copied into a temporary ~/.claude/projects whose inventory-api
sessions point at a repository that exists (a temporary folder); the notes-cli repository
is left missing on purpose, so its cases are skipped with the reason.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agenteval.cli import app

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests/fixtures/claude_sessions"
RECORDED_CWD = "/home/dev/work/inventory-api"


def make_world(tmp: Path) -> tuple[Path, Path]:
    """(transcripts folder, the inventory-api repository) under `tmp`."""
    repo = tmp / "inventory-api"
    (repo / "app/routes").mkdir(parents=True)
    (repo / "app/routes/items.py").write_text("def list_items(limit=None):\n    ...\n")
    projects = tmp / "projects"
    shutil.copytree(FIXTURES, projects, ignore=shutil.ignore_patterns("README.md"))
    for path in projects.rglob("*.jsonl"):
        path.write_text(path.read_text().replace(RECORDED_CWD, str(repo)))
    return projects, repo


def agent_reply(body: Any) -> Any:
    """The agent under test: answers every request in a sentence that quotes it back."""
    from servers.common import Reply

    asked = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    return Reply(text=f"Looked into it: {asked[:60]} - the zero limit is falsy, fixed the check.")


def sets_for(projects: Path, agent: Any, judge: Any, tmp: Path, *extra: str) -> list[str]:
    return [
        f"sessions.transcripts={projects}",
        "sessions.limit=20",
        "target.kind=chat",
        "target.model=agent-under-test",
        f"target.base_url={agent.base_url}",
        "sessions.judge.model=judge-model",
        f"sessions.judge.base_url={judge.base_url}",
        f"tracking.uri=sqlite:///{tmp}/mlflow.db",
        *extra,
    ]


def run_cli(out: Path, sets: list[str], *args: str) -> Any:
    argv = ["sessions", "--out", str(out), *args]
    for assignment in sets:
        argv += ["--set", assignment]
    return CliRunner().invoke(app, argv)


def read(path: Path) -> Any:
    return json.loads(path.read_text())
