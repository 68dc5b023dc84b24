"""The `verify` tier: a final release tag re-runs nothing; it checks that a full sweep
measured its commit or one of its release candidates' commits (`agenteval ci-verify`).

A sweep counts when its scorecard ran the `full` lane (config.tier) and every unit it holds
ran at one commit (the per-unit stamps of `agenteval.stamps`): a scorecard merged from
several commits by `--resume` measured none of them alone. Evidence comes from committed
results (scorecard files or run directories) or from an MLflow store (the `suite.tier`
param and the `units.*` tags that `tracking.run` logs). Which commits count is git's: the
tag's own and those of every pre-release tag of the same version (v1.4.0-rc1, v1.4.0b2).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agenteval.ci.plan import RELEASE

FULL = "full"


@dataclass(frozen=True)
class Sweep:
    """One measured evaluation: where it was found, its lane, the commits of its units."""

    source: str
    tier: str | None
    commits: tuple[str, ...]

    def measured(self, commit: str) -> bool:
        """A full sweep whose every unit ran at `commit` (a full or an abbreviated sha)."""
        if self.tier != FULL or len(set(self.commits)) != 1:
            return False
        ran = self.commits[0]
        short = min(len(ran), len(commit))
        return short >= 7 and ran[:short] == commit[:short]


@dataclass(frozen=True)
class Outcome:
    ok: bool
    lines: list[str]


def verdict(candidates: Sequence[tuple[str, str]], sweeps: Iterable[Sweep]) -> Outcome:
    """`candidates`: (label, commit) — the tag's own commit first, then its RCs'."""
    found = list(sweeps)
    for label, commit in candidates:
        for sweep in found:
            if sweep.measured(commit):
                return Outcome(True, [f"{label} ({commit[:12]}) was measured by a full sweep: "
                                      f"{sweep.source}"])  # fmt: skip
    tag, commit = candidates[0]
    rcs = [f"{label} ({c[:12]})" for label, c in candidates[1:]]
    lines = [f"no full sweep measured commit {commit} ({tag})"
             + (f" or its release candidates {', '.join(rcs)}" if rcs else
                " and it has no release candidate tag")]  # fmt: skip
    lines.append(f"looked at {len(found)} evaluation(s); a sweep counts when it ran the full "
                 "lane and all its units ran at one of these commits")  # fmt: skip
    for s in found:
        ran = ", ".join(c[:12] for c in s.commits) or "none stamped"
        lines.append(f"  {s.source}: tier {s.tier or '-'}, commits {ran}")
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
        found.append(Sweep(str(card_path), tier, tuple(commits)))
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
        sweeps.append(Sweep(source, params.get("suite.tier"), tuple(commits)))
    return sweeps


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
