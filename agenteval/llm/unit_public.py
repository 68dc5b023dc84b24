"""A value a unit (a session case, a results file) shows in a public form is public where the
same unit quotes it bare: the base64 of `sha512-...` quoted alone in the answer, a KSUID its
name announces repeated in backticks, the `7641306850245` of "took 7641306850245 ns". Alone,
a bare random-looking token or long number is redacted (or costs its case); beside its own
public form in the same unit, it is that public thing.

Never for a value the scrubber redacts in its public form (a key `0x...` handed to
`Account.from_key`: hex is public only where no rule says otherwise), nor for one that any
of the unit's texts puts after a credential's word (`API_KEY=<value>`, "the password is
<value>"): there the secret rules still see it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from agenteval.llm.public_ids import blank_public

MIN_CHARS = 8  # shorter public tokens (ports, years) cost nothing bare either
_TOKEN = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/_\-]{8,}={0,2}(?![A-Za-z0-9+/=_\-])")
_CREDENTIAL_WORD = re.compile(
    r"(?i:pass|pwd|secret|token|key|cred|auth|sig|psk|login|private|bearer|cookie|session)"
)
_BEFORE = 40  # characters before a bare occurrence read for a credential's word
_PLACE = "\x00public{}\x00"


def public_values(texts: Iterable[str], redacted: Callable[[str], frozenset[str]]) -> list[str]:
    """The values some text of the unit shows in a public form, less those `redacted` (the
    scrubber's redacted values of a text) takes there, or a credential's word precedes
    elsewhere; longest first."""
    texts = [t for t in texts if isinstance(t, str)]
    found: dict[str, bool] = {}
    for text in texts:
        if not _TOKEN.search(text):
            continue
        blanked = blank_public(text)
        for match in _TOKEN.finditer(text):
            value = match.group(0)
            if any(c.isdigit() for c in value) and not blanked[match.start() : match.end()].strip():
                # ...and a digest after its algorithm's name: `sha512-<base64>` quoted bare
                tail = re.split(r"[-:]", value, maxsplit=1)[-1]
                for piece in {value, tail} if len(tail) >= MIN_CHARS else {value}:
                    found[piece] = found.get(piece, True) and piece not in redacted(text)
    public = {value for value, ok in found.items() if ok}
    for text in texts:
        present = [v for v in public if v in text]
        blanked = blank_public(text) if present else text
        for value in present:
            for match in re.finditer(re.escape(value), text):
                if not blanked[match.start() : match.end()].strip():
                    continue  # its public form: "key fingerprint is SHA256:<value>"
                before = text[max(0, match.start() - _BEFORE) : match.start()]
                if _CREDENTIAL_WORD.search(blank_public(before)):
                    public.discard(value)
                    break
    return sorted(public, key=len, reverse=True)


def hide(text: str, values: list[str]) -> str:
    """`text` with each bare public value replaced by a mark no rule reads (`restore` undoes
    it). Where it stands in its public form it stays: the rules that know that form (an SSH
    public key after `ssh-ed25519`) read it whole."""
    present = [(i, v) for i, v in enumerate(values) if v in text]
    if not present:
        return text
    blanked = blank_public(text)
    for i, value in present:
        spans = [m.span() for m in re.finditer(re.escape(value), text)]
        for start, end in reversed([(a, b) for a, b in spans if blanked[a:b].strip()]):
            text = text[:start] + _PLACE.format(i) + text[end:]
            blanked = blanked[:start] + _PLACE.format(i) + blanked[end:]
    return text


def restore(text: str, values: list[str]) -> str:
    for i, value in enumerate(values):
        text = text.replace(_PLACE.format(i), value)
    return text
