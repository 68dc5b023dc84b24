"""A text as its reader will decode it, and a held secret however a reply re-wraps it.

A scrubber that reads only the bytes misses `j.okonkwo%40outlook.com` (an e-mail once a URL
is decoded) and `pass%23word` (a password once it is), and a JSON string's `\\n` or `\\u0040`
hide what the parsed value shows. `decoded_views` gives the percent-decoded and the
JSON-unescaped views of a text; the scrubber scans each and redacts what it found there in
every form the original may carry it (`encoded_forms`).

A known secret value (an endpoint's key, a secret-named variable's value) echoed back by an
endpoint may come split over lines, with quotes or `" + "` between its pieces, JSON-escaped
or URL-encoded. `HeldSecrets` finds any run of at least `PIECE` of its characters in order
with such separators between them and redacts the run. A run is found from a contiguous
`SEED` of the value (line wrapping and string concatenation leave pieces longer than that),
so a secret cut into pieces shorter than `SEED` characters each is not found. A base64 run
that encodes a held value at any alignment (`base64_cores`: an echoed `Authorization` header
base64-wrapped with the body after it) is redacted whole. A key a terminal wrapped over lines
(`wrapped_tails`) is learnt whole too, its head and tails joined, so that no 12-character
window of it survives a reply that joins or re-wraps the lines.
"""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus, unquote

PIECE = 12  # a run of this many of a secret's characters is that secret
SEED = 4  # a contiguous piece found first, then the run around it
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{4}|[nrtbf\"\\/])")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", '"': '"', "\\": "\\", "/": "/"}
# What a reply may put between a secret's pieces: blanks, line breaks (raw, JSON-escaped or
# URL-encoded), quotes and a string concatenation's plus and comma.
SEPARATOR = re.compile(r"(?:\s|\\[nrt]|\\\\|[\"'`+,]|%0[aAdD9]|%20|\+)+")


def _unescape(match: re.Match[str]) -> str:
    code = match.group(0)[1:]
    return chr(int(code[1:], 16)) if code[0] == "u" else _ESCAPES[code]


# An HTML character reference (`&#72;`, `&#x48;`, `&amp;`): a browser shows what it encodes.
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")


def decoded_views(text: str) -> list[str]:
    """The percent-decoded, JSON-unescaped and HTML-unescaped views of `text` that differ
    from it."""
    views: list[str] = []
    if "&" in text and _ENTITY.search(text):
        views.append(html.unescape(text))
    if "%" in text and _PERCENT.search(text):
        views.append(unquote(text))
    if "\\" in text and _ESCAPE.search(text):
        views.append(_ESCAPE.sub(_unescape, text))
        if views[0] != text and _ESCAPE.search(views[0]):
            views.append(_ESCAPE.sub(_unescape, views[0]))
    return [view for view in dict.fromkeys(views) if view != text]


def encoded_forms(value: str) -> set[str]:
    """`value` as a URL, a JSON string or HTML may carry it (every character a decimal or
    a hex reference, or only the markup's own escaped; `entity_pattern` finds a mix)."""
    forms = {value, quote(value, safe=""), quote(value, safe="/:@"), quote_plus(value)}
    forms.add(json.dumps(value, ensure_ascii=False)[1:-1])
    forms.add(json.dumps(value)[1:-1])
    forms.add(html.escape(value))
    forms.add("".join(f"&#{ord(c)};" for c in value))
    forms.add("".join(f"&#x{ord(c):x};" for c in value))
    return forms


def entity_pattern(value: str) -> re.Pattern[str]:
    """`value` with any of its characters written as an HTML character reference (a mix:
    `H&#116;5u`, which no one encoded form matches)."""
    parts = []
    for char in value:
        hex_digits = "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in f"{ord(char):x}")
        parts.append(f"(?:{re.escape(char)}|&#0*{ord(char)};|&#[xX]0*{hex_digits};)")
    return re.compile("".join(parts))


