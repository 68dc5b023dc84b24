"""Make text from a real session safe to commit as a scenario draft.

Three layers, in this order, then a check that nothing survived:

1. **Secrets** — the project's scrubber (:class:`agenteval.llm.scrub.Scrubber`): values of
   secret-named environment variables and secret-shaped strings become ``[REDACTED]``.
2. **Absolute paths** — made relative: inside the repository, relative to its root; else the
   longest tail that names a file of the repository; else the path without its anchor and
   without a home folder (``/home/<user>/``, ``/Users/<user>/``, ``C:\\Users\\<user>\\``,
   ``~/``). The user names found in home folders are then replaced wherever they appear.
3. **Personal data** — the same scrubber's personal layer (``personal=True``: phone numbers of
   any country, IBANs, identity, social-security and card numbers, home folders a path
   rule left), then e-mail addresses and URLs become fixture values (``person1@example.com``,
   ``https://example.com/link-1``), the same original always with the same fixture, so that
   a draft still reads as a conversation. The e-mail pattern is the sessions' own
   (``llm.personal.EMAIL``).

One scrubber: there is no second detector of personal data here (scrubadub's was one, with
its own phone and e-mail rules; its "x at y.z" address reading missed real addresses). No
detector finds personal names without a model: names are not replaced (user names from
home folders are).
"""

from __future__ import annotations

import getpass
import re
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from agenteval.llm.personal import EMAIL, FIXTURE_EMAIL, GENERIC_USERS, HOME_FOLDER, home_user
from agenteval.llm.private import EMAIL_FIXTURE
from agenteval.llm.scrub import Scrubber

POSIX_PATH = re.compile(r"(?<![\w.:/~\\-])/[\w.@%+~-]+(?:/[\w.@%+~-]+)+/?")
WINDOWS_PATH = re.compile(r"\b[A-Za-z]:[\\/][^\s\"'<>|:*?]*")
HOME_PATH = re.compile(r"(?<![\w/~])~/[\w.@%+~/-]+")
HOME_FOLDERS = (("home",), ("Users",), ("root",))
# Account names too common to replace as words wherever they appear.
FIXTURES = {"email": EMAIL_FIXTURE, "url": "https://example.com/link-{n}"}
URL = re.compile(r"\b(?:https?|ftp)://[^\s\"'<>()\[\]{}`]+")
FIXTURE_URL = re.compile(r"https://example\.com/link-\d+")


def _word(name: str) -> re.Pattern[str]:
    """`name` as a whole word; `_` and `-` separate words here (alice_notes, alice-chat)."""
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", re.IGNORECASE)


class DraftScrubber:
    """Secrets, absolute paths and personal data out of every string of a draft."""

    def __init__(self, root: Path, env: Mapping[str, str] | None = None) -> None:
        self.root = root.resolve()
        self.secrets = Scrubber.from_environment(env=env)
        self.personal = Scrubber.from_environment(env=env, personal=True)
        self._fixtures: dict[tuple[str, str], str] = {}
        self.users: set[str] = set()
        self._add_user(getpass.getuser())

    def _add_user(self, name: str) -> None:
        if len(name) >= 3 and name.lower() not in GENERIC_USERS:
            self.users.add(name)

    # ------------------------------------------------------------------ paths

    def relative(self, raw: str) -> str:
        """The repository-relative form of an absolute path (see the module docstring)."""
        windows = bool(re.match(r"[A-Za-z]:[\\/]", raw))
        pure = PureWindowsPath(raw) if windows else PurePosixPath(raw)
        parts = [p for p in pure.parts[1:] if p]
        if raw.startswith("~/"):
            parts = [p for p in PurePosixPath(raw[2:]).parts if p]
        if not windows and not raw.startswith("~/"):
            inside = Path(raw)
            if inside.is_relative_to(self.root):
                return inside.relative_to(self.root).as_posix() or "."
        for start in range(len(parts)):
            tail = Path(*parts[start:])
            if (self.root / tail).exists():
                return tail.as_posix()
        for home in HOME_FOLDERS:
            if tuple(parts[: len(home)]) == home and len(parts) > len(home) + 1:
                if home != ("root",):
                    self._add_user(parts[len(home)])
                    parts = parts[len(home) + 1 :]
                else:
                    parts = parts[1:]
                break
        return PurePosixPath(*parts).as_posix() if parts else "."

    def _replace_path(self, match: re.Match[str]) -> str:
        raw = match.group(0)
        path = raw.rstrip(".,;:)]}'\"")  # sentence punctuation is not part of the path
        return self.relative(path) + raw[len(path) :]

    def _paths(self, text: str) -> str:
        for pattern in (WINDOWS_PATH, HOME_PATH, POSIX_PATH):
            text = pattern.sub(self._replace_path, text)
        return text

    def learn(self, texts: Iterable[str]) -> None:
        """Collect the user names of every home folder first, so that a name is replaced
        even where it appears before the path that reveals it."""
        for text in texts:
            self._paths(text)
            for match in HOME_FOLDER.finditer(text):  # /var/home/u, /mnt/c/Users/u, ~u/ too
                name = home_user(match)
                if name:
                    self._add_user(name)

    def _users(self, text: str) -> str:
        for name in sorted(self.users, key=len, reverse=True):
            text = _word(name).sub("user", text)
        return text

    # ------------------------------------------------------------------ personal data

    def _fixture(self, kind: str, original: str) -> str:
        key = (kind, original.strip().lower())
        if key not in self._fixtures:
            n = 1 + sum(k == kind for k, _ in self._fixtures)
            template = FIXTURES.get(kind)
            self._fixtures[key] = template.format(n=n) if template else f"[{kind.upper()}]"
        return self._fixtures[key]

    def _personal(self, text: str) -> str:
        text = self.personal.scrub_text(text)
        if "@" in text:
            text = EMAIL.sub(lambda m: self._fixture_of(m, "email", FIXTURE_EMAIL), text)
        if "://" in text:
            text = URL.sub(lambda m: self._fixture_of(m, "url", FIXTURE_URL), text)
        return text

    def _fixture_of(self, match: re.Match[str], kind: str, fixture: re.Pattern[str]) -> str:
        found = match.group(0)
        if kind == "url":
            found = found.rstrip(".,;:!?")
            tail = match.group(0)[len(found) :]
        else:
            tail = ""
        return (found if fixture.fullmatch(found) else self._fixture(kind, found)) + tail

    # ------------------------------------------------------------------ public

    def text(self, value: str) -> str:
        value = self.secrets.scrub_text(value)
        value = self._paths(value)
        value = self._personal(value)
        return self._users(value)

    def scrub(self, obj: Any) -> Any:
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, Mapping):
            return {self.scrub(k): self.scrub(v) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return [self.scrub(v) for v in obj]
        return obj

    def leaks(self, text: str) -> list[str]:
        """What kind of data (never the value) a finished draft still holds."""
        found: list[str] = []
        # [REDACTED] stays (a blank would make the next word a flag's value); fixtures go,
        # this scrubber's and any other's (`agenteval promote` reads a draft written earlier).
        clean = FIXTURE_URL.sub(" ", FIXTURE_EMAIL.sub(" ", text))
        found += sorted(set(self.personal.leaks(clean)))
        if EMAIL.search(clean):
            found.append("personal:email")
        if URL.search(clean):
            found.append("personal:url")
        if any(p.search(clean) for p in (POSIX_PATH, WINDOWS_PATH, HOME_PATH, HOME_FOLDER)):
            found.append("absolute path")
        if any(_word(u).search(clean) for u in self.users):
            found.append("user name")
        return found
