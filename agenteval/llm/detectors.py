"""The maintained detectors behind the scrubber: detect-secrets' plugins and libphonenumber.

detect-secrets (Yelp) ships a plugin per provider's key format (AWS, Azure storage, Stripe,
Twilio, SendGrid, Mailchimp, Square, Telegram, Discord, npm, PyPI, private keys...) plus
`KeywordDetector` (a quoted or configured value after a secret-sounding name) and
`Base64HighEntropyString` (quoted random strings). Its plugins are run on the text as it is,
never through its file scanner (no settings, no verification calls over the network), and
every value they find goes through its own false-positive heuristics and the project's
placeholder check before it is redacted. Skipped: `HexHighEntropyString` (every digest the
project writes is high-entropy hex) and `IPPublicDetector` (addresses are not credentials).

Phone numbers are confirmed by `phonenumbers` (libphonenumber's port, called directly: the
engine scrubadub's PhoneDetector wraps, without its whole catalogue's 6.5 CPU-s of import),
only on digit runs a cheap pattern found first (matching whole texts costs ~3 ms a
kilobyte). Social security, card, IBAN and identity numbers are `llm.personal`'s rules.
Both packages are imported on first use, so the CLI starts without them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from agenteval.llm.personal import PHONE_CANDIDATE
from agenteval.llm.public_ids import business_line, fictional_number
from agenteval.llm.secret_rules import decodes_to_prose, example_key, plausible_secret

# National formats are read as these countries write them (libphonenumber's regions): the
# ones the project's users are most likely to paste; a number with its +country code is
# read whatever its country. A run of digits without a separator is no phone number here
# (an id, an epoch, a count), nor is a date, a ZIP+4 code, a dotted version or an address.
PHONE_REGIONS = ("US", "GB", "DE", "FR", "IN", "ES", "IT", "NL", "BR", "AU", "JP", "MX")
MIN_PHONE_DIGITS, MAX_PHONE_DIGITS = 7, 15
_NOT_PHONE = re.compile(
    r"\d+|\d{5}-\d{4}|\d{4}-\d{2}-\d{2}|\d{1,3}(?:\.\d{1,3}){1,3}|\d+(?:\.\d+)+\.\d{1,2}"
)
SKIPPED_PLUGINS = frozenset({"HexHighEntropyString", "IPPublicDetector", "KeywordDetector"})
# KeywordDetector costs ~130 us a line: it runs only on lines naming one of its keywords.
_KEYWORD_LINE = re.compile(r"(?i)pass|pwd|secret|token|key|cred|auth|private")
# Its names may go on past the keyword (`secret_name: prod-db-credentials`): a value of
# lowercase words alone is then a name, not a credential.
_SLUG = re.compile(r"[a-z]+(?:[-_.][a-z]+)+")
_KEYWORD_JUNK = re.compile(r"[\s,`]")


@lru_cache(maxsize=1)
def _plugins() -> tuple[list[Any], Any, list[dict[Any, int]]]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.keyword import (
        CONFIG_DENYLIST_REGEX_TO_GROUP,
        QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP,
        KeywordDetector,
    )

    classes: list[Any] = list(get_mapping_from_secret_type_to_class().values())
    plugins = [cls() for cls in classes if cls.__name__ not in SKIPPED_PLUGINS]
    plugins.sort(key=lambda p: type(p).__name__)
    maps = [QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP, CONFIG_DENYLIST_REGEX_TO_GROUP]
    return plugins, KeywordDetector(), maps


def _false_positive(value: str, line: str) -> bool:
    from detect_secrets.filters import heuristic

    return bool(
        heuristic.is_potential_uuid(value)
        or heuristic.is_templated_secret(value)
        or heuristic.is_prefixed_with_dollar_sign(value)
        or heuristic.is_sequential_string(value)
        or heuristic.is_indirect_reference(line)
        or not plausible_secret(value)
        or example_key(value)
        or decodes_to_prose(value)
    )


def secrets_in(text: str) -> Iterator[tuple[str, str]]:
    """(plugin name, secret value) for every secret detect-secrets' plugins find in `text`."""
    plugins, keyword, maps = _plugins()
    for plugin in plugins:
        limit = getattr(plugin, "entropy_limit", None)  # checked in analyze_line, not here
        for value in plugin.analyze_string(text):
            if limit is not None and plugin.calculate_shannon_entropy(value) <= limit:
                continue
            if value and not _false_positive(value, ""):
                yield type(plugin).__name__, value
    if not _KEYWORD_LINE.search(text):
        return
    for line in text.splitlines():
        if not _KEYWORD_LINE.search(line):
            continue
        for table in maps:
            for value in keyword.analyze_string(line, denylist_regex_to_group=table):
                value = value.strip("`'\":;,()[]{} ")
                if _KEYWORD_JUNK.search(value) or _SLUG.fullmatch(value):
                    continue  # its config patterns run on past the value in prose and tables
                if not _false_positive(value, line):
                    yield "KeywordDetector", value


def _public_line(raw: str, region: str) -> bool:
    return fictional_number(raw.strip()) or business_line(raw, region)


def personal_in(text: str) -> Iterator[tuple[str, str]]:
    """(kind, value) for the phone numbers libphonenumber confirms among `text`'s digit runs:
    any country's in international format (+49 30 901820), and national formats valid and
    grouped as one of `PHONE_REGIONS` writes them (06 12 34 56 78, (415) 555-0132)."""
    import phonenumbers
    from phonenumbers import Leniency

    for candidate in PHONE_CANDIDATE.finditer(text):
        raw = candidate.group(0)
        digits = sum(c.isdigit() for c in raw)
        if not MIN_PHONE_DIGITS <= digits <= MAX_PHONE_DIGITS or _NOT_PHONE.fullmatch(raw):
            continue
        # With its +code a number is read as any country writes it; without, only grouped
        # as its region groups it (06 12 34 56 78, not "seed 42 1337 2024" or "PID 12345
        # 67890", which are valid digits somewhere but no one's way of writing a number).
        international = raw.startswith("+")
        leniency = Leniency.VALID if international else Leniency.EXACT_GROUPING
        for region in PHONE_REGIONS[:1] if international else PHONE_REGIONS:
            matches = phonenumbers.PhoneNumberMatcher(raw, region, leniency=leniency)
            found = [m.raw_string for m in matches if not _public_line(m.raw_string, region)]
            if found:
                yield from (("phone", value) for value in found)
                break
