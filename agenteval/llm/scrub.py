"""The one scrubber for everything that leaves: files, reports, MLflow, caches, requests.

Results are meant to be shared, agents with shells print their environment, and session
replay reads the user's own transcripts, so every text that leaves goes through a Scrubber.
Layers, in order:

1. exact known secret values (taken from the environment): keys of any shape;
2. the project's rules: the forms programs take credentials in (`llm.credential_forms`: the
   table of CLI password flags, .netrc and .pgpass lines), then `llm.secret_rules`: a value
   after a secret's NAME, credentials in URLs, provider prefixes (`llm.provider_keys`),
   random-looking values after `=` or `:`;
3. detect-secrets' plugins and keyword detector (`llm.detectors`);
4. with `personal=True` (the user's own text: sessions, drafts, issues), phone, social
   security, card, IBAN and identity numbers, home folders (`llm.personal`, libphonenumber).

Inline base64 images are set aside before and put back after. Measured on the labelled
corpus `eval/scrub/` (recall and false-scrub rate on its held split: docs/sessions.md).

    text, counts = scrub_text("DB_PASSWORD=hunter22 and call 415-823-0132")
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from agenteval.llm.carrier_rules import carrier_rules
from agenteval.llm.credential_forms import CREDENTIAL_HINT, credential_rules
from agenteval.llm.demo_tokens import demo_spans
from agenteval.llm.detectors import personal_in, secrets_in
from agenteval.llm.personal import HOME_HINT, PERSONAL_PREFILTER, home_rules, personal_rules
from agenteval.llm.public_ids import blank_public
from agenteval.llm.records import RECORD_HINT, sibling_rules
from agenteval.llm.said_secrets import said_rules
from agenteval.llm.secret_rules import (
    DIGEST_HEX_LENGTHS,
    REDACTED,
    SET_ASIDE,
    SET_ASIDE_HINT,
    SHAPE_HINT,
    Rule,
    generic_rules,
    named_rules,
    random_looking,
)
from agenteval.llm.views import (
    HeldSecrets,
    decoded_views,
    encoded_forms,
    entity_pattern,
    wrapped_tails,
)

__all__ = [
    "REDACTED",
    "SHAPE_PREFILTER",
    "Scrubbed",
    "Scrubber",
    "replace_everywhere",
    "scrub_text",
]

# Environment variable names whose values are treated as secrets.
SECRET_ENV_NAME = re.compile(
    r"(^|_)API_KEY$|(^|_)TOKEN$|SECRET|PASSWORD|PASSWD|(^|_)PASS$|CREDENTIALS?$"
    r"|(^|_)ACCESS_KEY(_|$)|(^|_)(APP|PRIVATE)_KEY$",
    re.IGNORECASE,
)
# Mapping keys whose string values are secrets whatever they look like.
SECRET_FIELD_NAME = re.compile(
    r"(api[_-]?key|authorization|password|passwd|secret|(access|refresh|auth|bearer)[_-]?token)$"
    r"|^token$",
    re.IGNORECASE,
)
# Shorter values would redact ordinary words and numbers all over the output.
MIN_SECRET_LEN = 8
# A value cut short is still redacted from this many characters on, over this many.
TRUNCATED_MIN, TRUNCATED_SPAN = 12, 160
# ...when its head mixes two of these (a key's, not a path's or a header's: `/home/priya/`)
_CLASSES = (re.compile(r"[A-Z]"), re.compile(r"[a-z]"), re.compile(r"\d"))
MEMO_STRINGS = 8192  # scrubbed strings remembered per Scrubber
_SCALARS = frozenset({int, float, bool, type(None)})  # values no rule can apply to
_STASH = "\x00stash{}\x00"
# A text no secret rule can match is left after this one scan (see secret_rules.SHAPE_HINT).
SHAPE_PREFILTER = re.compile(SHAPE_HINT + "|" + CREDENTIAL_HINT + "|" + RECORD_HINT)


def _random_looking(match: re.Match[str]) -> str | None:
    return REDACTED if random_looking(match.group(0)) else None


def _shape_rules(exempt_hex: tuple[int, ...]) -> list[Rule]:
    """The forms programs take credentials in first, then the secret shapes."""
    return [
        *credential_rules(),
        *sibling_rules(),
        *named_rules(),
        *carrier_rules(),
        *said_rules(),
        *generic_rules(exempt_hex),
    ]


class Scrubbed(NamedTuple):
    """A scrubbed text and how many of each kind were removed (never the values)."""

    text: str
    counts: dict[str, int]


class Scrubber:
    """Replaces secrets with `[REDACTED]` in strings and nested JSON-like structures."""

    def __init__(
        self,
        *,
        secret_values: Mapping[str, str] | Iterable[str] = (),
        exempt_hex_lengths: tuple[int, ...] = DIGEST_HEX_LENGTHS,
        personal: bool = False,
    ) -> None:
        # Personal data (phone, SSN, card numbers) only where the text is a person's own:
        # an evaluation's transcripts quote corpus documents whose numbers are answers.
        self.personal = personal
        if isinstance(secret_values, Mapping):
            labelled = list(secret_values.items())
        else:
            labelled = [("value", value) for value in secret_values]
        self._labels: dict[str, str] = {}  # secret value -> label safe to report
        for label, value in labelled:
            self._add(label, value)
        self._rules = _shape_rules(exempt_hex_lengths)
        self._personal_rules = personal_rules()
        self._home_rules = home_rules()
        # A lowercase hex string of an exempt length is a digest no shape rule redacts (hex_key
        # exempts it, random_token needs capitals): one match instead of fourteen, for the
        # digests every transcript and verdict carries.
        lengths = "|".join(f"[0-9a-f]{{{n}}}" for n in exempt_hex_lengths)
        self._digest = re.compile(f"(?:{lengths})") if lengths else None
        self._known: re.Pattern[str] | None = None
        self._held: HeldSecrets | None = None
        # Results per string: a run writes the same strings (tool names, endpoint details,
        # retrieved passages) into thousands of files. Cleared whenever the secrets change.
        # With each, the values it redacted: `scrub` replaces them in every other string of
        # the value it scrubs (a key found after `KEY=` in a request, bare in the answer).
        self._memo: dict[str, tuple[str, tuple[str, ...], frozenset[str]]] = {}
        self._redacted: set[str] | None = None  # values redacted during one `scrub`
        self._compile_known()

    @classmethod
    def from_environment(
        cls,
        api_key_envs: Iterable[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        exempt_hex_lengths: tuple[int, ...] = DIGEST_HEX_LENGTHS,
        personal: bool = False,
    ) -> Scrubber:
        """Known values: the named key variables plus any secret-looking variable name."""
        source = os.environ if env is None else env
        wanted = set(api_key_envs)
        values = {
            f"env:{name}": value
            for name, value in source.items()
            if name in wanted or SECRET_ENV_NAME.search(name)
        }
        return cls(secret_values=values, exempt_hex_lengths=exempt_hex_lengths, personal=personal)

    def _add(self, label: str, value: str) -> None:
        value = value.strip()
        if len(value) >= MIN_SECRET_LEN and value not in self._labels:
            self._labels[value] = label

    def _compile_known(self) -> None:
        self._memo = {}
        if not self._labels:
            self._known = self._held = None
            return
        # Longest first so a key that contains another known value is removed whole.
        ordered = sorted(self._labels, key=len, reverse=True)
        self._known = re.compile("|".join(re.escape(v) for v in ordered))
        self._held = HeldSecrets(ordered)

    def add_secret(self, value: str, label: str = "value") -> None:
        self._add(label, value)
        self._compile_known()

    def _apply(self, text: str) -> tuple[str, list[str]]:
        found = self._memo.get(text) or self._remember(text)
        if self._redacted is not None:
            self._redacted |= found[2]
        return found[0], list(found[1])

    def _remember(self, text: str) -> tuple[str, tuple[str, ...], frozenset[str]]:
        values: set[str] = set()
        clean, hits = self._scan(text, values)
        # What a URL or a JSON string decodes to is scanned too (`user%40mail.com`,
        # `pass%23word`, `\u0040`); a value found there goes in every form it may take here.
        for view in decoded_views(text):
            in_view: set[str] = set()
            self._scan(view, in_view)
            values |= {form for value in in_view for form in encoded_forms(value)}
            if "&" in text:  # a value written partly in HTML character references
                for value in in_view:
                    if len(value) >= MIN_SECRET_LEN:
                        clean, mixed = entity_pattern(value).subn(REDACTED, clean)
                        hits += [f"repeated:{_first_kind(hits)}"] * mixed
        # Once found anywhere in the text, a value is redacted wherever else it stands.
        values = {v for v in values if len(v.strip()) >= MIN_SECRET_LEN and REDACTED not in v}
        pattern = value_pattern(values)
        if pattern is not None:
            clean, repeated = pattern.subn(REDACTED, clean)
            hits += [f"repeated:{_first_kind(hits)}"] * repeated
        if REDACTED in clean and ("\n" in clean or "\\" in clean or "%0" in clean):
            clean, tails = wrapped_tails(clean, REDACTED, text)
            values.update(tails)
            hits += ["shape:wrapped_tail"] * sum(tail in text for tail in tails)
        found = (clean, tuple(hits), frozenset(values))
        if len(self._memo) >= MEMO_STRINGS:
            self._memo = {}
        self._memo[text] = found
        return found

    def redacted_values(self, text: str) -> frozenset[str]:
        """The values (secrets found by a rule or detector) `scrub_text(text)` redacted:
        for a caller that scrubs its own way (`SessionScrubber`), to redact them elsewhere."""
        return (self._memo.get(text) or self._remember(text))[2]

    def _scan(self, text: str, values: set[str]) -> tuple[str, list[str]]:
        hits: list[str] = []
        if self._known is not None:
            known = self._known

            def replace_known(match: re.Match[str]) -> str:
                hits.append(self._labels[match.group(0)])
                return REDACTED

            text = known.sub(replace_known, text)
            text = self._held_runs(text, hits)
        shaped = SHAPE_PREFILTER.search(text) is not None
        personal = self.personal and PERSONAL_PREFILTER.search(text) is not None
        homes = self.personal and HOME_HINT.search(text) is not None
        if not (shaped or personal or homes):
            return text, hits
        if self._digest is not None and self._digest.fullmatch(text):
            return text, hits
        stash: list[str] = []
        if SET_ASIDE_HINT.search(text):

            def set_aside(match: re.Match[str]) -> str:
                stash.append(match.group(0))
                return _STASH.format(len(stash) - 1)

            text = SET_ASIDE.sub(set_aside, text)
        for start, end in reversed(demo_spans(text)):  # a JWT anyone can sign: llm.demo_tokens
            stash.append(text[start:end])
            text = text[:start] + _STASH.format(len(stash) - 1) + text[end:]
        if shaped:
            text = self._rules_pass(text, self._rules, hits, values)
            found = list(secrets_in(text))
            if found:  # a DOI, an ETag, a cache key's digest: public wherever they stand
                public = blank_public(text)
                found = [(kind, value) for kind, value in found if value in public]
            text = self._detected(text, found, "detect_secrets", hits, values)
        if homes:
            text = self._rules_pass(text, self._home_rules, hits, values)
        if personal:
            text = self._rules_pass(text, self._personal_rules, hits, values)
            text = self._detected(text, personal_in(text), "personal", hits, values)
        for i, original in enumerate(stash):
            text = text.replace(_STASH.format(i), original)
        return text, hits

    def _held_runs(self, text: str, hits: list[str]) -> str:
        """Known values re-wrapped (split over lines, quoted, escaped): `llm.views`."""
        spans = self._held.spans(text) if self._held is not None else []
        for start, end in reversed(spans):
            text = text[:start] + REDACTED + text[end:]
            hits.append("held:re-wrapped")
        return text

    @staticmethod
    def _rules_pass(text: str, rules: list[Rule], hits: list[str], values: set[str]) -> str:
        for name, pattern, decide in rules:

            def replace_shape(match: re.Match[str], name: str = name, decide: Any = decide) -> str:
                result: str | None = decide(match)
                if result is None:
                    return match.group(0)
                hits.append(f"shape:{name}")
                if REDACTED in result:  # a home folder's `~` is no value to hunt elsewhere
                    for removed in _removed(match.group(0), result):
                        values.update(_parts(removed))
                return result

            text = pattern.sub(replace_shape, text)
        return text

    @staticmethod
    def _detected(
        text: str, found: Iterable[tuple[str, str]], layer: str, hits: list[str], values: set[str]
    ) -> str:
        """Every occurrence of each value a detector found, longest first, redacted."""
        kinds: dict[str, str] = {}
        for kind, value in found:
            if REDACTED not in value and len(value.strip()) >= 4:
                kinds.setdefault(value, kind)
        for value in sorted(kinds, key=len, reverse=True):
            if value in text:
                hits += [f"{layer}:{kinds[value]}"] * text.count(value)
                text = text.replace(value, REDACTED)
                values.add(value)
        return text

    def scrub_text(self, text: str) -> str:
        return self._apply(text)[0]

    def scrub(self, obj: Any) -> Any:
        """Scrubbed copy of str / dict / list / tuple structures; other values pass through.
        The value is one unit: a secret found in one of its strings is redacted in all."""
        outer = self._redacted is None
        if outer:
            self._redacted = set()
        try:
            clean = self._clean(obj, None)
            values = self._redacted
        finally:
            if outer:
                self._redacted = None
        if not outer or not values:
            return clean
        return replace_everywhere(clean, values)

    def _clean(self, obj: Any, field: str | None) -> Any:
        # `_walk` without collecting hit labels: every file written passes through here, so
        # the exact built-in types are told apart first (an isinstance check against the
        # Mapping ABC costs as much as the rest of a visit; 125 -> 79 us per transcript).
        kind = type(obj)
        if kind in _SCALARS:
            return obj
        if kind is str or isinstance(obj, str):
            if field is not None and len(obj) >= MIN_SECRET_LEN and SECRET_FIELD_NAME.search(field):
                if self._redacted is not None and obj != REDACTED:
                    self._redacted.add(obj)
                return obj if obj == REDACTED else REDACTED
            found = self._memo.get(obj) or self._remember(obj)
            if self._redacted is not None and found[2]:
                self._redacted |= found[2]
            return found[0]
        clean = self._clean
        if kind is dict or isinstance(obj, Mapping):
            return {
                (clean(k, None) if isinstance(k, str) else k): clean(
                    v, k if isinstance(k, str) else None
                )
                for k, v in obj.items()
            }
        if kind is list or isinstance(obj, list):
            return [clean(item, None) for item in obj]
        if isinstance(obj, tuple):
            return tuple(clean(item, None) for item in obj)
        return obj

    def leaks(self, obj: Any) -> list[str]:
        """Labels (never values) of every secret found, e.g. 'env:OPENAI_API_KEY'."""
        return self._walk(obj, None)[1]

    def _walk(self, obj: Any, field: str | None) -> tuple[Any, list[str]]:
        if isinstance(obj, str):
            if field is not None and SECRET_FIELD_NAME.search(field) and len(obj) >= MIN_SECRET_LEN:
                if obj == REDACTED:
                    return obj, []
                return REDACTED, [f"field:{field}"]
            return self._apply(obj)
        if isinstance(obj, Mapping):
            out: dict[Any, Any] = {}
            hits: list[str] = []
            for key, value in obj.items():
                new_key, key_hits = self._walk(key, None) if isinstance(key, str) else (key, [])
                new_value, value_hits = self._walk(value, key if isinstance(key, str) else None)
                out[new_key] = new_value
                hits += key_hits + value_hits
            return out, hits
        if isinstance(obj, list | tuple):
            items = [self._walk(item, None) for item in obj]
            values = [v for v, _ in items]
            flat = [h for _, hs in items for h in hs]
            return (values if isinstance(obj, list) else tuple(values)), flat
        return obj, []


def _removed(matched: str, replaced: str) -> list[str]:
    """The parts of `matched` a rule's replacement put [REDACTED] for (`DB_PASSWORD=pw1`
    -> `DB_PASSWORD=[REDACTED]`: `pw1`; a command line with two passwords: both)."""
    kept = replaced.split(REDACTED)
    if not matched.startswith(kept[0]) or not matched.endswith(kept[-1]):
        return [matched]
    found, at = [], len(kept[0])
    end = len(matched) - len(kept[-1])
    for literal in kept[1:-1]:
        following = matched.find(literal, at + 1, end) if literal else -1
        if following < 0:
            return [matched]
        found.append(matched[at:following])
        at = following + len(literal)
    found.append(matched[at:end])
    return found


def _parts(removed: str) -> set[str]:
    """The value a rule removed and the forms it may stand in alone elsewhere: a URL's
    `user:password` goes whole (the password alone), a connection string's value runs on
    (`pw;encrypt=true`, `pw&ssl=1`), quotes and brackets cling to it (`pw`)`)."""
    found = {removed, removed.partition(":")[2]}
    found.update(_DATE_PART.findall(removed))  # a birth date said again without its name
    for value in list(found):
        first = re.split(r"[;&]", value, maxsplit=1)[0]
        found |= {first, value.strip(_CLINGING), first.strip(_CLINGING)}
    return found


_CLINGING = "`'\"()[]{}<>,;. "
_DATE_PART = re.compile(r"\d{1,4}[./\-年]\s?\d{1,2}[./\-月]\s?\d{2,4}日?")


