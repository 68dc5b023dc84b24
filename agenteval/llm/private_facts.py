"""A named person beside a private fact about them: health, sick leave, pregnancy, salary.

`Daniel Okonkwo is starting chemotherapy`, `Lucía Fernández's new salary is 96,500 EUR`,
`Frau Schmidt ist krankgeschrieben (Bandscheibenvorfall)`, `Mehmet Yılmaz ... diyabet
hastası`: each word is harmless alone, the pair is what must not leave. What a rule can do
offline and fast: within one sentence (or clause between semicolons) that holds a word of
`FACTS` (health, diagnosis, sick leave, pregnancy, pay; English, German, French, Spanish,
Italian, Portuguese, Polish, Dutch, Turkish, Russian), redact every full name (two to four
capitalised words, a particle between them allowed, the first a given name `gender-guesser`'s
dictionary of some 40,000 first names of many countries knows; Cyrillic names unchecked) and
a detail in parentheses right after the fact's word (the diagnosis) when a name or a title
(`Frau`, `Mr`, `Pani` ...) stands in the clause. `redact_private_facts`
gives the names (and each surname alone) for the caller to redact wherever else they stand in
the unit.

What it cannot: a given name the dictionary lacks (`Chiamaka Obi`), a first name alone
(`Anna is on sick leave`: kept; one given name seldom names a person outside their own team),
a name in a script without capitals (Chinese, Arabic, Korean, Hindi: their cases carry ids
the residue gate drops them for), a fact in a word outside the lexicon (`she is having her
second round`) or told across sentences, a lower-cased name; and it redacts a public
figure's name beside such a word too.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from agenteval.llm.secret_rules import REDACTED

_UPPER = "A-ZÀ-ÖØ-ÞĀ-ſА-ЯЁ"
_LOWER = "a-zß-öø-ÿā-ſа-яё"
_WORD = rf"[{_UPPER}][{_LOWER}'’]+(?:-[{_UPPER}]?[{_LOWER}'’]+)*"
_PARTICLE = r"(?:de|del|della|di|da|dos|das|do|van|von|der|den|la|le|y|e|bin|al|zu|ten|ter)"
_FULL_NAME = re.compile(
    rf"(?<![\w@./\-])(?P<name>{_WORD}(?:[ \t]+(?:{_PARTICLE}[ \t]+)?{_WORD}){{1,3}})"
    rf"(?:'s|’s)?(?![\w@/\-]|\.\w)"
)
# Health, sick leave, pregnancy and pay, in ten languages (a word's stem where it bends).
FACTS = re.compile(
    r"(?i:\b(?:salar(?:y|ies)|wages?|pay\s+(?:rise|cut)|earns|compensation\s+is"
    r"|chemo\w*|cancer|tumou?r|diagnos\w*|sick\s+(?:leave|note)|medical\s+leave|maternity"
    r"|pregnan\w*|hiv|diabet\w*|depress(?:ion|ed)|anxiety\s+disorder|surgery|hospitali[sz]ed"
    r"|rehab\w*|burn-?out|miscarriage|dementia|epilep\w*|illness|terminally"
    r"|gehalt\w*|lohn|krank\w*|diagnose|krebs|chemotherapie|schwanger\w*|mutterschutz"
    r"|bandscheibe\w*|depression|salaire|rémunération|arrêt\s+maladie|maladie|chimio\w*"
    r"|enceinte|salario|sueldo|baja\s+médica|enfermedad|cáncer|quimio\w*|diagnóstic\w*"
    r"|embarazada|stipendio|retribuzione|malattia|cancro|tumore|diagnosi|incinta|salário"
    r"|doença|câncer|grávida|licença\s+médica|pensj\w*|wynagrodzeni\w*|zarob\w*|chorob\w*"
    r"|choruje|zwolnieni\w*\s+lekarsk\w*|nowotw\w*|chemioterapi\w*|diagnoz\w*|ciąż\w*"
    r"|depresj\w*|salaris|ziek\w*|kanker|zwanger\w*|maaş\w*|ücret\w*|hastası|hastalı\w*"
    r"|diyabet\w*|kanser\w*|kemoterapi\w*|teşhis\w*|raporlu|hamile|depresyon\w*"
    r"|зарплат\w*|оклад\w*|диагноз\w*|болезн\w*|больничн\w*|химиотерапи\w*|беремен\w*"
    r"|диабет\w*)\b|\bL4\b)"
)
# A sentence's or clause's end: `.`/`!`/`?` after a word of three letters (not `T.C.`,
# `Dr.` or a date's `30.11.`), a semicolon, a line break.
_CLAUSE_END = re.compile(r"(?<=[^\W\d_]{3}[.!?])\s+|;\s*|\n+")
_DETAIL = re.compile(r"[ \t]*\((?P<detail>[^()\n]{3,60})\)")
# Capitalised words that start sentences or name no one (stripped from a name's ends).
_NOT_NAMES = frozenset(
    "The A An This That These Those Our Your My His Her Their We I You He She They It Please"
    " Draft Translate Write Add Fill Check Summarise Summarize Hi Hello Dear Thanks Thank"
    " Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April"
    " May June July August September October November December HR Team Notes Note Re Fwd"
    " New Old Next Last Since From To In On At For And Or But If When Also Today Tomorrow"
    " Das Der Die Ein Eine Bitte Hallo Le La Les Un Une El Los Las Il Lo Gli Bu Şu Ve"
    " Salary Sick Leave Update Meeting Ticket Subject".split()
)
MIN_NAME = 5
_TITLE = re.compile(
    r"(?<![\w.])(?:Herr|Frau|Mr|Mrs|Ms|Mme|Madame|Monsieur|M|Sr|Sra|Pan|Pani|Bay|Bayan|Sayın"
    r"|Dhr|Mevr|Signor|Signora)\.?[ \t]+(?:\[REDACTED\]|[" + _UPPER + r"])"
)
_CYRILLIC = re.compile("[А-ЯЁ]")


@lru_cache(maxsize=1)
def _first_names() -> Any:
    import gender_guesser.detector as guesser  # ~0.6 s to load: only when a fact is named

    return guesser.Detector(case_sensitive=False)


def _given_name(word: str) -> bool:
    if _CYRILLIC.match(word):
        return True
    return bool(_first_names().get_gender(word.split("-")[0]) != "unknown")


def _names_in(clause: str) -> set[str]:
    names: set[str] = set()
    for match in _FULL_NAME.finditer(clause):
        words = re.sub(r"['’]s$", "", match.group("name")).split()  # Lucía's salary
        while words and words[0] in _NOT_NAMES:
            words.pop(0)
        while words and words[-1] in _NOT_NAMES:
            words.pop()
        name = " ".join(words)
        long_enough = len(words) >= 2 and len(name) >= MIN_NAME
        if long_enough and not FACTS.fullmatch(words[-1]) and _given_name(words[0]):
            names.add(name)
    return names


def redact_private_facts(text: str) -> tuple[str, frozenset[str]]:
    """`text` with each full name beside a private fact redacted (and the fact's detail in
    parentheses), and the names found (each also as its last word: a surname said again).
    A person named only by a title and surname (`Frau Schmidt`: who she is, her team knows)
    loses the fact itself too, in that clause."""
    if FACTS.search(text) is None:
        return text, frozenset()
    values: set[str] = set()
    pieces: list[str] = []
    start = 0
    for end in [m.start() for m in _CLAUSE_END.finditer(text)] + [len(text)]:
        clause = text[start:end]
        pieces.append(text[start:end])
        start = end
        fact = FACTS.search(clause)
        if fact is None:
            continue
        names = _names_in(clause)
        for name in names:
            values.add(name)
            surname = name.split()[-1]
            if len(surname) >= MIN_NAME:
                values.add(surname)
        titled = _TITLE.search(clause) is not None
        detail = _DETAIL.match(clause, fact.end())
        if detail is not None and (names or titled):
            values.add(detail.group("detail"))
        if titled and not names:
            pieces[-1] = clause[: fact.start()] + REDACTED + clause[fact.end() :]
    text = "".join(pieces)
    for value in sorted(values, key=len, reverse=True):
        text = re.sub(rf"(?<![\w]){re.escape(value)}(?![\w])", REDACTED, text)
    return text, frozenset(values)
