"""Every committed dvc.lock describes the code and params it was written from.

A lock whose stages name code digests that moved since (a change merged without `dvc
repro`) makes `dvc status` on a fresh clone print "modified: agenteval/..." for every
pipeline, which reads as a broken clone. What a fresh clone lacks (outputs only in a DVC
cache: "not in cache", "deleted") is not staleness and is left to `dvc repro` / `dvc pull`;
"modified" is. Regenerate every lock with `.ci/relock` (docs/pipeline.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
STALE = frozenset({"modified", "changed checksum"})
STAGE_STALE = frozenset({"changed command", "always changed"})


def stale_entries(status: Mapping[str, Any]) -> list[str]:
    """`stage: path modified` for each dependency or output of `dvc status --json` whose
    committed digest no longer matches what is on disk, and each stage whose command moved."""
    found = []
    for stage, changes in status.items():
        for change in changes:
            if isinstance(change, str):
                if change in STAGE_STALE:
                    found.append(f"{stage}: {change}")
                continue
            for kind, paths in change.items():
                for path, state in (paths or {}).items():
                    if state in STALE:
                        found.append(f"{stage}: {kind}: {path} {state}")
    return found


def _has_lock(stage: str) -> bool:
    """Whether the dvc.yaml a `dvc status` stage name belongs to has a committed lock."""
    pipeline = stage.split(":", 1)[0] if ":" in stage else "dvc.yaml"
    return (ROOT / pipeline).with_name("dvc.lock").is_file()


def test_stale_entries_are_moved_digests_not_what_a_fresh_clone_lacks() -> None:
    status = {
        "fetch": [{"changed outs": {"data/corpora": "not in cache"}}],
        "suite": [{"changed deps": {"data/corpora": "deleted"}}],
        "score": [{"changed deps": {"agenteval/scoring.py": "modified"}}, "changed command"],
        "pipelines/qa/dvc.yaml:track": [{"changed outs": {"reports/tracked.json": "modified"}}],
    }
    assert stale_entries(status) == [
        "score: changed deps: agenteval/scoring.py modified",
        "score: changed command",
        "pipelines/qa/dvc.yaml:track: changed outs: reports/tracked.json modified",
    ]
    assert stale_entries({"fetch": status["fetch"], "suite": status["suite"]}) == []


def test_every_committed_lock_is_current_with_the_code() -> None:
    if not (ROOT / ".git").exists() or shutil.which("dvc") is None:
        pytest.skip("not a git checkout with dvc on PATH")
    env = dict(os.environ, DVC_NO_ANALYTICS="1")
    done = subprocess.run(
        ["dvc", "status", "--json"], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    status = json.loads(done.stdout or "{}")
    # A pipeline with no committed lock has never been run here (a user's own copy of the
    # sessions template, say): nothing of it is stale, it is simply not run yet.
    status = {stage: changes for stage, changes in status.items() if _has_lock(stage)}
    stale = stale_entries(status)
    assert stale == [], "committed locks are stale; regenerate with .ci/relock:\n" + "\n".join(
        stale
    )


# The participants whose code digest (fileio.code_of) is stored in what a stage writes: a
# transcript or verdict names every file its producer is built from, so each such file must
# be a dependency of the stage, or an edit changes the committed outputs while `dvc status`
# still calls them current (the fresh-copy test then finds different bytes).
JUDGES = (
    "agenteval.judges.llm",
    "agenteval.judges.code",
    "agenteval.judges.pairwise",
    "agenteval.judges.mlflow_judge",
)
DIGESTED = {
    "infer": (
        "agenteval.targets.builtin",
        "agenteval.targets.chat",
        "agenteval.targets.mcp",
        "agenteval.targets.claude_code",
        "agenteval.simulators.llm",
        "agenteval.simulators.scripted",
    ),
    "judge": JUDGES,
    "controls": JUDGES,  # the same judges graded on the labelled controls
}


@pytest.mark.parametrize("stage", sorted(DIGESTED))
def test_every_file_a_stored_code_digest_names_is_a_dependency(stage: str) -> None:
    import yaml

    from agenteval.fileio import code_identity

    deps = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"][stage]["deps"]
    named = {f"agenteval/{f}" for m in DIGESTED[stage] for f in code_identity(m)}
    uncovered = sorted(f for f in named if not any(f == d or f.startswith(d + "/") for d in deps))
    assert uncovered == [], f"dvc.yaml stage {stage!r} lacks deps: {uncovered}"
