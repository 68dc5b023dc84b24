"""Secrets known by what carries them, not by their shape: a webhook URL's generated path
segments, a setter's value with its NAME apart (cookies: `llm.credential_forms`).

Each is a kind of carrier (any webhook host, any shell's setter), so a value of any shape is
caught where the carrier says it is a credential; what the carrier says is not (a webhook
route's words) stays.
"""

from __future__ import annotations

import re

from agenteval.llm.secret_rules import ENV_SECRET, REDACTED, Rule, keep_plausible

# A generated path segment: 16 characters or more, or a short id of letters and digits
# alone (Zapier's `/hooks/catch/123456/5uts1cj/`); a route's words (`stripe-v2`, `v1`) stay.
_GENERATED_SEGMENT = re.compile(r"(?<![^/@])(?:[A-Za-z0-9_\-]{16,}|[A-Za-z0-9]{6,15})(?=[/@?#]|$)")


def _generated(segment: str) -> bool:
    """A digit among its characters and more than three distinct ones: a placeholder's
    `T00000000` or `123` is written, not generated."""
    return any(c.isdigit() for c in segment) and len(set(segment)) > 3


def _hook_segments(match: re.Match[str]) -> str | None:
    """A webhook URL with each path segment that was generated (a digit among them)
    redacted: the host, the route's words and the query stay."""
    url = match.group(0)
    out = _GENERATED_SEGMENT.sub(lambda m: REDACTED if _generated(m.group(0)) else m.group(0), url)
    return out if out != url else None  # None: nothing found (the scrubber counts a hit)


def carrier_rules() -> list[Rule]:
    return [
        # Any other incoming webhook (Teams, Zapier, Mattermost, a CI's): a URL whose host
        # or path says hook carries its secret in the path; every generated segment goes.
        (
            "webhook_any",
            re.compile(
                r"(?i)https?://[^\s/\"'<>]*hook[^\s\"'<>]*|https?://[^\s/\"'<>]+/[^\s\"'<>]*hook[^\s\"'<>]*"
            ),
            _hook_segments,
        ),
        # A setter with the NAME and the value apart: fish's `set -gx`, csh's `setenv`,
        # Windows' `setx`, a Dockerfile's `ENV NAME value`.
        (
            "shell_setter",
            re.compile(
                r"(?i:(\b(?:set(?:\s+-[a-z]+)*|setx|setenv)\s+|(?m:^)[ \t]*(?-i:ENV)\s+)"
                r"(?-i:" + ENV_SECRET + r")\s+[\"']?)"
                r"(?P<value>[^\s\"'`]{8,})"
            ),
            keep_plausible,
        ),
    ]
