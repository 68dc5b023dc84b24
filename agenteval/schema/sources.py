"""`eval/sources.yaml`: external corpus files pinned by URL, sha256 and size.

Nothing downloaded is committed; this file is the only record of what a corpus is. A pin is
trusted only through its digest, so the URL may be https, http, file:// or a plain path (relative
paths are read from the directory holding the sources file). `mirrors` lists other places
holding the same bytes, e.g. a distribution's copy of a licence text; they take the same kinds
of location, and a local mirror that does not exist on this machine is simply not used.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Annotated, Literal
from urllib.parse import urlsplit
from urllib.request import url2pathname

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
)

from agenteval.schema.located import Loc, Located, load_located
from agenteval.schema.problems import Problem

__all__ = [
    "FilePin",
    "Problem",
    "Source",
    "SourcesError",
    "SourcesFile",
    "load_sources",
    "local_path",
    "url_kind",
    "validate_sources",
]

DEFAULT_SOURCES = Path("eval/sources.yaml")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_SNAKE_CASE = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")
_SCHEMES = ("https", "http", "file")
# Characters that are legal on Linux but break the same corpus on Windows or in shells.
_BAD_PATH_CHARS = re.compile(r'[\\:*?"<>|\x00-\x1f]')

UrlKind = Literal["http", "file", "path"]


def url_kind(url: str) -> UrlKind:
    """Classify a pin's URL; raises ValueError for schemes the fetcher cannot read."""
    if not url.strip():
        raise ValueError("url is empty")
    scheme = urlsplit(url).scheme.lower()
    # A one-letter "scheme" is a Windows drive (C:\data\x.txt): a plain local path.
    if scheme == "" or len(scheme) == 1:
        return "path"
    if scheme in ("http", "https"):
        if not urlsplit(url).netloc:
            raise ValueError(f"url {url!r} has no host")
        return "http"
    if scheme == "file":
        return "file"
    allowed = ", ".join(_SCHEMES)
    raise ValueError(f"url scheme {scheme!r} is not supported (use {allowed}, or a local path)")


def local_path(url: str, base_dir: Path) -> Path:
    """Filesystem path of a file:// URL or plain path; relative paths hang off `base_dir`."""
    if url_kind(url) == "file":
        parts = urlsplit(url)
        if parts.netloc not in ("", "localhost"):
            raise ValueError(f"file URL {url!r} names a remote host {parts.netloc!r}")
        return Path(url2pathname(parts.path))
    path = Path(url).expanduser()
    return path if path.is_absolute() else base_dir / path


def _check_url(url: str) -> str:
    url_kind(url)
    return url


def _check_homepage(url: str) -> str:
    if url_kind(url) != "http":
        raise ValueError(f"homepage {url!r} must be an http(s) URL")
    return url


def _check_sha256(value: str) -> str:
    if not _SHA256.fullmatch(value):
        raise ValueError(f"sha256 must be 64 lowercase hex characters, got {value!r}")
    return value


def _check_source_name(name: str) -> str:
    if not _SNAKE_CASE.fullmatch(name):
        raise ValueError(f"source name {name!r} must be snake_case (a-z, 0-9, _)")
    return name


def check_relative_path(raw: str) -> str:
    """A destination path must stay inside `<dest>/<source>/` on every platform."""
    if not raw:
        raise ValueError("destination path is empty")
    if raw.startswith("/") or PurePosixPath(raw).is_absolute():
        raise ValueError(f"destination {raw!r} is absolute; use a path relative to the source")
    if _BAD_PATH_CHARS.search(raw):
        raise ValueError(f"destination {raw!r} contains a backslash, ':' or another unsafe char")
    parts = raw.split("/")
    if ".." in parts:
        raise ValueError(f"destination {raw!r} escapes the source directory with '..'")
    if any(part in ("", ".") for part in parts):
        raise ValueError(f"destination {raw!r} is not normalised (empty or '.' component)")
    return raw


RelPath = Annotated[str, AfterValidator(check_relative_path)]
SourceName = Annotated[str, AfterValidator(_check_source_name)]


Location = Annotated[StrictStr, AfterValidator(_check_url)]


