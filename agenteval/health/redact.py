"""Make text from a real session safe to commit as a scenario draft.

Three layers, in this order, then a check that nothing survived:

1. **Secrets** — the project's scrubber (:class:`agenteval.llm.scrub.Scrubber`): values of
   secret-named environment variables and secret-shaped strings become ``[REDACTED]``.
2. **Absolute paths** — made relative: inside the repository, relative to its root; else the
   longest tail that names a file of the repository; else the path without its anchor and
   without a home folder (``/home/<user>/``, ``/Users/<user>/``, ``C:\\Users\\<user>\\``,
   ``~/``). The user names found in home folders are then replaced wherever they appear.
3. **Personal data** — scrubadub's detectors (emails, phone numbers, URLs, handles,
   credentials, card and social-security numbers) replace each finding with a fixture value
   (``person1@example.com``, ``+1-202-555-0101``, ``https://example.com/link-1``...), the same
   original always with the same fixture. scrubadub's email pattern also reads "x at y.z"
   as an address and then misses a real address that overlaps it, so a strict ``@``
   pattern runs beside it and scrubadub merges the two findings into one.

Why scrubadub: its detectors need no model. Presidio's recognisers need spaCy and a model
downloaded from a hub at run time (no PyPI wheel from its authors), and its email check calls
tldextract, which fetches the public suffix list over the network. Neither detects personal
names without a model: names are not replaced (user names from home folders are).
"""

from __future__ import annotations

import getpass
import re
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from agenteval.llm.scrub import REDACTED, Scrubber

POSIX_PATH = re.compile(r"(?<![\w.:/~\\-])/[\w.@%+~-]+(?:/[\w.@%+~-]+)+/?")
WINDOWS_PATH = re.compile(r"\b[A-Za-z]:[\\/][^\s\"'<>|:*?]*")
HOME_PATH = re.compile(r"(?<![\w/~])~/[\w.@%+~/-]+")
HOME_FOLDERS = (("home",), ("Users",), ("root",))
# Account names too common to replace as words wherever they appear.
GENERIC_USERS = frozenset(
    {"root", "user", "users", "admin", "runner", "ubuntu", "shared", "public", "default"}
)
FIXTURES = {
    "email": "person{n}@example.com",
    "phone": "+1-202-555-01{n:02d}",
    "url": "https://example.com/link-{n}",
    "twitter": "@fixture_user{n}",
    "skype": "fixture.skype{n}",
}


def _pii_scrubber() -> Any:
    import scrubadub
    from scrubadub.detectors import RegexDetector
    from scrubadub.filth import EmailFilth

    class StrictEmailDetector(RegexDetector):  # type: ignore[misc]
        name = "strict_email"
        filth_cls = EmailFilth
        regex = re.compile(
            r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?"
            r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?)+"
        )

    scrubber = scrubadub.Scrubber()
    scrubber.add_detector(StrictEmailDetector)
    return scrubber


def _word(name: str) -> re.Pattern[str]:
    """`name` as a whole word; `_` and `-` separate words here (alice_notes, alice-chat)."""
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", re.IGNORECASE)


def _kind(filth: Any) -> str:
    parts = getattr(filth, "filths", None)  # a MergedFilth: overlapping findings
    return str(parts[0].type if parts else filth.type)


class DraftScrubber:
    """Secrets, absolute paths and personal data out of every string of a draft."""

    def __init__(self, root: Path, env: Mapping[str, str] | None = None) -> None:
        self.root = root.resolve()
        self.secrets = Scrubber.from_environment(env=env)
        self._pii = _pii_scrubber()
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
        out, cursor = [], 0
        for filth in self._pii.iter_filth(text):
            if filth.beg < cursor:
                continue
            out.append(text[cursor : filth.beg])
            out.append(self._fixture(_kind(filth), filth.text))
            cursor = filth.end
        out.append(text[cursor:])
        return "".join(out)

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
        clean = text.replace(REDACTED, " ")
        for fixture in self._fixtures.values():
            clean = clean.replace(fixture, " ")
        found += sorted(set(self.secrets.leaks(clean)))
        found += sorted({f"personal:{_kind(f)}" for f in self._pii.iter_filth(clean)})
        if any(p.search(clean) for p in (POSIX_PATH, WINDOWS_PATH, HOME_PATH)):
            found.append("absolute path")
        if any(_word(u).search(clean) for u in self.users):
            found.append("user name")
        return found
