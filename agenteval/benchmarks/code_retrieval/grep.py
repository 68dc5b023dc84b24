"""The baseline search must beat: `git grep` for the code-looking identifiers of a query.

Identifiers are what a person would paste into grep: snake_case names, camelCase and
CamelCase names, dotted names (`sql_traces.execute_many`, searched whole and by part) and
anything in backticks. Each is searched as a fixed string in the same files the index holds,
at the same commit, and weighted by its rarity across them (idf: a name in one file says more
than one in every file). A file scores the sum of the weights of the identifiers it contains;
a definition scores the weights of those found on its own lines. Ties go to the path order.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from agenteval.benchmarks.code_retrieval.chunks import innermost, symbol_spans
from agenteval.benchmarks.code_retrieval.history import (
    HistoryError,
    Selection,
    blobs,
    decode,
    git,
    tree_files,
)

BACKTICKED = re.compile(r"`([^`\s]{2,})`")
DOTTED = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\b")
SNAKE = re.compile(r"\b_*[a-z0-9]+(?:_[a-z0-9]+)+\b")
CAMEL = re.compile(r"\b[a-z]+[A-Z][A-Za-z0-9]*\b|\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b")
MIN_LENGTH = 3
NO_MATCH = 1  # git grep's exit status when nothing matched (2 and up: it failed)


class GrepFailed(RuntimeError):
    """git grep itself failed on a query (not "no match"): the baseline's ranking of that
    query is unmeasured, never an empty ranking scored as a miss."""


def identifiers(query: str) -> list[str]:
    """The code-looking identifiers of a query, in order, each once."""
    found: list[str] = []
    for pattern in (BACKTICKED, DOTTED, SNAKE, CAMEL):
        for match in pattern.finditer(query):
            found.append(match.group(1) if pattern is BACKTICKED else match.group(0))
    for name in list(found):
        if "." in name:
            found += [part for part in name.split(".") if len(part) >= MIN_LENGTH]
    words = [w.strip(".()") for w in found]
    wanted = (w for w in words if len(w) >= MIN_LENGTH and re.search("[A-Za-z]", w))
    return list(dict.fromkeys(wanted))


def grep_rank(
    repo: Path, commit: str, selection: Selection, query: str
) -> tuple[list[str], list[str]]:
    """(files best first, definitions `path::name` best first) for the query's identifiers."""
    names = identifiers(query)
    if not names:
        return [], []
    total = len(tree_files(repo, commit, selection))
    hits: dict[str, dict[str, list[int]]] = {}  # name -> path -> lines
    for name in names:
        hits[name] = _grep(repo, commit, selection, name)
    weight = {n: math.log(1 + total / len(h)) for n, h in hits.items() if h}
    file_score: dict[str, float] = {}
    for name, per_file in hits.items():
        for path in per_file:
            file_score[path] = file_score.get(path, 0.0) + weight[name]
    files = sorted(file_score, key=lambda p: (-file_score[p], p))
    return files, _definitions(repo, commit, selection, hits, weight, files)


def _grep(repo: Path, commit: str, selection: Selection, name: str) -> dict[str, list[int]]:
    try:
        raw = git(repo, "grep", "-n", "-F", "-I", "-e", name, commit, "--", *selection.pathspecs())
    except HistoryError as exc:
        if exc.returncode == NO_MATCH:
            return {}
        raise GrepFailed(f"git grep failed: {str(exc).strip()}") from None
    out: dict[str, list[int]] = {}
    prefix = f"{commit}:"
    for line in raw.decode("utf-8", "replace").splitlines():
        rest = line[len(prefix) :] if line.startswith(prefix) else line
        path, number, _ = rest.split(":", 2)
        out.setdefault(path, []).append(int(number))
    return out


def _definitions(
    repo: Path,
    commit: str,
    selection: Selection,
    hits: dict[str, dict[str, list[int]]],
    weight: dict[str, float],
    files: list[str],
) -> list[str]:
    score: dict[str, float] = {}
    best = [p for p in files[:20] if p.endswith(".py")]  # grep ranks no further
    ids = tree_files(repo, commit, selection)
    for path, data in zip(best, blobs(repo, [ids[p] for p in best]), strict=True):
        spans = symbol_spans(decode(data))
        for name, per_file in hits.items():
            found = {s.name for line in per_file.get(path, []) if (s := innermost(spans, line))}
            for symbol in found:
                key = f"{path}::{symbol}"
                score[key] = score.get(key, 0.0) + weight[name]
    order = {p: i for i, p in enumerate(files)}
    return sorted(score, key=lambda k: (-score[k], order[k.split("::")[0]], k))