class FilePin(BaseModel):
    """One file: where to get it and the exact bytes it must have.

    The fetcher tries, in order: its cache, local `mirrors` (file:// URLs and paths), `url`,
    then remote `mirrors`. A mirror is trusted no more than `url`: its bytes are checked
    against the same digest, and a stale mirror never hides a good `url` (the mismatch is
    reported only if no location yields the pinned bytes).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    url: Location
    sha256: Annotated[StrictStr, AfterValidator(_check_sha256)]
    size: StrictInt = Field(alias="bytes", description="Exact size in bytes.")
    mirrors: list[Location] = Field(
        default_factory=list, description="Other locations of the same bytes."
    )

    def locations(self) -> list[str]:
        """url first, then mirrors: every place this pin names."""
        return [self.url, *self.mirrors]

    @field_validator("size")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value <= 0:
            raise ValueError(f"bytes must be a positive size, got {value}")
        return value


class Source(BaseModel):
    """A named corpus: provenance for humans, pins for the fetcher."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    title: str = Field(min_length=1)
    homepage: Annotated[StrictStr, AfterValidator(_check_homepage)]
    license: str = Field(min_length=1)
    citation: str | None = None
    notes: str | None = None
    files: dict[RelPath, FilePin] = Field(min_length=1)


class SourcesFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    notes: str | None = None
    sources: dict[SourceName, Source] = Field(min_length=1)
    # Where relative local paths are resolved; set by load_sources, cwd otherwise.
    _base_dir: Path | None = PrivateAttr(default=None)

    @property
    def base_dir(self) -> Path:
        return self._base_dir if self._base_dir is not None else Path.cwd()

    def with_base_dir(self, base_dir: Path) -> SourcesFile:
        self._base_dir = base_dir
        return self

    def pins(self) -> Iterator[tuple[str, str, FilePin]]:
        """(source, relative path, pin) for every file, in a stable order."""
        for name in sorted(self.sources):
            files = self.sources[name].files
            for rel in sorted(files):
                yield name, rel, files[rel]


class SourcesError(ValueError):
    """sources.yaml has errors; `problems` holds every one with its line."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        errors = [p for p in problems if p.severity == "error"]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        super().__init__(f"{errors[0] if errors else 'invalid sources file'}{more}")


def _duplicate_keys(node: yaml.Node | None, loc: Loc, located: Located) -> list[Problem]:
    """PyYAML keeps the last of two equal keys silently; a second pin must not vanish."""
    found: list[Problem] = []
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if key in seen:
                what = "destination path" if loc and loc[-1] == "files" else "key"
                where = ".".join(str(part) for part in (*loc, key))
                msg = f"{where}: duplicate {what} {key!r} (first at line {seen[key]})"
                found.append(Problem(located.path, line, msg + "; only one would be kept"))
            else:
                seen[key] = line
            found.extend(_duplicate_keys(value_node, (*loc, key), located))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            found.extend(_duplicate_keys(item, (*loc, index), located))
    return found


def _model_problems(located: Located, exc: ValidationError) -> list[Problem]:
    problems = []
    for error in exc.errors():
        loc = tuple(p for p in error["loc"] if not str(p).startswith("function-"))
        if loc and loc[-1] == "[key]":  # pydantic's marker for a bad mapping key
            loc = loc[:-1]
        where = ".".join(str(p) for p in loc) or "file"
        message = str(error["msg"]).removeprefix("Value error, ")
        problems.append(located.problem(loc, f"{where}: {message}"))
    return problems


def _at(located: Located, loc: Loc, message: str, warning: bool = False) -> Problem:
    """A problem at `loc`, its message led by the dotted location like pydantic's errors."""
    where = ".".join(str(part) for part in loc)
    return located.problem(loc, f"{where}: {message}", warning=warning)


def _pin_loc(source: str, rel: str, field: str | None = None) -> Loc:
    loc: Loc = ("sources", source, "files", rel)
    return (*loc, field) if field else loc


def _layout_problems(sf: SourcesFile, located: Located) -> list[Problem]:
    """Destinations that would collide once written to disk."""
    problems = []
    for name, source in sf.sources.items():
        paths = sorted(source.files)
        as_files = set(paths)
        folded: dict[str, str] = {}
        for rel in paths:
            parents = ["/".join(rel.split("/")[:i]) for i in range(1, rel.count("/") + 1)]
            clash = next((p for p in parents if p in as_files), None)
            if clash:
                msg = f"duplicate destination: {rel!r} needs {clash!r} as a directory, not a file"
                problems.append(_at(located, _pin_loc(name, rel), msg))
            other = folded.setdefault(rel.casefold(), rel)
            if other != rel:
                msg = f"destinations {other!r} and {rel!r} collide on case-insensitive filesystems"
                problems.append(_at(located, _pin_loc(name, rel), msg, warning=True))
    return problems


