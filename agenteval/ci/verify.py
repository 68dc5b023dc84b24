"""The `verify` tier: a final release tag re-runs nothing; it checks that a full sweep
measured its commit or one of its release candidates' commits (`agenteval ci-verify`).

A sweep counts when its scorecard ran the `full` lane (config.tier) and every unit it holds
ran at one commit (the per-unit stamps of `agenteval.stamps`): a scorecard merged from
several commits by `--resume` measured none of them alone. A unit of an in-process agent or
the code judge is stamped by content: it measured a commit when that commit's tree holds
its files byte for byte (`stamps.holds_code`, asked of git), and a sweep with two content
stamps mixed two versions of the code. Evidence comes from committed
results (scorecard files or run directories) or from an MLflow store (the `suite.tier`
param and the `units.*` tags that `tracking.run` logs). Which commits count is git's: the
tag's own and those of every pre-release tag of the same version (v1.4.0-rc1, v1.4.0b2).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenteval.ci.plan import RELEASE

FULL = "full"


@dataclass(frozen=True)
class Sweep:
    """One measured evaluation: where it was found, its lane, the commits of its units."""

    source: str
    tier: str | None
    commits: tuple[str, ...]
    code: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # stamp -> its files

    def measured(self, commit: str, holds: Holds) -> bool:
        """A full sweep whose every unit ran at `commit` (a full or an abbreviated sha), by
        its commit stamp or by the content its commit's tree holds (`holds`)."""
        stamps = len(set(self.commits)) + len(self.code)
        if self.tier != FULL or stamps != 1:
            return False
        if self.code:
            return all(holds(commit, files) for files in self.code.values())
        ran = self.commits[0]
        short = min(len(ran), len(commit))
        return short >= 7 and ran[:short] == commit[:short]

    def stamps(self) -> str:
        return ", ".join([*(c[:12] for c in self.commits), *self.code]) or "none stamped"


# Whether a commit's tree holds a content stamp's files (stamps.holds_code, bound to a repo).
Holds = Callable[[str, Mapping[str, str]], bool]


@dataclass(frozen=True)
class Outcome:
    ok: bool
    lines: list[str]


def verdict(
    candidates: Sequence[tuple[str, str]], sweeps: Iterable[Sweep], holds: Holds | None = None
) -> Outcome:
    """`candidates`: (label, commit) — the tag's own commit first, then its RCs';
    `holds`: git's answer for content stamps (none: no content stamp counts)."""
    found = list(sweeps)
    check: Holds = holds or (lambda _commit, _files: False)
    for label, commit in candidates:
        for sweep in found:
            if sweep.measured(commit, check):
                return Outcome(True, [f"{label} ({commit[:12]}) was measured by a full sweep: "
                                      f"{sweep.source}"])  # fmt: skip
    tag, commit = candidates[0]
    rcs = [f"{label} ({c[:12]})" for label, c in candidates[1:]]
    lines = [f"no full sweep measured commit {commit} ({tag})"
             + (f" or its release candidates {', '.join(rcs)}" if rcs else
                " and it has no release candidate tag")]  # fmt: skip
    lines.append(f"looked at {len(found)} evaluation(s); a sweep counts when it ran the full "
                 "lane and all its units ran at one of these commits (or, stamped by content, "
                 "ran the code one of them holds)")  # fmt: skip
    for s in found:
        lines.append(f"  {s.source}: tier {s.tier or '-'}, stamps {s.stamps()}")
    return Outcome(False, lines)


def release_candidates(root: Path, tag: str) -> list[tuple[str, str]]:
    """The tag and each pre-release tag of its version, with the commit each points at."""
    if not RELEASE.match(tag):
        raise ValueError(f"--tag: {tag!r} is not a final release tag (v1.4.0)")
    own = _commit_of(root, tag)
    if own is None:
        raise ValueError(f"--tag: git knows no tag {tag} here (fetch the tags first)")
    listed = _git(root, "tag", "--list", f"{tag}*").splitlines()
    pre = re.compile(re.escape(tag) + r"[-.]?(rc|a|b|alpha|beta|pre|dev)\.?\d*$", re.IGNORECASE)
    found = [(tag, own)]
    for name in sorted(n for n in listed if pre.match(n)):
        commit = _commit_of(root, name)
        if commit is not None:
            found.append((name, commit))
    return found


def sweeps_from_results(paths: Sequence[Path]) -> list[Sweep]:
    """Sweeps from scorecard files or run directories (a missing path is skipped)."""
    from agenteval.fileio import read_json

    found = []
    for path in paths:
        card_path = path / "scorecard.json" if path.is_dir() else path
        if not card_path.is_file():
            continue
        card = read_json(card_path)
        commits = card.get("commits") or []
        tier = (card.get("config") or {}).get("tier")
        code = card.get("code_stamps") or {}
        found.append(Sweep(str(card_path), tier, tuple(commits), code))
    return found


def sweeps_from_mlflow(uri: str, experiment: str) -> list[Sweep]:
    """Sweeps from the finished runs of an MLflow experiment (public client API)."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return []
    runs = client.search_runs([found.experiment_id], "attributes.status = 'FINISHED'")
    sweeps = []
    for run in runs:
        tags, params = run.data.tags, run.data.params
        commits = [c for c in tags.get("units.commits", "").split(",") if c]
        source = f"{uri} run {run.info.run_id}"
        code = _code_stamps(client, run.info.run_id) if tags.get("units.code") else {}
        sweeps.append(Sweep(source, params.get("suite.tier"), tuple(commits), code))
    return sweeps


def _code_stamps(client: Any, run_id: str) -> dict[str, dict[str, str]]:
    """A run's content stamps and their files, from its provenance.json (`units`); a run
    whose record is missing or unreadable holds none (so it measured no commit)."""
    import json
    import tempfile

    from agenteval.tracking.provenance import PROVENANCE_FILE

    with tempfile.TemporaryDirectory(prefix="agenteval-verify-") as tmp:
        try:
            path = client.download_artifacts(run_id, PROVENANCE_FILE, tmp)
            found = json.loads(Path(path).read_text(encoding="utf-8"))
        except Exception:  # MLflow raises its own kinds for a missing file
            return {}
    stamps = (
        ((found or {}).get("units") or {}).get("code_stamps") if isinstance(found, dict) else None
    )
    if not isinstance(stamps, dict) or not all(isinstance(v, dict) for v in stamps.values()):
        return {}
    return {str(k): {str(p): str(h) for p, h in v.items()} for k, v in stamps.items()}


def _commit_of(root: Path, ref: str) -> str | None:
    try:
        return _git(root, "rev-parse", "--verify", "-q", f"refs/tags/{ref}^{{commit}}") or None
    except subprocess.CalledProcessError:
        return None


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()
