"""Small file helpers: canonical digests, atomic writes (temp file + rename), and a journal
that makes many such writes durable with one fsync per batch (`GroupCommitWriter`)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import orjson
from pydantic import BaseModel


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: equal values give equal bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def digest_of(value: Any) -> str:
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True)
    return sha256_text(canonical_json(value))


def write_atomic(path: Path, data: str | bytes, *, durable: bool = True) -> None:
    """Write via a temp file in the same directory and rename, so readers never see halves.

    `durable=False` skips the fsync: the file survives the process being killed (the page
    cache outlives it) but not a power cut; GroupCommitWriter's journal covers that case.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class _Scrub(Protocol):
    def scrub(self, obj: Any) -> Any: ...

    def scrub_text(self, text: str) -> str: ...


_scrubber: _Scrub | None = None


def install_scrubber(scrubber: _Scrub | None) -> None:
    """Route every file this process writes through `scrubber` (known and shaped secrets)."""
    global _scrubber
    _scrubber = scrubber


def write_text(path: Path, text: str) -> None:
    write_atomic(path, _scrubber.scrub_text(text) if _scrubber else text)


def json_text(value: Any) -> str:
    """What write_json writes: the scrubbed value as JSON indented by two spaces, UTF-8 as
    is. NaN and the infinities, which JSON cannot hold, are written as null (as pydantic
    does for models); numbers are written in their shortest round-trip form."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True)
    if _scrubber is not None:
        value = _scrubber.scrub(value)
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE).decode()
    except TypeError:  # keys that are not strings, integers beyond 64 bits, other types
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def write_json(path: Path, value: Any) -> None:
    write_atomic(path, json_text(value))


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


PACKAGE_DIR = Path(__file__).resolve().parent
PACKAGE = PACKAGE_DIR.name


def _module_file(name: str, package_dir: Path) -> Path | None:
    """The source file of module `name` (dotted, starting with the package name), if any."""
    parts = name.split(".")[1:]
    base = package_dir.joinpath(*parts)
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    file = base.with_suffix(".py")
    return file if parts and file.is_file() else None


def _import_statements(tree: Any) -> Iterator[Any]:
    """Every import statement in `tree`: statements and their bodies are searched (imports
    are statements), expressions never, which is most of a module's nodes."""
    import ast

    todo = [tree]
    while todo:
        for child in ast.iter_child_nodes(todo.pop()):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child
            elif isinstance(child, ast.stmt | ast.excepthandler | ast.match_case):
                todo.append(child)


def _imported(name: str, file: Path, package_dir: Path) -> set[str]:
    """Project modules that `file` imports anywhere (module level or inside functions).

    `from P import x` counts the module P.x when x is a module, else P itself: the package
    is then only the path to the code that defines the name.
    """
    import ast

    package = name if file.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _import_statements(ast.parse(file.read_bytes(), str(file))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if _module_file(sub, package_dir) else base)
    root = package_dir.name
    return {
        m for m in found if (m == root or m.startswith(root + ".")) and _module_file(m, package_dir)
    }


def code_identity(module: str, package_dir: Path = PACKAGE_DIR) -> dict[str, str]:
    """sha256 of every source file `module` is built from: the module itself and, transitively,
    every project module it imports. Keyed by the file's path inside the package.

    This is the code part of a participant's identity: a stored transcript or verdict is
    reused, and two runs compare, only when the code that produced them is the same, while an
    edit elsewhere (another agent, the report) leaves them valid.
    """
    seen: dict[str, Path] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        file = _module_file(name, package_dir)
        if name in seen or file is None:
            continue
        seen[name] = file
        todo.extend(_imported(name, file, package_dir) - set(seen))
    return {
        file.relative_to(package_dir).as_posix(): sha256_file(file)
        for file in sorted(seen.values())
    }


# 16 hex digits (64 bits) per file name a change unambiguously and keep provenance short.
CODE_SHA_CHARS = 16


@functools.cache
def _code_of(module: str) -> tuple[tuple[str, str], ...]:
    return tuple((path, sha[:CODE_SHA_CHARS]) for path, sha in code_identity(module).items())


def code_of(module: str) -> dict[str, str]:
    """{file: short sha256} of the installed package's files `module` is built from; part of
    a participant's configuration digest and details, so a difference names the file."""
    return dict(_code_of(module))