def _pin_consistency(sf: SourcesFile, located: Located) -> list[Problem]:
    """One URL, or one digest, pinned two different ways can never satisfy both pins."""
    problems = []
    by_url: dict[str, tuple[str, str, FilePin]] = {}
    by_sha: dict[str, tuple[str, str, FilePin]] = {}
    for name, rel, pin in sf.pins():
        first = by_url.setdefault(pin.url, (name, rel, pin))
        if (first[2].sha256, first[2].size) != (pin.sha256, pin.size):
            msg = f"url also pinned by {first[0]}/{first[1]} with a different sha256 or size"
            problems.append(_at(located, _pin_loc(name, rel, "url"), msg))
        first = by_sha.setdefault(pin.sha256, (name, rel, pin))
        if first[2].size != pin.size:
            msg = f"same sha256 as {first[0]}/{first[1]} but {pin.size} bytes, not {first[2].size}"
            problems.append(_at(located, _pin_loc(name, rel, "bytes"), msg))
    return problems


def _pin_locations(name: str, rel: str, pin: FilePin) -> Iterator[tuple[Loc, str]]:
    """Each location a pin names with its place in the file: url, then mirrors.<n>."""
    yield _pin_loc(name, rel, "url"), pin.url
    for index, mirror in enumerate(pin.mirrors):
        yield (*_pin_loc(name, rel, "mirrors"), index), mirror


def _local_problems(sf: SourcesFile, located: Located) -> list[Problem]:
    """Unreadable file:// URLs are errors anywhere; a missing local `url` is a warning. A
    missing local mirror says nothing: mirrors exist on some machines only (that is the
    point of having them), so the same file must validate cleanly everywhere."""
    problems = []
    for name, rel, pin in sf.pins():
        for loc, location in _pin_locations(name, rel, pin):
            if url_kind(location) == "http":
                continue
            try:
                path = local_path(location, sf.base_dir)
            except ValueError as exc:
                problems.append(_at(located, loc, str(exc)))
                continue
            if loc[-1] == "url" and not path.is_file():
                msg = f"local source {str(path)!r} does not exist (yet)"
                problems.append(_at(located, loc, msg, warning=True))
    return problems


def _mirror_problems(sf: SourcesFile, located: Located) -> list[Problem]:
    """A mirror repeating the url or another mirror is harmless but surely a slip."""
    problems = []
    for name, rel, pin in sf.pins():
        seen = {pin.url}
        for index, mirror in enumerate(pin.mirrors):
            if mirror in seen:
                loc = (*_pin_loc(name, rel, "mirrors"), index)
                msg = f"{mirror!r} is listed twice (as url or mirror)"
                problems.append(_at(located, loc, msg, warning=True))
            seen.add(mirror)
    return problems


def _parse(path: Path, display: str | None = None) -> tuple[SourcesFile | None, list[Problem]]:
    located = load_located(path, display)
    if isinstance(located, Problem):
        return None, [located]
    try:
        node = yaml.compose(path.read_text(encoding="utf-8-sig"), Loader=yaml.SafeLoader)
    except (OSError, yaml.YAMLError):  # load_located parsed it; this cannot normally fail
        node = None
    problems = _duplicate_keys(node, (), located)
    if not isinstance(located.data, dict):
        got = type(located.data).__name__
        return None, [*problems, located.problem((), f"sources file must be a mapping, got {got}")]
    try:
        sf = SourcesFile.model_validate(located.data)
    except ValidationError as exc:
        return None, problems + _model_problems(located, exc)
    sf.with_base_dir(path.parent)
    problems += _layout_problems(sf, located)
    problems += _pin_consistency(sf, located)
    problems += _local_problems(sf, located)
    problems += _mirror_problems(sf, located)
    return sf, sorted(problems, key=lambda p: (p.line, p.message))


def validate_sources(path: Path = DEFAULT_SOURCES, display: str | None = None) -> list[Problem]:
    """Every problem in a sources file, each with `path:line`; an empty list means valid."""
    return _parse(path, display)[1]


def load_sources(path: Path = DEFAULT_SOURCES) -> SourcesFile:
    """Parse and check a sources file; raises SourcesError if it has any error (not warnings)."""
    sf, problems = _parse(path)
    if sf is None or any(p.severity == "error" for p in problems):
        raise SourcesError(problems)
    return sf
