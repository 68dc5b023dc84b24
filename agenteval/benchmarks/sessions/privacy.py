"""The user's own prompts and code stay theirs: scrubbed, private files, a private folder.

Every text a session run writes passes `SessionScrubber` first: `llm.private`'s
`PrivateScrubber`, the same one the response cache stores replies with (secrets, personal
data, e-mail addresses as stable fixtures, home folders and the user names they reveal).
A value found anywhere in a unit (a case, a results file) is redacted everywhere in it.
Then `leaks()` looks again at the very strings scrubbed (not the JSON they
become), and a string that still holds one is withheld and counted: it costs that string (a
case, in the dataset; `steps.private_cases`), never the file. Files are written with mode
0600 in folders of mode 0700 (`private_files`), and the output folder must be one git and
DVC ignore (`check_private_folder`): the results never reach a commit, a DVC cache or a remote.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from agenteval.fileio import write_atomic
from agenteval.llm.private import PrivateScrubber
from agenteval.llm.scrub import REDACTED
from agenteval.llm.unit_public import hide

FILE_MODE, FOLDER_MODE = 0o600, 0o700
log = logging.getLogger(__name__)
# The sessions' scrubber is the one the response cache stores replies with (`llm.private`).
SessionScrubber = PrivateScrubber


class PrivacyError(ValueError):
    """A write would expose private text, or the output folder is not private."""


def withhold(
    value: Any, scrubber: SessionScrubber, public: list[str] | None = None
) -> tuple[Any, list[str]]:
    """`value` (already scrubbed, JSON-like) with every string that still holds private data
    replaced by [REDACTED], and the kinds found (never the values). The check reads the
    strings the scrubber read, not the JSON they become: quoting and escapes (`"x":"…"`,
    `password\\n…`) would show it shapes no text has; and a residue costs its string, not
    the file all the work went into."""
    kinds: list[str] = []

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            # `public`: what the unit `value` shows in a public form (`llm.unit_public`)
            found = (
                scrubber.leaks(hide(item, public) if public else item) if item != REDACTED else []
            )
            kinds.extend(found)
            return REDACTED if found else item
        if isinstance(item, Mapping):
            return {walk(k): walk(v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [walk(v) for v in item]
        return item

    return walk(value), kinds


def write_private(path: Path, text: str, scrubber: SessionScrubber | None) -> None:
    """Write already-scrubbed `text`, mode 0600; with a `scrubber`, a line that still holds
    private data is withheld ([REDACTED]) and counted in a warning. None: the caller
    checked what `text` is made of (`withhold`)."""
    if scrubber is not None:
        lines, kinds = withhold(text.split("\n"), scrubber)
        text = "\n".join(lines)
        warn_withheld(path, kinds)
    with private_files():
        write_atomic(path, text)
    path.chmod(FILE_MODE)


def warn_withheld(path: Path, kinds: list[str]) -> None:
    if kinds:
        log.warning(
            "%s: %d text(s) withheld, still holding after scrubbing: %s",
            path.name,
            len(kinds),
            ", ".join(sorted(set(kinds))),
        )


@contextlib.contextmanager
def private_files() -> Iterator[None]:
    """Files and folders created meanwhile are readable by this user only (0600 / 0700)."""
    previous = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(previous)


def make_private_folder(folder: Path) -> Path:
    with private_files():
        folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(FOLDER_MODE)
    return folder


def _git_ignored(path: Path, repo: Path) -> bool | None:
    """Whether git ignores `path` in `repo`; None when git cannot tell (not a work tree)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), "check-ignore", "-q", "--no-index", str(path)],
            capture_output=True,
            timeout=20,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return {0: True, 1: False}.get(done.returncode)


def _dvc_ignored(path: Path, repo: Path) -> bool:
    from pathspec import PathSpec

    rules = repo / ".dvcignore"
    lines = rules.read_text(encoding="utf-8").splitlines() if rules.is_file() else []
    spec: Any
    try:  # DVC reads .dvcignore with gitignore's rules; pathspec >= 1.0 names them so
        spec = PathSpec.from_lines("gitignore", lines)
    except KeyError:
        spec = PathSpec.from_lines("gitwildmatch", lines)
    rel = path.relative_to(repo).as_posix()
    return bool(spec.match_file(rel + "/") or spec.match_file(rel))


def check_private_folder(folder: Path, repo: Path) -> None:
    """Refuse an output folder inside the repository that git or DVC would pick up."""
    folder, repo = folder.resolve(), repo.resolve()
    if not folder.is_relative_to(repo) or folder == repo:
        if folder == repo:
            raise PrivacyError(f"--out {folder}: the repository itself is not a private folder")
        return
    if (repo / ".git").exists() and _git_ignored(folder, repo) is False:
        raise PrivacyError(
            f"--out {folder.relative_to(repo)}: not ignored by git; session results hold your "
            "own prompts and code (use runs/sessions-<name>, or add the folder to .gitignore)"
        )
    if (repo / ".dvc").is_dir() and not _dvc_ignored(folder, repo):
        raise PrivacyError(
            f"--out {folder.relative_to(repo)}: not in .dvcignore; DVC would hash it into "
            "its cache (use runs/sessions-<name>, or add the folder to .dvcignore)"
        )
