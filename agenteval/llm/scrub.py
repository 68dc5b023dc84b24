"""Credential scrubbing for everything the evaluation writes to disk.

Results are meant to be shared, and agents with shells print their environment, so every
written file goes through a Scrubber. Two layers: exact known secret values (taken from the
environment) and secret-shaped strings (provider key prefixes, bearer headers, labelled
assignments, long random-looking tokens). Known values catch keys of any shape; shapes
catch keys this process was never told about.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

REDACTED = "[REDACTED]"

# Environment variable names whose values are treated as secrets.
SECRET_ENV_NAME = re.compile(
    r"(^|_)API_KEY$|(^|_)TOKEN$|SECRET|PASSWORD|(^|_)ACCESS_KEY(_|$)", re.IGNORECASE
)
# Mapping keys whose string values are secrets whatever they look like.
SECRET_FIELD_NAME = re.compile(
    r"(api[_-]?key|authorization|password|passwd|secret|(access|refresh|auth|bearer)[_-]?token)$"
    r"|^token$",
    re.IGNORECASE,
)
# Shorter values would redact ordinary words and numbers all over the output.
MIN_SECRET_LEN = 8
# Hex strings of these lengths are far more often digests the project writes on purpose
# (uuid4().hex, git SHA-1, sha256 pins) than keys; known key values are still redacted.
DIGEST_HEX_LENGTHS = (32, 40, 64)

_LOWER_RUN = re.compile(r"[a-z]{8,}")
MEMO_STRINGS = 8192  # scrubbed strings remembered per Scrubber
_SCALARS = frozenset({int, float, bool, type(None)})  # values no rule can apply to

_Rule = tuple[str, re.Pattern[str], Callable[[re.Match[str]], str | None]]


def _whole(_: re.Match[str]) -> str:
    return REDACTED


def _keep_group1(match: re.Match[str]) -> str:
    return match.group(1) + REDACTED


def _shannon_bits(text: str) -> float:
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _random_looking(match: re.Match[str]) -> str | None:
    token = match.group(0).rstrip("=")
    upper = sum(ch.isupper() for ch in token)
    lower = sum(ch.islower() for ch in token)
    digits = sum(ch.isdigit() for ch in token)
    # All three character classes, high entropy and no word-length lowercase run keep
    # CamelCase identifiers out, while about 95% of random 32-character base62 keys (and
    # more of longer ones) still qualify; known values cover the rest.
    if min(upper, lower, digits) < 2 or _LOWER_RUN.search(token):
        return None
    return REDACTED if _shannon_bits(token) >= 4.2 else None


def _hex_key(exempt: tuple[int, ...]) -> Callable[[re.Match[str]], str | None]:
    def check(match: re.Match[str]) -> str | None:
        token = match.group(0)
        if len(token) in exempt:
            return None
        has_digit = any(ch.isdigit() for ch in token)
        has_letter = any(ch.isalpha() for ch in token)
        return REDACTED if has_digit and has_letter else None

    return check


# A necessary condition for any shape rule below to match: one cheap scan rejects most strings
# (tool names, statuses, prose) instead of fourteen. Keep it a superset of every rule's start.
SHAPE_PREFILTER = re.compile(
    r"(?i:://|bearer|basic|api[_-]?key|access[_-]?token|auth[_-]?token|secret|passw)"
    r"|sk-|gh[pousr]_|github_pat_|hf_|AIza|AKIA|ASIA|xox[abposr]-"
    r"|(?:gsk|fw|xai|glpat|pplx|nvapi|r8)[_\-]|eyJ|[A-Za-z0-9+/]{32}"
)


def _shape_rules(exempt_hex: tuple[int, ...]) -> list[_Rule]:
    boundary_l = r"(?<![A-Za-z0-9+/=_\-])"
    boundary_r = r"(?![A-Za-z0-9+/=_\-])"
    return [
        ("url_credentials", re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)"), _whole),
        (
            "auth_header",
            re.compile(r"(?i)\b((?:Bearer|Basic)\s+)[A-Za-z0-9._~+/\-]{8,}=*"),
            _keep_group1,
        ),
        (
            "labelled_secret",
            re.compile(
                r"(?i)\b((?:x-)?(?:api[_-]?key|access[_-]?token|auth[_-]?token|secret"
                r"|password|passwd)[\"']?\s*[:=]\s*[\"']?)(?!\[REDACTED\])[^\s\"',;]{8,}"
            ),
            _keep_group1,
        ),
        ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{8,}"), _whole),
        ("openai_key", re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"), _whole),
        (
            "github_token",
            re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,})"),
            _whole,
        ),
        ("huggingface_token", re.compile(r"\bhf_[A-Za-z0-9]{20,}"), _whole),
        ("google_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}"), _whole),
        ("aws_key_id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), _whole),
        ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"), _whole),
        (
            "prefixed_key",
            re.compile(r"\b(?:gsk|fw|xai|glpat|pplx|nvapi|r8)[_\-][A-Za-z0-9]{20,}"),
            _whole,
        ),
        (
            "jwt",
            re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
            _whole,
        ),
        (
            "hex_key",
            re.compile(boundary_l + r"[0-9a-fA-F]{32,}" + boundary_r),
            _hex_key(exempt_hex),
        ),
        (
            "random_token",
            re.compile(boundary_l + r"[A-Za-z0-9+/]{32,}={0,2}" + boundary_r),
            _random_looking,
        ),
    ]


class Scrubber:
    """Replaces secrets with `[REDACTED]` in strings and nested JSON-like structures."""

    def __init__(
        self,
        *,
        secret_values: Mapping[str, str] | Iterable[str] = (),
        exempt_hex_lengths: tuple[int, ...] = DIGEST_HEX_LENGTHS,
    ) -> None:
        if isinstance(secret_values, Mapping):
            labelled = list(secret_values.items())
        else:
            labelled = [("value", value) for value in secret_values]
        self._labels: dict[str, str] = {}  # secret value -> label safe to report
        for label, value in labelled:
            self._add(label, value)
        self._rules = _shape_rules(exempt_hex_lengths)
        # A lowercase hex string of an exempt length is a digest no shape rule redacts (hex_key
        # exempts it, random_token needs capitals): one match instead of fourteen, for the
        # digests every transcript and verdict carries.
        lengths = "|".join(f"[0-9a-f]{{{n}}}" for n in exempt_hex_lengths)
        self._digest = re.compile(f"(?:{lengths})") if lengths else None
        self._known: re.Pattern[str] | None = None
        # Results per string: a run writes the same strings (tool names, endpoint details,
        # retrieved passages) into thousands of files. Cleared whenever the secrets change.
        self._memo: dict[str, tuple[str, tuple[str, ...]]] = {}
        self._compile_known()

    @classmethod
    def from_environment(
        cls,
        api_key_envs: Iterable[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        exempt_hex_lengths: tuple[int, ...] = DIGEST_HEX_LENGTHS,
    ) -> Scrubber:
        """Known values: the named key variables plus any secret-looking variable name."""
        source = os.environ if env is None else env
        wanted = set(api_key_envs)
        values = {
            f"env:{name}": value
            for name, value in source.items()
            if name in wanted or SECRET_ENV_NAME.search(name)
        }
        return cls(secret_values=values, exempt_hex_lengths=exempt_hex_lengths)

    def _add(self, label: str, value: str) -> None:
        value = value.strip()
        if len(value) >= MIN_SECRET_LEN and value not in self._labels:
            self._labels[value] = label

    def _compile_known(self) -> None:
        self._memo = {}
        if not self._labels:
            self._known = None
            return
        # Longest first so a key that contains another known value is removed whole.
        ordered = sorted(self._labels, key=len, reverse=True)
        self._known = re.compile("|".join(re.escape(v) for v in ordered))

    def add_secret(self, value: str, label: str = "value") -> None:
        self._add(label, value)
        self._compile_known()

    def _apply(self, text: str) -> tuple[str, list[str]]:
        found = self._memo.get(text)
        if found is None:
            clean, hits = self._scan(text)
            found = (clean, tuple(hits))
            if len(self._memo) >= MEMO_STRINGS:
                self._memo = {}
            self._memo[text] = found
        return found[0], list(found[1])

    def _scan(self, text: str) -> tuple[str, list[str]]:
        hits: list[str] = []
        if self._known is not None:
            known = self._known

            def replace_known(match: re.Match[str]) -> str:
                hits.append(self._labels[match.group(0)])
                return REDACTED

            text = known.sub(replace_known, text)
        if SHAPE_PREFILTER.search(text) is None:
            return text, hits
        if self._digest is not None and self._digest.fullmatch(text):
            return text, hits
        for name, pattern, decide in self._rules:

            def replace_shape(match: re.Match[str], name: str = name, decide: Any = decide) -> str:
                result: str | None = decide(match)
                if result is None:
                    return match.group(0)
                hits.append(f"shape:{name}")
                return result

            text = pattern.sub(replace_shape, text)
        return text, hits

    def scrub_text(self, text: str) -> str:
        return self._apply(text)[0]

    def scrub(self, obj: Any) -> Any:
        """Scrubbed copy of str / dict / list / tuple structures; other values pass through."""
        return self._clean(obj, None)

    def _clean(self, obj: Any, field: str | None) -> Any:
        # `_walk` without collecting hit labels: every file written passes through here, so
        # the exact built-in types are told apart first (an isinstance check against the
        # Mapping ABC costs as much as the rest of a visit; 125 -> 79 us per transcript).
        kind = type(obj)
        if kind in _SCALARS:
            return obj
        if kind is str or isinstance(obj, str):
            if field is not None and len(obj) >= MIN_SECRET_LEN and SECRET_FIELD_NAME.search(field):
                return obj if obj == REDACTED else REDACTED
            found = self._memo.get(obj)
            return found[0] if found is not None else self._apply(obj)[0]
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