class GroupCommitWriter:
    """Atomic JSON files made durable in groups through an append-only journal.

    `await writer.write(path, value)` returns once the file is in place and its content is
    in the journal on disk. Writes that arrive together (within `max_delay_s`, up to
    `max_batch`) are handled in one worker-thread call: their lines are appended to the
    journal, which is fsynced once, and only then is each file written atomically without
    its own fsync. So a kill -9 at any point leaves every finished file whole (or restorable),
    a power cut loses no file whose write returned, and a run pays one fsync per batch
    instead of one per file. `recover()` replays a journal left by a crash (run it before
    reading the files); `close()` flushes, syncs the file system once and removes the
    journal.
    """

    def __init__(self, journal: Path, *, max_batch: int = 64, max_delay_s: float = 0.02) -> None:
        self.journal = journal
        self.max_batch, self.max_delay_s = max(1, max_batch), max_delay_s
        self.commits = 0  # fsyncs of the journal, for tests and benchmarks
        self._queue: asyncio.Queue[tuple[Path, str, asyncio.Future[None]] | None] | None = None
        self._task: asyncio.Task[None] | None = None

    def recover(self) -> int:
        """Rewrite (durably) every journaled file that is missing or differs; returns how many."""
        restored = 0
        for path, text in self._entries():
            try:
                if path.read_text(encoding="utf-8") == text:
                    continue
            except (OSError, UnicodeDecodeError):
                pass
            write_atomic(path, text)
            restored += 1
        self.journal.unlink(missing_ok=True)
        return restored

    def _entries(self) -> Iterator[tuple[Path, str]]:
        """Complete lines of the journal, in order; a torn last line (a crash while
        appending) is skipped: its file was never reported written."""
        try:
            handle = self.journal.open(encoding="utf-8")
        except FileNotFoundError:
            return
        base = self.journal.parent.resolve()
        with handle:
            for line in handle:
                try:
                    entry = json.loads(line)
                    path, text = (base / entry["path"]).resolve(), entry["text"]
                except (ValueError, KeyError, TypeError):
                    continue
                if isinstance(text, str) and path.is_relative_to(base):  # never outside it
                    yield path, text

    async def write(self, path: Path, value: Any) -> str:
        # Serialized here, on the caller's thread: the worker thread then only appends,
        # fsyncs and renames (the GIL released), instead of contending for the GIL with the
        # event loop while it encodes.
        text = json_text(value)
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._task = asyncio.create_task(self._run(self._queue))
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        await self._queue.put((path, text, done))
        assert self._task is not None
        # Waited on beside the committing task: once that task has ended (cancelled while the
        # run shuts down, after a full disk say), nothing would ever settle `done`, and a
        # caller that had swallowed its own cancel waited here forever (asyncio.run hung).
        try:
            await asyncio.wait((done, self._task), return_when=asyncio.FIRST_COMPLETED)
            if not done.done():  # the run is being cancelled: so is this write
                raise asyncio.CancelledError
        except asyncio.CancelledError:
            done.cancel()
            raise
        await done
        return text  # as committed: what a reader of the file will parse

    async def close(self) -> None:
        """Commit what is queued, make every file durable with one sync, drop the journal."""
        if self._queue is not None and self._task is not None:
            await self._queue.put(None)
            await self._task
            self._queue = self._task = None
        if self.journal.exists():
            await asyncio.to_thread(self._retire)

    def _retire(self) -> None:
        os.sync()  # the files written without fsync reach the disk before the journal goes
        self.journal.unlink(missing_ok=True)

    async def _run(
        self, queue: asyncio.Queue[tuple[Path, str, asyncio.Future[None]] | None]
    ) -> None:
        closing = False
        while not closing:
            first = await queue.get()
            if first is None:
                return
            batch = [first]
            deadline = asyncio.get_running_loop().time() + self.max_delay_s
            while len(batch) < self.max_batch:
                timeout = deadline - asyncio.get_running_loop().time()
                try:
                    if timeout <= 0:
                        item = queue.get_nowait()
                    else:
                        # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a
                        # cancel that lands with its timeout, and this task then waited on
                        # its queue forever while asyncio.run cancelled it (a full disk
                        # hung the run in _cancel_all_tasks).
                        async with asyncio.timeout(timeout):
                            item = await queue.get()
                except (asyncio.QueueEmpty, TimeoutError):
                    break
                if item is None:
                    closing = True
                    break
                batch.append(item)
            try:
                await asyncio.to_thread(self._commit, [(p, v) for p, v, _ in batch])
            except BaseException as exc:
                failed = [done for _, _, done in batch]
                if not isinstance(exc, Exception):  # cancelled: nobody may wait forever
                    while not queue.empty():
                        item = queue.get_nowait()
                        failed += [item[2]] if item is not None else []
                for done in failed:
                    if not done.done():
                        done.set_exception(exc)
                if not isinstance(exc, Exception):
                    raise
                continue
            for _, _, done in batch:
                if not done.done():
                    done.set_result(None)

    def _commit(self, texts: list[tuple[Path, str]]) -> None:
        self.journal.parent.mkdir(parents=True, exist_ok=True)
        with self.journal.open("a", encoding="utf-8") as handle:
            for path, text in texts:
                where = os.path.relpath(path, self.journal.parent)
                handle.write(json.dumps({"path": where, "text": text}, ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        self.commits += 1
        for path, text in texts:
            write_atomic(path, text, durable=False)


@contextlib.asynccontextmanager
async def group_commit(journal: Path, **options: Any) -> Any:
    """A GroupCommitWriter that first recovers `journal` and is closed on the way out."""
    writer = GroupCommitWriter(journal, **options)
    await asyncio.to_thread(writer.recover)
    try:
        yield writer
    finally:
        await writer.close()


def inside(root: Path, path: str) -> str | None:
    """`path` relative to the repository root when it names a file inside it."""
    candidate = Path(path) if Path(path).is_absolute() else root / path
    try:
        resolved = candidate.resolve()
        rel = resolved.relative_to(_resolved(root))
    except (OSError, ValueError):
        return None
    return rel.as_posix() if resolved.is_file() else None


@functools.lru_cache(maxsize=64)
def _resolved(root: Path) -> Path:
    return root.resolve()


# sha256 of document files by (path, size, mtime, inode): every conversation that reads a
# document records its digest, and a run's conversations read the same few files.
_SHAS: dict[Path, tuple[tuple[int, int, int], str]] = {}


def file_sha(root: Path, rel: str) -> str | None:
    path = root / rel
    try:
        info = path.stat()
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    key = (info.st_size, info.st_mtime_ns, info.st_ino)
    known = _SHAS.get(path)
    if known is not None and known[0] == key:
        return known[1]
    sha = sha256_file(path)
    _SHAS[path] = (key, sha)
    return sha
