"""The corpus fence: an agent's tools read the suite's documents and nothing else.

Every evaluation is only as honest as what the agent under test can read. Its tools resolve a
path only inside the corpus roots: the library folders the target declares (`target.library`),
the folders the manifest's documents live in, and the fetched corpus (`data/corpora`). Inside
them the answer-key files are refused too (the manifest, which holds every fact's answer, and
a benchmark's task or question file). Anything else that exists, named by a relative path, an
absolute one, `..` or a symlink that resolves out, is refused with `Fenced`, and the tools
record the call as fenced: the transcript, the scorecard and the summary count the attempts.

A root that would hold what the fence protects (the repository itself, `data/`, `eval/`, the
scenarios, run results, reports, the climb's ledger, `.dvc/`, `mlflow.db`) is refused when the
target is built, naming the setting, so no configuration can open the key to the agent.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.corpus.pins import EXTERNAL_DIR, documents, rebased, sub_manifests
from agenteval.schema.corpus import Manifest

DEFAULT_LIBRARY = ("eval/corpus/documents",)
DEFAULT_MANIFEST = "eval/corpus/manifest.json"
DEFAULT_SCENARIOS = "eval/scenarios"
# What a corpus root may never contain: the resolved suite (every ground truth), the
# measurements and their history, the version-control and DVC state, the tracking store.
PROTECTED = (
    "data/suite.json",
    "data/transcripts",
    "data/verdicts",
    "data/controls",
    "reports",
    "runs",
    ".dvc",
    ".git",
    "mlflow.db",
    "eval/judge_controls",
    "eval/climb",  # the held ledger (climb.ledger.LEDGER) and the guard's labelled edits
)
# Params naming a benchmark's own answer file, refused even where it lies beside documents
# (GAIA ships attachments next to metadata.jsonl).
KEY_FILES = (("qa", "tasks"), ("retrieval", "questions"))


class Fenced(Exception):
    """A read outside the corpus roots (or of an answer-key file): refused and recorded."""


class FenceError(ValueError):
    """A corpus root that would expose what the fence protects; names the setting."""


@dataclass(frozen=True)
class Fence:
    """Resolved corpus roots and the answer-key files refused inside them."""

    root: Path
    roots: tuple[Path, ...]
    keys: frozenset[Path]

    def admits(self, resolved: Path) -> bool:
        """Whether a resolved path lies inside a corpus root and is not an answer-key file."""
        # By string prefix: every tool call asks, and Path.is_relative_to costs microseconds.
        # A root itself is admitted too: naming the library folder is no attempt at the key.
        text = str(resolved)
        inside = text.startswith(self._prefixes) or resolved in self.roots
        return inside and resolved not in self.keys

    @functools.cached_property
    def _prefixes(self) -> tuple[str, ...]:
        return tuple(f"{root}{os.sep}" for root in self.roots)

    def shown(self) -> list[str]:
        """The roots as repository-relative names, for messages and identities."""
        return [_relative(r, self.root) for r in self.roots]

    def refusal(self, path: str) -> str:
        readable = ", ".join(self.shown()) or "none"
        return f"access denied: {path} is outside the corpus (readable folders: {readable})"

    def outside(self, path: str) -> bool:
        """Whether `path` (absolute or repository-relative) names an existing file or folder
        the fence refuses: how a step an external agent reports is checked."""
        try:
            candidate = Path(path)
            resolved = (candidate if candidate.is_absolute() else self.root / candidate).resolve()
            return not self.admits(resolved) and (resolved.exists() or resolved in self.keys)
        except (OSError, ValueError, RuntimeError):
            return False


def build_fence(
    root: Path,
    folders: Iterable[tuple[str, str]],
    keys: Iterable[str] = (),
    protected: Iterable[str] = PROTECTED,
) -> Fence:
    """A fence over `folders` ((path, where it was declared) pairs, repository-relative);
    a folder resolving outside the repository or holding a protected path is a FenceError."""
    base = root.resolve()
    guarded = [(base / p).resolve() for p in protected]
    roots: list[Path] = []
    for folder, setting in folders:
        resolved = (base / folder).resolve()
        if not resolved.is_relative_to(base):
            raise FenceError(f"{setting}: {folder!r} resolves outside the repository")
        exposed = [_relative(g, base) for g in guarded if g.is_relative_to(resolved)]
        if exposed:
            raise FenceError(
                f"{setting}: {folder!r} would let the agent read {', '.join(exposed)}; "
                "name the document folders instead"
            )
        roots.append(resolved)
    # A root inside another adds nothing: keep the outermost, in the order declared.
    outer = [
        r for r in dict.fromkeys(roots) if not any(r != o and r.is_relative_to(o) for o in roots)
    ]
    return Fence(base, tuple(outer), frozenset((base / k).resolve() for k in keys))


def corpus_fence(params: Mapping[str, Any], root: Path) -> Fence:
    """The fence of a run: params' library, the manifest's document folders, data/corpora."""
    suite = params.get("suite") or {}
    target = params.get("target") or {}
    library = [str(f) for f in target.get("library") or DEFAULT_LIBRARY]
    manifest = str(suite.get("manifest") or DEFAULT_MANIFEST)
    folders = [(f, "target.library") for f in library]
    folders += [(f, f"document folder of {manifest}") for f in manifest_folders(root, manifest)]
    folders.append((str(EXTERNAL_DIR), "the fetched corpus"))
    subs = [_relative(p.resolve(), root.resolve()) for p in sub_manifests(root / manifest)]
    keys = [manifest, *subs]
    keys += [str(v) for s, k in KEY_FILES if (v := (params.get(s) or {}).get(k))]
    scenarios = suite.get("scenarios") or DEFAULT_SCENARIOS
    protected = [str(p) for p in (*PROTECTED, *([scenarios] if isinstance(scenarios, str)
                                                  else scenarios))]  # fmt: skip
    folders += _corpus_home(root, manifest, protected)
    return build_fence(root, folders, keys, protected)


def _corpus_home(root: Path, manifest: str, protected: list[str]) -> list[tuple[str, str]]:
    """The manifest's own folder (eval/corpus by default) as a root, when it is a corpus
    folder: scenarios may name a document there that no manifest lists (the reference format
    allows it). Not when it is the repository itself or holds what the fence protects; its
    manifests stay refused as keys either way."""
    home = _relative((root / manifest).parent.resolve(), root.resolve())
    if home in (".", ""):
        return []
    try:
        build_fence(root, [(home, "")], (), protected)
    except FenceError:
        return []
    return [(home, f"the folder of {manifest}")]


def manifest_folders(root: Path, manifest: str) -> list[str]:
    """Folders holding the manifest's documents and those of its sub-folder manifests."""
    main, base = root / manifest, root.resolve()
    found: set[str] = set()
    for path in [main, *sub_manifests(main)]:
        loaded = _manifest(path)
        if loaded is not None and path != main:  # its documents live beside it
            loaded = rebased(loaded, _relative(path.parent.resolve(), base))
        for _key, _i, _doc, rel in documents(loaded) if loaded else []:
            found.add(_relative((root / rel).parent.resolve(), base))
    return sorted(found)


def _manifest(path: Path) -> Manifest | None:
    """The manifest, or None when it is absent or invalid (`agenteval validate` says why)."""
    try:
        return Manifest.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def _relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
