"""The corpus fence: an agent's tools read the suite's documents and nothing else.

Every evaluation is only as honest as what the agent under test can read. Its tools resolve a
path only inside the corpus roots: the library folders the target declares (`target.library`),
the folders the manifest's documents live in, and the fetched corpus (`data/corpora`). Inside
them the answer-key files are refused too (the manifest, which holds every fact's answer, and
a benchmark's task or question file). Anything else that exists, named by a relative path, an
absolute one, `..` or a symlink that resolves out, is refused with `Fenced`, and the tools
record the call as fenced: the transcript, the scorecard and the summary count the attempts.

A root that would hold, or lies inside, what the fence protects (`layout.ANSWER_BEARING`: the
scenarios, every benchmark's questions and labels, run results, reports, the climb's ledger,
`.git/`, `.dvc/`, `mlflow.db`, and wherever a setting moved a store: `layout.moved_stores`;
the fetched corpus `data/corpora` excepted) is refused when the
target is built, naming the setting, so no configuration can open the key to the agent. Each
call resolves its path afresh (a file swapped for a symlink after a first read is resolved
again), and a file that is a hard link to a protected file is refused like the file itself.
What is read is what was checked: `Fence.opened` opens the checked path one folder at a time
from `/`, none of them followed if it is a symlink (O_NOFOLLOW), so a path swapped for a
symlink between the check and the read fails to open instead of reading where it now points;
the file opened is then checked by its own inode (a regular file, no hard link to a key).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import stat as stat_kind
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from agenteval.corpus.pins import EXTERNAL_DIR, documents, rebased, sub_manifests
from agenteval.layout import ANSWER_BEARING, READABLE_INSIDE, moved_stores
from agenteval.schema.corpus import Manifest

DEFAULT_LIBRARY = ("eval/corpus/documents",)
DEFAULT_MANIFEST = "eval/corpus/manifest.json"
DEFAULT_SCENARIOS = "eval/scenarios"
# What a corpus root may never contain nor lie in: one list, `layout.ANSWER_BEARING`.
PROTECTED = ANSWER_BEARING
# Params naming a benchmark's own answer file, refused even where it lies beside documents
# (GAIA ships attachments next to metadata.jsonl).
KEY_FILES = (("qa", "tasks"), ("retrieval", "questions"))


# The kernel stamps an inode's ctime from a coarse clock, so a link made just after a walk
# began may carry a ctime a little before it: within this margin the walk is not trusted.
CTIME_MARGIN_NS = 2_000_000_000
# What makes a folder a run's records (layout.Layout.run_dir's suite): refused inside a library.
RUN_MARKER = Path("data") / "suite.json"


@dataclass
class KeyWalk:
    """The protected files' inodes as the last walk saw them, and when that walk began
    (none yet: every file is newer than that, so the first question walks)."""

    inodes: frozenset[tuple[int, int]] = frozenset()
    began_ns: int = -(2**62)


class Fenced(Exception):
    """A read outside the corpus roots (or of an answer-key file): refused and recorded."""


class FenceError(ValueError):
    """A corpus root that would expose what the fence protects; names the setting."""


@dataclass(frozen=True)
class Fence:
    """Resolved corpus roots, the answer-key files refused inside them, and the protected
    paths refused wherever a root would reach them (`READABLE_INSIDE` excepted)."""

    root: Path
    roots: tuple[Path, ...]
    keys: frozenset[Path]
    protected: tuple[Path, ...] = ()
    readable_inside: tuple[Path, ...] = ()

    def admits(self, resolved: Path) -> bool:
        """Whether a resolved path lies inside a corpus root, is not an answer-key file and is
        not at or inside a protected path."""
        # By string prefix: every tool call asks, and Path.is_relative_to costs microseconds.
        # A root itself is admitted too: naming the library folder is no attempt at the key.
        text = str(resolved)
        inside = text.startswith(self._prefixes) or resolved in self.roots
        if not inside or resolved in self.keys:
            return False
        guarded = resolved in self.protected or text.startswith(self._guarded)
        if guarded and not text.startswith(self._readable):
            return False
        return not self.in_run_folder(resolved)

    def in_run_folder(self, resolved: Path) -> bool:
        """Whether a folder between `resolved` and its corpus root holds a run's records
        (`data/suite.json`, the answers: layout.Layout.run_dir), as a run folder an earlier
        `--out` left in the library does. Asked afresh at every admission, as paths are."""
        if resolved in self.roots:
            return False
        for folder in resolved.parents:
            if folder in self.roots or str(folder) == folder.anchor:
                return False
            if os.path.lexists(folder / RUN_MARKER):
                return True
        return False

    @functools.cached_property
    def _prefixes(self) -> tuple[str, ...]:
        return tuple(f"{root}{os.sep}" for root in self.roots)

    @functools.cached_property
    def _guarded(self) -> tuple[str, ...]:
        return tuple(f"{path}{os.sep}" for path in self.protected)

    @functools.cached_property
    def _readable(self) -> tuple[str, ...]:
        return tuple(f"{path}{os.sep}" for path in self.readable_inside)

    def links_protected(self, stat: os.stat_result) -> bool:
        """Whether a file with more than one name is also a protected file (a hard link to
        the key): the answer-key files (the manifest, a benchmark's question file, which may
        lie outside every protected folder) and the protected folders. Their inodes come
        from one walk, made again whenever the file asked about was named, renamed or
        linked since shortly before that walk began (linking changes an inode's ctime), so
        a link made after the walk is never judged by an older one."""
        if stat.st_nlink < 2:
            return False
        walk = self._key_walk
        if stat.st_ctime_ns >= walk.began_ns - CTIME_MARGIN_NS:
            walk.began_ns = time.time_ns()
            walk.inodes = self._key_inodes()
        return (stat.st_dev, stat.st_ino) in walk.inodes

    @functools.cached_property
    def _key_walk(self) -> KeyWalk:
        return KeyWalk()

    def _key_inodes(self) -> frozenset[tuple[int, int]]:
        found = set()
        for path in (*self.keys, *self.protected):
            for entry in _files(path):
                if entry.path.startswith(self._readable):
                    continue  # the fetched corpus: documents, not keys
                try:
                    other = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                found.add((other.st_dev, other.st_ino))
        return frozenset(found)

    @contextlib.contextmanager
    def opened(self, resolved: Path, shown: str) -> Iterator[tuple[IO[bytes], os.stat_result]]:
        """The admitted file at `resolved` (a path `admits` checked), open for reading with
        its status; Fenced when the path now leads elsewhere (a symlink swapped in after the
        check), is no regular file, or is a hard link to a protected file."""
        if not self.admits(resolved):
            raise Fenced(self.refusal(shown))
        try:
            fd = open_no_symlinks(resolved)
        except OSError as exc:  # ELOOP / ENOTDIR: a symlink where the check saw none
            raise Fenced(f"{self.refusal(shown)} ({type(exc).__name__}: the path changed)") from exc
        with os.fdopen(fd, "rb") as handle:
            found = os.fstat(handle.fileno())
            if not stat_kind.S_ISREG(found.st_mode) or self.links_protected(found):
                raise Fenced(self.refusal(shown))
            yield handle, found

    def shown(self) -> list[str]:
        """The roots as repository-relative names, for messages and identities."""
        return [_relative(r, self.root) for r in self.roots]

    def refusal(self, path: str) -> str:
        readable = ", ".join(self.shown()) or "none"
        return f"access denied: {path} is outside the corpus (readable folders: {readable})"

    def outside(self, path: str) -> bool:
        """Whether `path` (absolute or repository-relative) names an existing file or folder
        the fence refuses: how a step an external agent reports is checked, and what the
        MCP target asks before it hands a path over. A file inside a root that is also a
        protected file (a hard link to the key) is refused, as `opened` refuses it."""
        try:
            candidate = Path(path)
            resolved = (candidate if candidate.is_absolute() else self.root / candidate).resolve()
            if not self.admits(resolved):
                return resolved.exists() or resolved in self.keys
            found = resolved.stat()
        except (OSError, ValueError, RuntimeError):
            return False
        return stat_kind.S_ISREG(found.st_mode) and self.links_protected(found)


def open_no_symlinks(path: Path) -> int:
    """A descriptor of the file at absolute `path`, reached one component at a time with
    O_NOFOLLOW: no symlink anywhere on the way is followed (OSError instead). Non-blocking,
    so a FIFO put in a file's place cannot hang the reader (the caller checks the kind)."""
    parts = path.parts
    folder = os.open(parts[0], os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[1:-1]:
            inner = os.open(part, _DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            os.close(folder)
            folder = inner
        return os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    finally:
        os.close(folder)


_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY


def build_fence(
    root: Path,
    folders: Iterable[tuple[str, str]],
    keys: Iterable[str] = (),
    protected: Iterable[str] = PROTECTED,
) -> Fence:
    """A fence over `folders` ((path, where it was declared) pairs, repository-relative);
    a folder resolving outside the repository or holding a protected path is a FenceError."""
    base = root.resolve()
    protected = list(protected)
    guarded = [(base / p).resolve() for p in protected]
    readable = _readable_inside(base)
    roots: list[Path] = []
    for folder, setting in folders:
        resolved = (base / folder).resolve()
        if not resolved.is_relative_to(base):
            raise FenceError(f"{setting}: {folder!r} resolves outside the repository")
        within = [
            g for g in guarded
            if resolved.is_relative_to(g) and not any(resolved.is_relative_to(r) for r in readable)
        ]  # fmt: skip
        if within:
            raise FenceError(
                f"{setting}: {folder!r} is or lies inside {_relative(within[0], base)}, which "
                "holds answers or results; name the document folders instead"
            )
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
    return Fence(
        base,
        tuple(outer),
        frozenset((base / k).resolve() for k in keys),
        tuple(guarded),
        tuple(readable),
    )


def _readable_inside(base: Path) -> list[Path]:
    """READABLE_INSIDE, resolved, each only where it is named: an entry reached through a
    symlink (data/corpora made a link to data/transcripts, or into eval/scenarios) is no
    exception, since it could lead anywhere in the folder that protects it; a root there is
    then refused like any other."""
    real_base = base.resolve()
    return [real_base / name for name in READABLE_INSIDE
            if (base / name).resolve() == real_base / name]  # fmt: skip


def _files(path: Path) -> list[os.DirEntry[str]]:
    """Every file under `path` (or the file itself). A symlinked folder inside is walked
    too, once: what a protected folder links to is reachable through it, so a hard link to
    a file there is a way in (each folder is walked once, so a symlink loop ends)."""
    if not path.is_dir():
        return [e for e in os.scandir(path.parent) if e.name == path.name] if path.exists() else []
    found: list[os.DirEntry[str]] = []
    stack, seen = [path], set()
    while stack:
        folder = stack.pop()
        try:
            key = (folder.stat().st_dev, folder.stat().st_ino)
            if key in seen:
                continue
            seen.add(key)
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=True):
                stack.append(Path(entry.path))
            else:
                found.append(entry)
    return found


def corpus_fence(params: Mapping[str, Any], root: Path, run_dirs: Iterable[Path] = ()) -> Fence:
    """The fence of a run: params' library, the manifest's document folders, data/corpora;
    `run_dirs` (a run's own folder) protected as ANSWER_BEARING is."""
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
    # A store a setting moved (run.cache_dir, tracking.uri, sessions.out) keeps its guard.
    protected += [str(p) for p in moved_stores(params, root)]
    protected += [os.path.abspath(root / p) for p in run_dirs]
    folders += _corpus_home(root, manifest, protected)
    return build_fence(root, folders, keys, list(dict.fromkeys(protected)))


def refuse_run_dir(params: Mapping[str, Any], root: Path, out: Path, option: str) -> None:
    """A run folder holds its answers (data/suite.json, the judged transcripts): one at,
    inside or around the agent's library would let this run's or a later run's agent read
    them. A FenceError naming `option`, before any work (a library the fence refuses on its
    own is the run's own refusal, not this one)."""
    try:
        corpus_fence(params, root)
    except FenceError:
        return
    try:
        corpus_fence(params, root, [out])
    except FenceError as exc:
        raise FenceError(f"{option} {out}: a run folder holds answers; {exc}") from exc


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
