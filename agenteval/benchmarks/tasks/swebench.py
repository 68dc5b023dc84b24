"""Suite `swebench`: SWE-bench Verified instances, built when the run starts, graded in Docker.

* Instances are read with the `datasets` library (SWE-bench/SWE-bench_Verified, split test)
  and cached as `<cache>/<instance_id>.json`; the cache holds the gold patch, so it lives
  outside every agent's copy and only the grading reads it.
* The agent gets the repository at `base_commit` with no path back to the fix: a bare cache
  per repository fetched *by commit* to a limited depth (never a branch that holds the fix), a
  single-branch `file://` clone of it (a plain path would make git ignore the depth and copy
  every object), detached, its branch and remote removed, and `git fsck --unreachable
  --no-reflogs` must find nothing.
* The agent's diff (new files included) becomes a row of `predictions.jsonl` in the official
  harness's format (instance_id, model_name_or_path, model_patch); an empty diff fails at once.
* Grading is `python -m swebench.harness.run_evaluation`, one instance at a time, in Docker;
  its per-instance report.json is read back: resolved, patch applied, FAIL_TO_PASS and
  PASS_TO_PASS counts.

Where the swebench package, a Docker daemon or the dataset cannot be reached, the suite is
refused before any work, naming what is missing. `datasets` and `swebench` are an optional
extra (`pip install -e '.[swebench]'`), imported only here and only when needed.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.benchmarks.tasks.sandbox import NO_SANDBOX, Sandbox
from agenteval.fileio import write_text

DATASET = "SWE-bench/SWE-bench_Verified"
SPLIT = "test"
PILOT = (
    "astropy__astropy-12907",
    "django__django-11099",
    "psf__requests-2317",
    "pallets__flask-5014",
    "sympy__sympy-20590",
)
FETCH_DEPTH = 200
PROMPT_PARAGRAPH = (
    "Work only in this checkout. Make the smallest change that resolves the issue above. Do not "
    "use the internet. The repository's test suite cannot be run here."
)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]+")


class SwebenchUnavailable(Exception):
    """The suite cannot run here; the message names everything that is missing."""


class CheckoutLeak(RuntimeError):
    """The checkout still reaches objects beyond its base commit."""


def _git(
    cwd: Path, *args: str, check: bool = True, sandbox: Sandbox = NO_SANDBOX
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        sandbox.wrap(["git", "-c", "advice.detachedHead=false", *args], cwd, writable=[cwd]),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.strip()[:500]}")
    return done


def docker_problem() -> str | None:
    try:
        done = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"a Docker daemon (docker info: {exc})"
    if done.returncode != 0:
        reason = (done.stderr or done.stdout).strip().splitlines()
        return f"a running Docker daemon (docker info: {reason[-1] if reason else 'failed'})"
    return None


def missing(ids: Sequence[str], cache: Path, grading: bool = True) -> list[str]:
    """Everything the suite needs that this machine lacks; [] when it can run."""
    found = []
    uncached = [i for i in ids if not (cache / f"{i}.json").is_file()]
    if uncached:
        if importlib.util.find_spec("datasets") is None:
            found.append("the datasets package (pip install -e '.[swebench]')")
        else:
            try:
                load_instances(uncached, cache)
            except Exception as exc:  # network, hub, or dataset errors alike
                found.append(f"the dataset {DATASET} ({type(exc).__name__}: {str(exc)[:200]})")
    if grading:
        if importlib.util.find_spec("swebench") is None:
            found.append("the swebench package (pip install -e '.[swebench]')")
        problem = docker_problem()
        if problem:
            found.append(problem)
    return found


def preflight(ids: Sequence[str], cache: Path, grading: bool = True) -> None:
    gaps = missing(ids, cache, grading)
    if gaps:
        raise SwebenchUnavailable("suite swebench cannot run here; missing: " + "; ".join(gaps))


def load_instances(ids: Sequence[str], cache: Path) -> list[dict[str, Any]]:
    """The instances `ids`, from the cache or the dataset (then cached)."""
    out: dict[str, dict[str, Any]] = {}
    wanted = []
    for instance_id in ids:
        path = cache / f"{instance_id}.json"
        if path.is_file():
            out[instance_id] = json.loads(path.read_text(encoding="utf-8"))
        else:
            wanted.append(instance_id)
    if wanted:
        from datasets import load_dataset

        rows = load_dataset(DATASET, split=SPLIT)
        for row in rows:
            if row["instance_id"] in wanted:
                record = dict(row)
                write_text(cache / f"{record['instance_id']}.json", json.dumps(record, indent=1))
                out[record["instance_id"]] = record
        absent = [i for i in wanted if i not in out]
        if absent:
            raise ValueError(f"not in {DATASET}: {', '.join(absent)}")
    return [out[i] for i in ids]


def prompt_for(instance: Mapping[str, Any]) -> str:
    return f"{str(instance['problem_statement']).strip()}\n\n{PROMPT_PARAGRAPH}"


def bare_path(cache_root: Path, repo_url: str) -> Path:
    """Where the bare cache of `repo_url` lives under `cache_root`."""
    return cache_root / "repos" / f"{_UNSAFE.sub('_', repo_url.rstrip('/').split('/')[-1])}.git"


def bare_cache(cache_root: Path, repo_url: str, base_commit: str) -> tuple[Path, str]:
    """A bare repository holding `base_commit` and its history to FETCH_DEPTH, and the
    branch name that points at it. Nothing after the base commit is ever fetched."""
    bare = bare_path(cache_root, repo_url)
    if not bare.is_dir():
        bare.parent.mkdir(parents=True, exist_ok=True)
        _git(bare.parent, "init", "-q", "--bare", bare.name)
    branch = f"base-{base_commit[:12]}"
    if _git(bare, "rev-parse", "--verify", "-q", f"refs/heads/{branch}", check=False).returncode:
        _git(bare, "fetch", "-q", "--no-tags", "--depth", str(FETCH_DEPTH), repo_url,
             f"{base_commit}:refs/heads/{branch}")  # fmt: skip
    return bare, branch


def checkout(cache_root: Path, repo_url: str, base_commit: str, dest: Path) -> Path:
    bare, branch = bare_cache(cache_root, repo_url, base_commit)
    dest.parent.mkdir(parents=True, exist_ok=True)
    _git(dest.parent, "clone", "-q", "--single-branch", "--no-tags", "--branch", branch,
         bare.resolve().as_uri(), dest.name)  # fmt: skip
    _git(dest, "checkout", "-q", "--detach")
    _git(dest, "branch", "-q", "-D", branch)
    _git(dest, "remote", "remove", "origin")
    _git(dest, "reflog", "expire", "--expire=now", "--all")
    verify_isolated(dest, base_commit)
    return dest


def verify_isolated(dest: Path, base_commit: str, forbidden: Iterable[str] = ()) -> None:
    head = _git(dest, "rev-parse", "HEAD").stdout.strip()
    if head != base_commit:
        raise CheckoutLeak(f"HEAD is {head}, not the base commit {base_commit}")
    dangling = _git(dest, "fsck", "--unreachable", "--no-reflogs").stdout.strip()
    if dangling:
        raise CheckoutLeak(f"git fsck finds unreachable objects: {dangling.splitlines()[:3]}")
    refs = _git(dest, "for-each-ref", "--format=%(refname)").stdout.split()
    if refs:
        raise CheckoutLeak(f"the checkout keeps refs that may lead elsewhere: {refs}")
    for sha in forbidden:
        if _git(dest, "cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode == 0:
            raise CheckoutLeak(f"commit {sha} is reachable from the checkout")


def diff_of(dest: Path, sandbox: Sandbox = NO_SANDBOX) -> str:
    """Every change against the base commit, new files included; in the attempt's sandbox
    (the agent could have planted a git hook, filter or fsmonitor in the checkout)."""
    _git(dest, "add", "-A", sandbox=sandbox)
    return _git(dest, "diff", "--cached", "--binary", "HEAD", sandbox=sandbox).stdout


def prediction(instance_id: str, model: str, patch: str) -> dict[str, str]:
    return {"instance_id": instance_id, "model_name_or_path": model, "model_patch": patch}


def write_predictions(path: Path, rows: Iterable[Mapping[str, str]]) -> None:
    write_text(path, "".join(json.dumps(dict(row), ensure_ascii=False) + "\n" for row in rows))


def evaluation_command(predictions: Path, run_id: str, instance_id: str) -> list[str]:
    return [
        sys.executable, "-m", "swebench.harness.run_evaluation",
        "--dataset_name", DATASET, "--split", SPLIT,
        "--predictions_path", str(predictions), "--instance_ids", instance_id,
        "--run_id", run_id, "--max_workers", "1",
    ]  # fmt: skip


@dataclass(frozen=True)
class InstanceVerdict:
    instance_id: str
    resolved: bool
    patch_applied: bool
    fail_to_pass: tuple[int, int]  # (passed, failed)
    pass_to_pass: tuple[int, int]


def report_path(logs: Path, run_id: str, model: str, instance_id: str) -> Path:
    return logs / "run_evaluation" / run_id / model.replace("/", "__") / instance_id / "report.json"


def parse_report(data: Mapping[str, Any], instance_id: str) -> InstanceVerdict:
    """One instance's verdict from the official harness's report.json."""
    entry = data.get(instance_id)
    if not isinstance(entry, Mapping):
        raise ValueError(f"the report has no entry for {instance_id}")
    status = entry.get("tests_status") or {}

    def counts(name: str) -> tuple[int, int]:
        block = status.get(name) or {}
        return len(block.get("success") or []), len(block.get("failure") or [])

    return InstanceVerdict(
        instance_id=instance_id,
        resolved=bool(entry.get("resolved")),
        patch_applied=bool(entry.get("patch_successfully_applied")),
        fail_to_pass=counts("FAIL_TO_PASS"),
        pass_to_pass=counts("PASS_TO_PASS"),
    )


def grade(
    predictions: Path, run_id: str, instance_id: str, model: str, workdir: Path
) -> InstanceVerdict:
    """Run the official harness on one instance (in Docker) and read its verdict back."""
    done = subprocess.run(
        evaluation_command(predictions, run_id, instance_id),
        cwd=workdir, capture_output=True, text=True, timeout=7200,
    )  # fmt: skip
    path = report_path(workdir / "logs", run_id, model, instance_id)
    if not path.is_file():
        tail = (done.stderr or done.stdout).strip()[-500:]
        raise RuntimeError(f"{instance_id}: the harness wrote no report ({tail})")
    return parse_report(json.loads(path.read_text(encoding="utf-8")), instance_id)