class HeldSecrets:
    """Finds runs of known secret values re-wrapped by separators (see the module's note)."""

    def __init__(self, values: Iterable[str]) -> None:
        self.values = sorted({v for v in values if len(v) >= SEED}, key=len, reverse=True)
        seeds: dict[str, list[tuple[str, int]]] = {}
        for value in self.values:
            for at in range(len(value) - SEED + 1):
                seeds.setdefault(value[at : at + SEED], []).append((value, at))
        self._seeds = seeds
        escaped = sorted(seeds, key=len, reverse=True)
        self._seed = re.compile("|".join(map(re.escape, escaped))) if escaped else None

        cores = {core for value in self.values for core in base64_cores(value)}
        ordered = sorted(cores, key=len, reverse=True)
        self._base64 = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of every run of `PIECE` or more characters of a held value (or the
        whole of a shorter one) in `text`, and of every base64 run that encodes one (an
        echoed `Authorization` header, base64-wrapped with what came after it), merged."""
        found = self._runs(text)
        if self._base64 is not None and self._base64.search(text):
            for match in self._base64.finditer(text):
                run = _BASE64_RUN.search(text, _run_start(text, match.start()))
                if run is not None:
                    found.append((run.start(), run.end()))
            found = _merged(found)
        return found

    def _runs(self, text: str) -> list[tuple[int, int]]:
        if self._seed is None:
            return []
        found: list[tuple[int, int]] = []
        for match in self._seed.finditer(text):
            if found and match.start() < found[-1][1]:
                continue
            best = None
            for value, at in self._seeds[match.group(0)]:
                start, first = _extend_back(text, match.start(), value, at)
                end, last = _extend(text, match.end(), value, at + SEED)
                if last - first >= min(PIECE, len(value)) and (
                    best is None or end - start > best[1] - best[0]
                ):
                    best = (start, end)
            if best is not None:
                found.append(best)
        return found


_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_\-]+=*")
_BASE64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-")


def base64_cores(value: str) -> set[str]:
    """What base64 (standard or URL-safe) makes of `value` wherever it stands in the encoded
    bytes: one form per alignment, without the characters its neighbours change."""
    cores: set[str] = set()
    raw = value.encode()
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + raw).decode()
        core = encoded[(4 if pad else 0) : len(encoded) - 4]
        if len(core) >= PIECE:
            cores |= {core, core.replace("+", "-").replace("/", "_")}
    return cores


def _run_start(text: str, pos: int) -> int:
    while pos > 0 and text[pos - 1] in _BASE64_CHARS:
        pos -= 1
    return pos


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _char_at(text: str, pos: int, char: str) -> int:
    """The position after `char` (as itself or %XX) at `pos`, or -1."""
    if text.startswith(char, pos):
        return pos + len(char)
    encoded = quote(char, safe="")
    if encoded != char and text[pos : pos + len(encoded)].upper() == encoded.upper():
        return pos + len(encoded)
    return -1


def _extend(text: str, pos: int, value: str, at: int) -> tuple[int, int]:
    """How far the run goes on after `pos` (text) / `at` (value)."""
    while at < len(value):
        step = _char_at(text, pos, value[at])
        if step < 0:
            gap = SEPARATOR.match(text, pos)
            if gap is None or (step := _char_at(text, gap.end(), value[at])) < 0:
                break
        pos, at = step, at + 1
    return pos, at


def _extend_back(text: str, pos: int, value: str, at: int) -> tuple[int, int]:
    """How far the run goes back before `pos` (text) / `at` (value)."""
    while at > 0:
        char = value[at - 1]
        if text.endswith(char, 0, pos):
            pos, at = pos - len(char), at - 1
            continue
        gap = _SEPARATOR_BEFORE.search(text, 0, pos)
        if gap is None or gap.end() != pos or not text.endswith(char, 0, gap.start()):
            break
        pos, at = gap.start() - len(char), at - 1
    return pos, at


_SEPARATOR_BEFORE = re.compile(SEPARATOR.pattern + r"\Z")


# A key pasted from a chat that wrapped it: a line holding nothing but a key-shaped run (a
# digit and both cases in it, 16+ characters), right after a line that ends in a redacted
# value, is that value's tail; so is the line after it. A line break may be raw, escaped
# (`\\n` in a JSON string a reply echoes) or URL-encoded, and a re-wrap may add one of its
# own. A line that begins another variable (`BUILD_ID=<uuid>`, the next line of an env
# listing) is none.
_BREAKS = r"(?:[ \t]*(?:\r?\n|\\+[rn]|%0[aAdD]))+[ \t]*"
_WRAPPED_TAIL = re.compile(
    rf"(\[REDACTED\][\"']?{_BREAKS}[\"']?)(?![A-Za-z_][A-Za-z0-9_]*=[^=\s])"
    r"(?=[A-Za-z_\-+/=]*\d)(?=[\w\-+/=]*[a-z])(?=[\w\-+/=]*[A-Z])"
    r"([A-Za-z0-9_\-+/=]{16,})(?=[\"'`]|[ \t]*(?:\r?\n|\\|%0[aAdD]|$))"
)
# The key's head in the original text: the run that ends the line before its first tail.
_HEAD = re.compile(rf"([A-Za-z0-9_\-+/=.]{{8,}})[\"']?{_BREAKS}[\"']?\Z")
MAX_TAILS = 8


def wrapped_tails(text: str, redacted: str, original: str = "") -> tuple[str, list[str]]:
    """`text` with each wrapped tail of a redacted value redacted, and the tails; with the
    `original` text, also the whole key they make with its head, joined (a reply that joins
    the lines again, or wraps them elsewhere, then leaves no 12-character window of it)."""
    tails: list[str] = []
    for _ in range(MAX_TAILS):
        match = _WRAPPED_TAIL.search(text)
        if match is None:
            break
        tails.append(match.group(2))
        text = text[: match.start(2)] + redacted + text[match.end(2) :]
    return text, tails + _joined(tails, original)


def _joined(tails: list[str], original: str) -> list[str]:
    """Each key the tails make with the head before them in `original`."""
    keys: list[str] = []
    for i, tail in enumerate(tails):
        at = original.find(tail)
        head = _HEAD.search(original, 0, at) if at > 0 else None
        if head is None or head.group(1) in tails:
            continue  # a later line of a key already joined
        key, end = head.group(1) + tail, at + len(tail)
        for rest in tails[i + 1 :]:
            gap = re.compile(rf"[\"']?{_BREAKS}[\"']?").match(original, end)
            if gap is None or not original.startswith(rest, gap.end()):
                break
            key, end = key + rest, gap.end() + len(rest)
        keys.append(key)
    return keys
