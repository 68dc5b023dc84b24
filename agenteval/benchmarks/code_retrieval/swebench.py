"""SWE-bench Verified as queries, where the `datasets` library can reach it.

The problem statement is the query; the files the gold patch modifies (not the ones it
creates) are the relevance. Reaching the dataset needs the `swebench` extra and the network;
without either the source is refused with the reason, never replaced by something else.
Scoring these instances also needs each repository at its base commit, fetched from
`repo_url` (a template on the instance's `repo`); without network neither can be had.
"""

from __future__ import annotations

import re
from typing import Any

DATASET = "SWE-bench/SWE-bench_Verified"
EXTRA = 'pip install -e ".[swebench]"'
PATCHED = re.compile(r"^diff --git a/(\S+) b/(\S+)\n(?:(?!diff --git).*\n)*?--- (\S+)", re.M)


class SourceRefused(Exception):
    """The source cannot be used here; the message says why."""


def modified_files(patch: str) -> list[str]:
    """Files a unified diff modifies (not those it creates: their `---` side is /dev/null)."""
    out = []
    for match in PATCHED.finditer(patch):
        if match.group(3) != "/dev/null" and match.group(1) == match.group(2):
            out.append(match.group(1))
    return list(dict.fromkeys(out))


def load_instances(instances: list[str]) -> list[dict[str, Any]]:
    try:
        import datasets
    except ImportError:
        raise SourceRefused(f"the datasets library is not installed ({EXTRA})") from None
    try:
        rows = datasets.load_dataset(DATASET, split="test")
    except Exception as exc:  # the library raises many kinds (network, hub, cache)
        raise SourceRefused(f"{DATASET} cannot be reached: {type(exc).__name__}: {exc}") from None
    wanted = set(instances)
    found = [dict(r) for r in rows if not wanted or r["instance_id"] in wanted]
    missing = sorted(wanted - {r["instance_id"] for r in found})
    if missing:
        raise SourceRefused(f"instances not in {DATASET}: {missing}")
    return found


def as_query(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["instance_id"], "repo": row["repo"], "base": row["base_commit"],
            "query": row["problem_statement"], "files": modified_files(row["patch"])}  # fmt: skip


def status(enabled: bool, instances: list[str]) -> dict[str, Any]:
    """What became of the SWE-bench source in this run."""
    if not enabled:
        return {"status": "not-run", "reason": "code_retrieval.swebench.enabled is false"}
    try:
        rows = load_instances(instances)
    except SourceRefused as exc:
        return {"status": "refused", "reason": str(exc)}
    return {
        "status": "refused",
        "reason": f"{len(rows)} instance(s) loaded, but their repositories at base commit must "
        "be fetched over the network, which this run does not do",
        "instances": [as_query(r)["id"] for r in rows],
    }
