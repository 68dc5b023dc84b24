"""The one scrubber for a person's own text, and for everything an endpoint sends back.

`PrivateScrubber` is what session replay writes its datasets, transcripts and results with,
and what the response cache stores replies with (`llm.cache`): values of secret-named
environment variables (an endpoint's key among them, found however a reply re-wraps it:
`llm.views`) and secret-shaped strings, personal data (phone, card, IBAN, identity numbers,
postal addresses, a name with a birth date: `llm.scrub` with `personal=True`), e-mail
addresses (each replaced by a stable example.com fixture; an address on a domain reserved
for documentation, RFC 2606, is nobody's and stays) and home folders (`/home/alice/repo` becomes
`~/repo`, in every form `llm.personal.HOME_FOLDER` knows; the user names found in them are
replaced wherever they appear, also as Claude Code writes them in a project folder's name,
`C--Users-first-last-repo`). Each text is also read percent-decoded and JSON-unescaped
(`llm.views.decoded_views`). A value found anywhere in a unit (a case, a results file) is
redacted everywhere in it. `leaks()` looks again at the very strings scrubbed.
"""

from __future__ import annotations

import getpass
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agenteval.llm.people import redact_people
from agenteval.llm.personal import (
    EMAIL,
    FIXTURE_EMAIL,
    GENERIC_USERS,
    HOME_HINT,
    RESERVED_EMAIL,
    home_user,
)
from agenteval.llm.personal import HOME_FOLDER as HOME
from agenteval.llm.private_facts import redact_private_facts
from agenteval.llm.records import private_columns
from agenteval.llm.residue import redact_looks_private, strings_of
from agenteval.llm.scrub import (
    MIN_SECRET_LEN,
    REDACTED,
    SECRET_FIELD_NAME,
    Scrubber,
    replace_everywhere,
)
from agenteval.llm.unit_public import hide, public_values, restore
from agenteval.llm.views import decoded_views, encoded_forms

# Account names that are ordinary words as well: replaced in paths, never as words in text.
COMMON_NAMES = GENERIC_USERS | {"dev", "developer", "test", "git", "build", "ci", "vagrant"}
MIN_USER_CHARS = 3
MEMO_TEXTS = 20_000
EMAIL_FIXTURE = "person{n}@example.com"
# What Claude Code writes for every character but a letter or digit in a project folder's name.
_PROJECT_FOLDER_CHAR = re.compile(r"[^A-Za-z0-9]")
# A project folder's name as Claude Code writes it (`-Users-bob-code-x`, `C--Users-bob-x`):
# the account name runs to the next dash (a dashed or dotted name's first part, at least;
# the cwd beside it names it whole).
_PROJECT_FOLDER = re.compile(
    r"(?<![\w\-])(?:[A-Za-z]-)?-(?:home|Users|var-home|export-home|mnt-[a-z]-Users)-([A-Za-z0-9_]+)-"
)


def _kept_email(address: str) -> bool:
    return bool(FIXTURE_EMAIL.fullmatch(address) or RESERVED_EMAIL.search(address))


