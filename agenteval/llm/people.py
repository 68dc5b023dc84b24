"""A person's name where a record or a salutation says it is one, in several languages.

Clinical, HR and legal text names its people after a label or a title: `Paciente: Inmaculada
Villalobos`, `Patientin Frau Greta Lindqvist`, `Employee: Tomasz Zielinski`, `Sr. García`,
`Mme Dubois`, `Beklagter: Jan de Vries`. No shape tells a name from other words, but the word
before it does. `redact_people(text)` redacts each such name and gives the names (and the
surnames alone, said again without the first name) for the caller to redact wherever else
they stand in the unit. A label is case-sensitive (`Name:`, never YAML's `name: build`), and a
bare `Name:` / `Nombre:` label needs two capitalised words.
"""

from __future__ import annotations

import re

from agenteval.llm.secret_rules import REDACTED

_UPPER = "A-ZÀ-ÖØ-ÞĀ-ſ"
_LOWER = "a-zß-öø-ÿā-ſ"
_WORD = rf"[{_UPPER}][{_LOWER}'’]+(?:-[{_UPPER}]?[{_LOWER}'’]+)*"  # Kai-Uwe, Okonkwo-Bello
_PARTICLE = r"(?:de|del|della|di|da|dos|das|do|van|von|der|den|la|le|y|e|bin|al|zu|ten|ter)"

# A title before a name: one capitalised word is enough (`Herr Müller`). English titles only
# after a record's label (`Patient: Mrs Okafor`): in prose they name people everyone knows
# and fictional ones (`Dr. Smith ran 3 Main tests`).
_ENGLISH_TITLES = r"Mr|Mrs|Ms|Mx|Miss|Dr|Prof"
_TITLES = (
    r"Herr|Frau|Hr|Fr|Monsieur|Madame|Mademoiselle|Mme|Mlle|M"
    r"|Sr|Sra|Srta|Señor|Señora|Don|Doña|Dña|Sig|Sig\.ra|Signor|Signora|Dott|Dott\.ssa"
    r"|Dona|Senhor|Senhora|Dhr|Mevr|Mevrouw|Pan|Pani"
)
# A name: capitalised words (a title is none: `Sr. García y Sra. López` is two names).
_NAME_WORD = rf"(?!(?:{_TITLES})\b){_WORD}"
_NAME = rf"(?P<name>{_NAME_WORD}(?:[ \t]+(?:{_PARTICLE}[ \t]+)?{_NAME_WORD}){{{{{{min}},3}}}})"

# A record's label before a name, in several languages (a parenthesis may come between:
# `Segundo paciente (Italia): ...`).
_LABELS = (
    r"[Pp]atient(?:in|e)?|[Pp]aciente|[Pp]aziente|[Pp]atiënt|[Ee]mployee|[Mm]itarbeiter(?:in)?"
    r"|[Aa]rbeitnehmer(?:in)?|[Ee]mplead[oa]|[Dd]ipendente|[Ff]uncion[áa]ri[oa]|[Mm]edewerker"
    r"|C(?:e|a)?|K(?:e|in)|[Pp]laintiff|[Dd]efendant|[Kk]läger(?:in)?"
    r"|[Bb]eklagte[rn]?|[Dd]emandante|[Dd]emandad[oa]|[Cc]laimant|T|M(?:in)?"
    r"|A|B(?:in)?|W|Z(?:e|in)|T|R"
    r"|B(?:in)?|S(?:in)?|A[oa]|É|B"
    r"|I|[Vv]ersicherte[rn]?|[Aa]segurad[oa]|[Aa]ssuré|D|[Vv]erstorbene[rn]?"
    r"|[Ee]mployee name|[Pp]atient name|[Nn]ame des Patienten|[Nn]ombre del paciente"
    r"|[Nn]om du patient|[Nn]ome del paziente|[Ff]ull name|[Ll]egal name"
)
_BARE_LABELS = r"Name|NAME|Nombre|Nom|Nome|Naam|Vorname und Name|Nombre y apellidos"

_TITLED = re.compile(rf"(?<![\w.])(?:{_TITLES})\.?[ \t]+" + _NAME.format(min=0) + r"(?![\w@.]\w)")
_LABELLED = re.compile(
    rf"(?<![\w])(?:{_LABELS})(?:[ \t]*\([^)\n]{{1,24}}\))?[ \t]*[:：\-–][ \t]*"
    rf"(?:(?:{_TITLES}|{_ENGLISH_TITLES})\.?[ \t]+)?" + _NAME.format(min=0)
)
_BARE = re.compile(rf"(?<![\w])(?:{_BARE_LABELS})[ \t]*[:：][ \t]*" + _NAME.format(min=1))
# Capitalised words that follow such a word but are no name: `Patient Portal`, `Dr. Who`.
_NOT_NAMES = frozenset(
    "The A An This That These Those None Null Unknown Yes No True False Portal Record Records"
    " Data Id ID Name Number Status Service Services Management Module Api API Table Form"
    " Dashboard Admin Support Care Safety List Details Info Information New Test Example".split()
)
MIN_NAME = 3


def _found(match: re.Match[str]) -> str | None:
    name = match.group("name")
    words = name.split()
    while words and words[-1] in _NOT_NAMES:
        words.pop()
    if not words or words[0] in _NOT_NAMES or len(" ".join(words)) < MIN_NAME:
        return None
    return " ".join(words)


def redact_people(text: str) -> tuple[str, frozenset[str]]:
    """`text` with each name a label or a title announces redacted, and the names (each
    also without its first word: a surname said again alone)."""
    names: set[str] = set()
    for pattern in (_LABELLED, _BARE, _TITLED):
        for match in pattern.finditer(text):
            name = _found(match)
            if name is not None:
                names.add(name)
                words = name.split()
                if len(words) >= 2 and len(" ".join(words[1:])) >= MIN_NAME + 2:
                    names.add(" ".join(words[1:]))
    if not names:
        return text, frozenset()
    for name in sorted(names, key=len, reverse=True):
        text = re.sub(rf"(?<![\w]){re.escape(name)}(?![\w])", REDACTED, text)
    return text, frozenset(names)
