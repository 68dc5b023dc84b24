"""The user's own prompts and code stay theirs: scrubbed, private files, a private folder.

Every text a session run writes passes `SessionScrubber` first: values of secret-named
environment variables and secret-shaped strings (agenteval.llm.scrub), email addresses
(each replaced by a stable example.com fixture), and home folders (`/home/alice/repo` becomes
`~/repo`, in every form `llm.personal.HOME_FOLDER` knows; the user names found in them are
replaced wherever they appear). A value found anywhere in a unit (a case, a results file)
is redacted everywhere in it. Then `leaks()` looks again at the very strings scrubbed (not
the JSON they become), and a string that still holds one is withheld and counted: it costs
that string (a case, in the dataset; `steps.private_cases`), never the file. Files are written
with mode 0600 in folders of mode 0700 (`private_files`), and the output folder must be one
git and DVC ignore (`check_private_folder`): the results never reach a commit, a DVC cache
or a remote.
"""

from __future__ import annotations

import contextlib
import getpass
import logging
import os
import re
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from agenteval.fileio import write_atomic
from agenteval.health.redact import FIXTURES, GENERIC_USERS
from agenteval.llm.personal import EMAIL, FIXTURE_EMAIL, HOME_HINT, home_user
from agenteval.llm.personal import HOME_FOLDER as HOME
from agenteval.llm.scrub import (
    MIN_SECRET_LEN,
    REDACTED,
    SECRET_FIELD_NAME,
    Scrubber,
    replace_everywhere,
)

# Account names that are ordinary words as well: replaced in paths, never as words in text.
COMMON_NAMES = GENERIC_USERS | {"dev", "developer", "test", "git", "build", "ci", "vagrant"}
MIN_USER_CHARS = 3
FILE_MODE, FOLDER_MODE = 0o600, 0o700
MEMO_TEXTS = 20_000
log = logging.getLogger(__name__)


class PrivacyError(ValueError):
    """A write would expose private text, or the output folder is not private."""


def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", re.IGNORECASE)


class SessionScrubber:
    """Secrets, emails and home folders out of every string (`scrub`, `scrub_text`)."""

    def __init__(self, key_envs: list[str] | None = None, env: Mapping[str, str] | None = None):
        self.secrets = Scrubber.from_environment(key_envs or [], env=env, personal=True)
        self.emails: dict[str, str] = {}
        # Each text scrubbed, with the secret values redacted from it (see `scrub`).
        self._done: dict[str, tuple[str, frozenset[str]]] = {}
        self._redacted: set[str] | None = None
        self.users: set[str] = set()
        self._user_words: re.Pattern[str] | None = None
        self.learn_user(getpass.getuser())
        home = Path(os.path.expanduser("~"))
        if home.parent.name in ("home", "Users"):
            self.learn_user(home.name)

    def learn_user(self, name: str) -> None:
        if len(name) < MIN_USER_CHARS or name.lower() in COMMON_NAMES or name in self.users:
            return
        self.users.add(name)
        self._done.clear()  # texts scrubbed before the name was known keep it
        words = "|".join(re.escape(u) for u in sorted(self.users, key=len, reverse=True))
        self._user_words = re.compile(rf"(?<![A-Za-z0-9])(?:{words})(?![A-Za-z0-9])", re.I)

    def learn(self, text: str) -> None:
        """The user names of every home folder in `text`, before anything is scrubbed."""
        for match in HOME.finditer(text.replace("\\\\", "\\")):  # JSON-escaped C:\\Users
            self._home(match)

    def _home(self, match: re.Match[str]) -> str:
        name = home_user(match)
        if name:
            self.learn_user(name)
        return "~"

    def _email(self, match: re.Match[str]) -> str:
        found = match.group(0)
        if FIXTURE_EMAIL.fullmatch(found):
            return found
        key = found.lower()
        if key not in self.emails:
            self.emails[key] = FIXTURES["email"].format(n=len(self.emails) + 1)
        return self.emails[key]

    def scrub_text(self, text: str) -> str:
        # Texts repeat (a follow-up's context repeats earlier answers): each is scrubbed once.
        done = self._done.get(text)
        if done is None:
            done = (self._scrub_text(text), self.secrets.redacted_values(text))
            if len(self._done) >= MEMO_TEXTS:
                self._done.clear()
            self._done[text] = done
        if self._redacted is not None:
            self._redacted |= done[1]
        return done[0]

    def _scrub_text(self, text: str) -> str:
        if HOME_HINT.search(text):  # the scrubber turns home folders to `~`: names first
            self.learn(text)
        text = self.secrets.scrub_text(text)
        if "@" in text:
            text = EMAIL.sub(self._email, text)
        text = HOME.sub(self._home, text)
        if self._user_words is not None:
            text = self._user_words.sub("user", text)
        return text

    def scrub(self, obj: Any) -> Any:
        """A scrubbed copy of a JSON-like value; a secret-named key's string value (an
        api_key, a password) is redacted whatever it looks like. The value is one unit (a
        case, a results file): a secret found in one of its strings is redacted in all."""
        self._redacted = set()
        try:
            clean = self._scrub(obj, None)
            values = self._redacted
        finally:
            self._redacted = None
        return replace_everywhere(clean, values) if values else clean

    def _scrub(self, obj: Any, field: str | None) -> Any:
        if isinstance(obj, str):
            if field and len(obj) >= MIN_SECRET_LEN and SECRET_FIELD_NAME.search(field):
                if self._redacted is not None and obj != REDACTED:
                    self._redacted.add(obj)
                return REDACTED
            return self.scrub_text(obj)
        if isinstance(obj, Mapping):
            return {self.scrub_text(str(k)): self._scrub(v, str(k)) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return [self._scrub(v, None) for v in obj]
        return obj

    def leaks(self, text: str) -> list[str]:
        """The kinds (never the values) of private data `text` still holds."""
        # [REDACTED] stays: no rule takes it for a value, while a blank in its place would
        # make the next word one (`--password= https://...`, `-a  INFO`).
        clean = text
        found = sorted(set(self.secrets.leaks(clean)))
        if any(not FIXTURE_EMAIL.fullmatch(m.group(0)) for m in EMAIL.finditer(clean)):
            found.append("email address")
        if HOME.search(clean):
            found.append("home folder")
        if self._user_words is not None and self._user_words.search(clean):
            found.append("user name")
        return found


def withhold(value: Any, scrubber: SessionScrubber) -> tuple[Any, list[str]]:
    """`value` (already scrubbed, JSON-like) with every string that still holds private data
    replaced by [REDACTED], and the kinds found (never the values). The check reads the
    strings the scrubber read, not the JSON they become: quoting and escapes (`"x":"…"`,
    `password\\n…`) would show it shapes no text has; and a residue costs its string, not
    the file all the work went into."""
    kinds: list[str] = []

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            found = scrubber.leaks(item) if item != REDACTED else []
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