class PrivateScrubber:
    """Secrets, personal data, e-mails and home folders out of every string."""

    def __init__(self, key_envs: list[str] | None = None, env: Mapping[str, str] | None = None):
        self.secrets = Scrubber.from_environment(key_envs or [], env=env, personal=True)
        self.emails: dict[str, str] = {}
        # Each text scrubbed, with the secret values redacted from it (see `scrub`).
        self._done: dict[str, tuple[str, frozenset[str]]] = {}
        self._redacted: set[str] | None = None
        self.unit_public: list[str] = []  # of the unit `scrub` last scrubbed
        self._emails_found: set[str] = set()  # the addresses of the text being scrubbed
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
        folder_form = _PROJECT_FOLDER_CHAR.sub("-", name)
        if folder_form != name and len(folder_form) >= MIN_USER_CHARS:
            self.users.add(folder_form)  # ngozi.okafor in C--Users-ngozi-okafor-etl
        self._done.clear()  # texts scrubbed before the name was known keep it
        words = "|".join(re.escape(u) for u in sorted(self.users, key=len, reverse=True))
        # `%2Fname` too: a URL-encoded path's separator ends in a letter or digit.
        self._user_words = re.compile(
            rf"(?:(?<![A-Za-z0-9])|(?<=%2F)|(?<=%5C))(?:{words})(?![A-Za-z0-9])", re.I
        )

    def learn(self, text: str) -> None:
        """The user names of every home folder in `text`, before anything is scrubbed."""
        for match in HOME.finditer(text.replace("\\\\", "\\")):  # JSON-escaped C:\\Users
            self._home(match)
        if "-home-" in text or "-Users-" in text:
            for match in _PROJECT_FOLDER.finditer(text):
                self.learn_user(match.group(1))

    def _home(self, match: re.Match[str]) -> str:
        name = home_user(match)
        if name:
            self.learn_user(name)
        return "~"

    def _email(self, match: re.Match[str]) -> str:
        found = match.group(0)
        if _kept_email(found):
            return found
        self._emails_found.add(found)
        local = found.split("@", 1)[0]
        if len(local) >= MIN_SECRET_LEN:  # its name alone, or the address wrapped over lines
            self._emails_found.add(local)
        key = found.lower()
        if key not in self.emails:
            self.emails[key] = EMAIL_FIXTURE.format(n=len(self.emails) + 1)
        return self.emails[key]

    def scrub_text(self, text: str) -> str:
        # Texts repeat (a follow-up's context repeats earlier answers): each is scrubbed once.
        done = self._done.get(text)
        if done is None:
            # What still looks private and has a known extent is redacted too, and its
            # value with it wherever it stands in the unit (`llm.residue`): what stays
            # costs the unit at the gate.
            self._emails_found = set()
            # A table's personal columns first: a name in a cell looks like nothing.
            tabled, cells = private_columns(text)
            tabled, people = redact_people(tabled)
            # A name beside a health or pay fact, once ids and labels are scrubbed.
            named, facts = redact_private_facts(self._scrub_text(tabled))
            clean, looked = redact_looks_private(named)
            emails = frozenset(self._emails_found)
            found = looked | emails | cells | people | facts
            done = (clean, self.secrets.redacted_values(tabled) | found)
            if len(self._done) >= MEMO_TEXTS:
                self._done.clear()
            self._done[text] = done
        if self._redacted is not None:
            self._redacted |= done[1]
        return done[0]

    def _scrub_text(self, text: str) -> str:
        views = decoded_views(text) if "%" in text or "\\" in text else []
        for view in [text, *views]:
            if HOME_HINT.search(view):  # the scrubber turns home folders to `~`: names first
                self.learn(view)
        text = self.secrets.scrub_text(text)
        for view in views:  # a home folder a URL encodes: `%2FUsers%2Fnadia%2Fwork`
            for match in HOME.finditer(view):
                for form in sorted(encoded_forms(match.group(0)), key=len, reverse=True):
                    text = text.replace(form, "~")
        for view in views:  # an address a URL or a JSON string encodes: `j.doe%40mail.com`
            for match in EMAIL.finditer(view) if "@" in view else ():
                fixture = self._email(match)
                for form in encoded_forms(match.group(0)) - {fixture}:
                    text = text.replace(form, fixture)
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
        # What the unit shows in a public form passes where it stands bare (llm.unit_public).
        self.unit_public = public_values(strings_of(obj), self.secrets.redacted_values)
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
            if self.unit_public:
                return restore(self.scrub_text(hide(obj, self.unit_public)), self.unit_public)
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
        found = set(self.secrets.leaks(text))
        views = decoded_views(text) if "%" in text or "\\" in text else []
        for view in [text, *views]:
            if "@" in view and any(not _kept_email(m.group(0)) for m in EMAIL.finditer(view)):
                found.add("email address")
            if HOME.search(view):
                found.add("home folder")
            if self._user_words is not None and self._user_words.search(view):
                found.add("user name")
        return sorted(found)
