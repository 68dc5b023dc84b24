"""Incremental re-indexing, damaged saved indexes and hostile trees, each with its condition.

Every case reports pass, fail or not-run (with the reason); a case that crashes fails the
run. Damaged index: a copy of a real saved index is damaged one way, then opened as it is
(it must refuse, naming the damage, or answer exactly as the clean index does: answering
otherwise is the one way to fail) and recovered (re-syncing against the tree must give the
clean index's answers back). Hostile trees: a hazard the machine cannot build (a link where
links are not allowed) is not-run, never passed.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agenteval.benchmarks.code_retrieval.history import Selection, WorkTree
from agenteval.benchmarks.code_retrieval.index import (
    MANIFEST,
    CodeIndex,
    IndexConfig,
    IndexDamaged,
    recover,
)
from agenteval.corpus.index_cache import KEY_FILE

Answers = list[list[tuple[str, float]]]
SNIFF_BYTES = 8192


def answers(index: CodeIndex, queries: Sequence[str], depth: int = 10) -> Answers:
    return [[(h.chunk.id, h.score) for h in index.search(q, depth)] for q in queries]


def chunk_keys(index: CodeIndex) -> set[tuple[str, int, int, str]]:
    return {(c.path, c.start, c.end, c.text) for c in index.all_chunks()}


def incremental(
    repo: Path, commits: Sequence[str], work: Path, config: IndexConfig, queries: Sequence[str]
) -> dict[str, Any]:
    """Replay commits oldest first, syncing after each; then compare with a fresh index of the
    last commit: the same chunks (none stale, none missing) and the same ranked scores."""
    tree = WorkTree(repo, work / "replay_tree", config.selection)
    index = CodeIndex(tree.folder, work / "replay_store", config)
    steps = []
    for commit in commits:
        changed = tree.move_to(commit)
        report = index.sync()
        steps.append(
            {"commit": commit[:12], "files_changed": len(changed),
             "rechunked": len(report.rechunked), "removed": len(report.removed)}
        )  # fmt: skip
    fresh_tree = WorkTree(repo, work / "fresh_tree", config.selection)
    fresh_tree.move_to(commits[-1])
    fresh = CodeIndex(fresh_tree.folder, work / "fresh_store", config)
    fresh.sync()
    mine, theirs = chunk_keys(index), chunk_keys(fresh)
    then, now = answers(index, queries), answers(fresh, queries)
    mismatched = sum(a != b for a, b in zip(then, now, strict=True))
    drift = bool(mine - theirs or theirs - mine or mismatched)
    return {"commits": len(commits), "stale_chunks": len(mine - theirs),
            "missing_chunks": len(theirs - mine), "queries_compared": len(queries),
            "score_mismatches": mismatched, "drift": drift, "steps": steps,
            "status": "fail" if drift else "pass"}  # fmt: skip


def _entry(store: Path, index: CodeIndex) -> Path:
    return index.cache.entry_path(sorted(index.files)[0])


def _rewrite_manifest(store: Path, change: Callable[[dict[str, Any]], None]) -> None:
    path = store / MANIFEST
    manifest = json.loads(path.read_text(encoding="utf-8"))
    change(manifest)
    path.write_text(json.dumps(manifest), encoding="utf-8")


def _drop_chunk(path: Path) -> None:
    record = json.loads(path.read_text(encoding="utf-8"))
    record["payload"]["chunks"].pop()
    path.write_text(json.dumps(record), encoding="utf-8")


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _old_schema(manifest: dict[str, Any]) -> None:
    manifest["schema"] = 1


def _other_ranker(manifest: dict[str, Any]) -> None:
    manifest["config"]["ranker"] = "another-embedder (dense, 384 dims)"


def damages(index: CodeIndex) -> dict[str, Callable[[Path], None]]:
    """Each way of damaging a saved index (applied to a copy of its store folder)."""
    garbage = random.Random(7).randbytes(512)

    def entry(store: Path) -> Path:
        return store / _entry(store, index).name

    return {
        "manifest truncated": lambda s: _truncate(s / MANIFEST),
        "manifest empty": lambda s: (s / MANIFEST).write_bytes(b""),
        "manifest garbage": lambda s: (s / MANIFEST).write_bytes(garbage),
        "manifest missing": lambda s: (s / MANIFEST).unlink(),
        "entry truncated": lambda s: _truncate(entry(s)),
        "entry empty": lambda s: entry(s).write_bytes(b""),
        "entry garbage": lambda s: entry(s).write_bytes(garbage),
        "entry missing": lambda s: entry(s).unlink(),
        "a chunk dropped": lambda s: _drop_chunk(entry(s)),
        "signing key missing": lambda s: (s / KEY_FILE).unlink(),
        "old schema": lambda s: _rewrite_manifest(s, _old_schema),
        "another embedder": lambda s: _rewrite_manifest(s, _other_ranker),
        "leftover temp files": _leftovers,
        "crash between two renames": _half_saved(index),
    }


def _leftovers(store: Path) -> None:
    (store / f".{MANIFEST}.k2j4.tmp").write_text('{"schema": 2, "files": {}, "chunks": 0')
    (store / ".0123abcd.json.x9.tmp").write_bytes(b"\x00partial")


def _half_saved(index: CodeIndex) -> Callable[[Path], None]:
    """A save of a changed file whose entry was renamed into place but whose manifest was
    not: the manifest still names the old bytes."""

    def damage(store: Path) -> None:
        path = sorted(index.files)[0]
        tree_file = index.tree / path
        edited = tree_file.read_bytes() + b"\n# edited after the last save\n"
        sibling = CodeIndex(index.tree, store, index.config)
        sibling.cache.store(path, _digest(edited), [{"start": 1, "end": 1, "symbol": None,
                                                     "symbols": [], "text": "edited"}])  # fmt: skip

    return damage


def _digest(data: bytes) -> str:
    from agenteval.fileio import sha256_bytes

    return sha256_bytes(data)


def damaged_index_cases(
    index: CodeIndex,
    work: Path,
    queries: Sequence[str],
    cases: dict[str, Callable[[Path], None]] | None = None,
) -> list[dict[str, Any]]:
    clean = answers(index, queries)
    out = []
    for case, damage in (damages(index) if cases is None else cases).items():
        store = work / "damaged" / case.replace(" ", "_")
        shutil.rmtree(store, ignore_errors=True)
        shutil.copytree(index.store, store)
        damage(store)
        try:
            opened = CodeIndex.open(index.tree, store, index.config)
            served = answers(opened, queries)
            outcome, same = "answered", served == clean
        except IndexDamaged as exc:
            outcome, same = f"refused: {exc}"[:160], True
        recovered, why = recover(index.tree, store, index.config)
        back = answers(recovered, queries) == clean
        ok = same and back
        out.append({"case": case, "kind": "damaged index", "status": "pass" if ok else "fail",
                    "condition": "refuses naming the damage, or answers as the clean index; "
                    "re-syncing recovers the clean answers",
                    "opened": outcome, "same_answers": same, "recovers": back,
                    "rebuilt_because": why})  # fmt: skip
    return out


def _hazards(tree: Path, outside: Path) -> dict[str, Callable[[], None]]:
    def binary() -> None:
        (tree / "blob.py").write_bytes(bytes(range(256)) * 8)

    def late_nul() -> None:
        body = b"def late_nul_marker():\n    return 'zebra_quartz'\n" + b"#" * SNIFF_BYTES
        (tree / "late_nul.py").write_bytes(body + b"\0tail = 1\n")

    def oversized() -> None:
        (tree / "huge.py").write_text("big_table = [\n" + "    'hippogriff',\n" * 90_000 + "]\n")

    def latin1() -> None:
        text = "def caf\u00e9_menu():\n    return 'cr\u00e8me br\u00fbl\u00e9e'\n"
        (tree / "legacy.py").write_bytes(text.encode("latin-1"))

    def link_out() -> None:
        (outside / "secret.py").write_text("def exfiltrated_marker():\n    pass\n")
        os.symlink(outside / "secret.py", tree / "secret.py")

    def loop() -> None:
        os.symlink("..", tree / "pkg" / "loop", target_is_directory=True)

    def dangling() -> None:
        os.symlink(tree / "missing_target.py", tree / "gone.py")

    return {"binary file with a code extension": binary, "a NUL past the binary sniff": late_nul,
            "oversized file": oversized, "Latin-1 text": latin1,
            "link out of the repository": link_out, "directory loop": loop,
            "dangling link": dangling}  # fmt: skip


def _hazard_checks(index: CodeIndex, skipped: dict[str, str]) -> dict[str, tuple[bool, str]]:
    def found(query: str) -> list[str]:
        return [h.chunk.path for h in index.search(query, 5)]

    paths = [c.path for c in index.all_chunks()]
    texts = " ".join(c.text for c in index.all_chunks())
    return {
        "binary file with a code extension": ("blob.py" in skipped and "blob.py" not in paths,
                                              skipped.get("blob.py", "indexed")),
        "a NUL past the binary sniff": ("late_nul.py" not in paths and "\0" not in texts,
                                        skipped.get("late_nul.py", "indexed")),
        "oversized file": ("huge.py" in skipped, skipped.get("huge.py", "indexed")),
        "Latin-1 text": (found("crème brûlée café_menu")[:1] == ["legacy.py"],
                         "found by its Latin-1 words" if "legacy.py" in paths else "not indexed"),
        "link out of the repository": ("exfiltrated_marker" not in texts,
                                       skipped.get("secret.py", "indexed")),
        "directory loop": (not any(p.startswith("pkg/loop/") for p in index.files)
                           and list(index.files).count("pkg/core.py") == 1,
                           "the walk ended without entering the link"),
        "dangling link": ("gone.py" in skipped, skipped.get("gone.py", "indexed")),
    }  # fmt: skip


def hostile_tree_cases(work: Path, max_bytes: int) -> list[dict[str, Any]]:
    tree, outside = work / "hostile", work / "outside"
    for folder in (tree, outside):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    (tree / "pkg").mkdir()
    (tree / "pkg" / "core.py").write_text("def ordinary_function():\n    return 42\n")
    built: dict[str, str | None] = {}  # hazard -> None (built) or why it could not be
    for name, build in _hazards(tree, outside).items():
        try:
            build()
            built[name] = None
        except OSError as exc:  # e.g. links on a system that does not allow them
            built[name] = f"cannot build here: {exc.strerror or exc}"
    config = IndexConfig(Selection((".py",)), max_bytes=max_bytes)
    index = CodeIndex(tree, work / "hostile_store", config)
    report = index.sync()
    checks = _hazard_checks(index, report.skipped)
    core = [h.chunk.path for h in index.search("ordinary function", 3)][:1] == ["pkg/core.py"]
    out: list[dict[str, Any]] = []
    for name, why_not in built.items():
        if why_not is not None:
            out.append({"case": name, "kind": "hostile tree", "status": "not-run",
                        "reason": why_not})  # fmt: skip
            continue
        ok, detail = checks[name]
        status = "pass" if ok and core else "fail"
        out.append({"case": name, "kind": "hostile tree", "status": status, "detail": detail,
                    "ordinary_file_found": core})  # fmt: skip
    return out