def _first_kind(hits: list[str]) -> str:
    return hits[0].split(":", 1)[-1] if hits else "value"


def value_pattern(values: Iterable[str]) -> re.Pattern[str] | None:
    """Every value (longest first), and the first characters of each random-looking one cut
    short anywhere after its first TRUNCATED_MIN (a command line quoting a key's first 60
    characters, a log line's ellipsis): one nested optional group per character, so a match
    runs as far as the text follows the value."""
    wanted = sorted({v for v in values if len(v.strip()) >= MIN_SECRET_LEN}, key=len, reverse=True)
    if not wanted:
        return None
    parts = [re.escape(v) for v in wanted]
    for value in wanted:
        head = value[:TRUNCATED_MIN]
        if len(value) > TRUNCATED_MIN and sum(bool(c.search(head)) for c in _CLASSES) >= 2:
            rest = value[TRUNCATED_MIN:TRUNCATED_SPAN]
            nested = "".join("(?:" + re.escape(c) for c in rest) + ")?" * len(rest)
            parts.append(re.escape(head) + nested)
    return re.compile("|".join(parts))


def replace_everywhere(obj: Any, values: Iterable[str]) -> Any:
    """`obj` with every occurrence of each value (longest first) in any of its strings,
    keys included, replaced by [REDACTED]: the second pass over a unit being scrubbed. Runs
    of a value re-wrapped elsewhere in the unit go too (`llm.views`: a reply that echoes a
    request wrapped at 60 columns leaves a key's tail alone on the next line)."""
    values = list(values)
    pattern = value_pattern(values)
    if pattern is None:
        return obj
    held = HeldSecrets(v for v in values if len(v.strip()) >= MIN_SECRET_LEN)

    def clean(text: str) -> str:
        text = pattern.sub(REDACTED, text)
        for start, end in reversed(held.spans(text)):
            text = text[:start] + REDACTED + text[end:]
        return text

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return clean(value) if value != REDACTED else value
        if isinstance(value, Mapping):
            return {walk(k): walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, tuple):
            return tuple(walk(v) for v in value)
        return value

    return walk(obj)


_DEFAULT: dict[bool, Scrubber] = {}


def scrub_text(text: str, *, personal: bool = True) -> Scrubbed:
    """`text` with every secret (and, by default, personal number) replaced by [REDACTED],
    with the count of each kind removed: the one call for text about to leave the machine.
    Values of secret-named environment variables of this process count as known secrets."""
    scrubber = _DEFAULT.get(personal)
    if scrubber is None:
        scrubber = _DEFAULT[personal] = Scrubber.from_environment(personal=personal)
    clean, hits = scrubber._apply(text)
    return Scrubbed(clean, dict(Counter(hits)))
