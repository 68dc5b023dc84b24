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
    r"|Dona|Senhor|Senhora|Dhr|Mevr|Mevrouw|dhr|mevr|mw|Pan|Pani"
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
    r"|[Pp]acjent(?:ka)?|[Pp]racownik|[Pp]t\.?(?:[ \t]+name)?|[Cc]li[ëe]nt"
    r"|[Ee]mployee name|[Pp]atient name|[Nn]ame des Patienten|[Nn]ombre del paciente"
    r"|[Nn]om du patient|[Nn]ome del paziente|[Ff]ull name|[Ll]egal name"
)
_BARE_LABELS = r"Name|NAME|Nombre|Nom|Nome|Naam|Vorname und Name|Nombre y apellidos"

_TITLED = re.compile(rf"(?<![\w.])(?:{_TITLES})\.?[ \t]+" + _NAME.format(min=0) + r"(?![\w@.]\w)")
_LABELLED = re.compile(
    rf"(?<![\w])(?:{_LABELS})(?:[ \t]*\([^)\n]{{1,24}}\))?[*_]*[ \t]*[:：\-–][*_]*[ \t]*"
    rf"(?:(?:{_TITLES}|{_ENGLISH_TITLES})\.?[ \t]+)?" + _NAME.format(min=0)
)
_BARE = re.compile(rf"(?<![\w])(?:{_BARE_LABELS})[*_]*[ \t]*[:：][*_]*[ \t]*" + _NAME.format(min=1))
# A label right before two or more capitalised words, no colon: `patient Eleanor Vance`.
_LABEL_BEFORE = re.compile(rf"(?<![\w])(?:{_LABELS})[ \t]+" + _NAME.format(min=1))
# Capitalised words that follow such a word but are no name: `Patient Portal`, `Dr. Who`.
_NOT_NAMES = frozenset(
    "The A An This That These Those None Null Unknown Yes No True False Portal Record Records"
    " Data Id ID Name Number Status Service Services Management Module Api API Table Form"
    " Dashboard Admin Support Care Safety List Details Info Information New Test Example"
    # job titles after an abbreviation that is also a title: `Sr. Software Engineer`
    " Software Engineer Engineering Developer Manager Director Analyst Designer Consultant"
    " Architect Scientist Staff Principal Product Backend Frontend Vice President Associate"
    " Series Edition Version Chip Team Group Department".split()
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


# -- people in records: a field whose name says it holds a person's name or birth date ---
_NAME_KEYS = (
    r"first[_\-]?name|firstName|last[_\-]?name|lastName|surname|given[_\-]?name|givenName"
    r"|family[_\-]?name|familyName|full[_\-]?name|fullName|middle[_\-]?name|maiden[_\-]?name"
    r"|(?:patient|employee|customer|contact|legal|member|holder)[_\-]?[Nn]ame"
    r"|birth[_\-]?[Dd]ate|birthDate|date[_\-]?of[_\-]?birth|dob|DOB|birthday|BDAY"
    r"|FN|N|cn|sn|ssn|SSN|name|first|last|given|family|displayName|display[_\-]name|nombre|apellidos?"
    r"|vorname|nachname|pr[ée]nom|cognome"
)
# A record's field (JSON, YAML, LDIF, vCard `TEL;TYPE=cell:`): the value to the line's end,
# or a JSON string, or a JSON list of strings (FHIR's `"given": ["Bożena"]`).
_PERSON_FIELD = re.compile(
    rf"(?m)(?:\"(?:{_NAME_KEYS})\"\s*:\s*(?:\"(?P<json>[^\"\n]{{2,80}})\""
    rf"|\[\s*\"(?P<list>[^\]\n]{{2,120}})\"\s*\])"
    rf"|^[ \t]*-?[ \t]*(?:{_NAME_KEYS})(?:;[\w=,\-]+)*[ \t]*[:=][ \t]*(?P<line>[^\n]{{2,80}}))"
)
# A bare `name`/`given`/`family` key counts only in a record of a person: one with such a
# field beside it (`"birthDate"`, `dob:`, vCard's BDAY, a Patient resource).
_PERSON_RECORD = re.compile(
    r"(?i:birth|\bdob\b|\bbday\b|\bssn\b|resourceType\"\s*:\s*\"(?:Patient|Practitioner"
    r"|RelatedPerson|Person)|BEGIN:VCARD|objectClass:\s*(?:inetOrgPerson|person))"
)
_WEAK_KEYS = re.compile(
    r"[\"\s\-]*(?:name|first|last|given|family|displayName|display[_\-]name|N|cn|nombre)\b"
)
# A display name before an e-mail address (`From: Ottilie Finch <o.f@mail.example>`).
_DISPLAY_NAME = re.compile(
    rf"(?P<name>{_WORD}(?:[ \t]+(?:{_PARTICLE}[ \t]+)?{_WORD}){{1,3}})[ \t]*<[^<>@\s]+@[^<>\s]+>"
)
# A passport's machine-readable zone, and an HL7 message's segments about a person.
# TD1/TD2/TD3 lines are 30, 36 or 44 characters; one copied by hand gains or loses a `<`.
_MRZ = re.compile(r"(?<![A-Z0-9<])(?=[A-Z0-9<]*<<)[A-Z0-9<]{28,48}(?![A-Z0-9<])")
# A row of a table without a header: a name in one cell, a birth year's date in another.
_OLD_DATE = r"(?:19\d\d|200\d)[\-./]\d\d[\-./]\d\d|\d\d[./\-]\d\d[./\-](?:19\d\d|200\d)"
_ROW_WITH_BIRTH = re.compile(
    rf"(?m)^(?=[^\n]*[,;\t|])(?=[^\n]*(?<![\d\-./])(?:{_OLD_DATE})(?![\d]))[^\n]+"
)
# A file or folder named for a person and a birth date (`Jan_Kowalski_1984-02-11.pdf`,
# `clients/weronika-mazur-1987-05-21/`): two or three name words, then a date of a birth
# year. Capitalised words name a person anywhere; lower-case ones under a folder of people.
_PEOPLE_FOLDER = (
    r"(?i:patients?|clients?|customers?|members?|employees?|staff|students?|pacjenci|klienci"
    r"|kunden|mitarbeiter|patienten|people|persons|users|applicants|candidates)"
)
_NAMED_FILE = re.compile(
    rf"(?<![\w])(?P<value>{_WORD}[_\- ]{_WORD}(?:[_\- ]{_WORD})?[_\-. ](?:{_OLD_DATE}))(?!\d)"
    rf"|{_PEOPLE_FOLDER}[/\\\-](?P<lower>[{_LOWER}]{{2,}}[_\-][{_LOWER}]{{2,}}"
    rf"(?:[_\-][{_LOWER}]{{2,}})?[_\-.](?:{_OLD_DATE}))(?!\d)"
)
_NAME_CELL = re.compile(
    rf"(?:^|(?<=[,;\t|]))[ \t]*\"?(?P<name>{_WORD}(?:[ \t]+(?:{_PARTICLE}[ \t]+)?{_WORD}){{1,3}})"
    r"\"?[ \t]*(?=[,;\t|]|$)"
)
_HL7 = re.compile(r"(?m)^(?:PID|NK1|GT1|IN1|IN2|PV1)\|[^|\n]*\|(?P<rest>[^\n]+)")


def _record_values(text: str) -> set[str]:
    found: set[str] = set()
    person = _PERSON_RECORD.search(text) is not None
    for match in _PERSON_FIELD.finditer(text):
        key_text = match.group(0)[: match.start(match.lastgroup or 0) - match.start()]
        if not person and _WEAK_KEYS.match(key_text.lstrip(" \t-")):
            continue
        raw = match.group(match.lastgroup or 0).strip().rstrip(",")
        parts = [p.strip(' "') for p in re.split(r"\"\s*,\s*\"|;", raw)]
        found |= {p for p in parts if len(p) >= MIN_NAME and not _placeholder(p)}
    found |= {m.group("name") for m in _DISPLAY_NAME.finditer(text) if _found(m)}
    found |= {m.group(0) for m in _MRZ.finditer(text)}
    found |= {m.group("rest") for m in _HL7.finditer(text)}
    for row in _ROW_WITH_BIRTH.finditer(text):
        found |= {m.group("name") for m in _NAME_CELL.finditer(row.group(0)) if _found(m)}
    return found


_PLACEHOLDER = re.compile(r"\[REDACTED\]|person\d+@example\.com|[<{$%].*|null|none|true|false")


def _placeholder(value: str) -> bool:
    return bool(
        re.fullmatch(r"\[REDACTED\]|person\d+@example\.com|[<{$%].*|null|none|true|false", value)
    )


def redact_people(text: str) -> tuple[str, frozenset[str]]:
    """`text` with each name a label or a title announces redacted, and the names (each
    also without its first word: a surname said again alone)."""
    names = _record_values(text)
    text, files = _redact_named_files(text)
    for pattern in (_LABELLED, _BARE, _LABEL_BEFORE, _TITLED):
        for match in pattern.finditer(text):
            name = _found(match)
            if name is not None:
                names.add(name)
                words = name.split()
                if len(words) >= 2 and len(" ".join(words[1:])) >= MIN_NAME + 2:
                    names.add(" ".join(words[1:]))
    if not names:
        return text, frozenset(files)
    for name in sorted(names, key=len, reverse=True):
        text = re.sub(rf"(?<![\w]){re.escape(name)}(?![\w])", REDACTED, text)
    return text, frozenset(names | files)


def _redact_named_files(text: str) -> tuple[str, set[str]]:
    """A file or folder's name and birth date redacted where it stands (`_MRI.pdf` after it
    is a word character: the word-bounded replacement of names would not reach it)."""
    found: set[str] = set()

    def redact(match: re.Match[str]) -> str:
        group = "value" if match.group("value") else "lower"
        found.add(match.group(group))
        start, end = match.span(group)
        return (
            match.group(0)[: start - match.start()]
            + REDACTED
            + match.group(0)[end - match.start() :]
        )

    return _NAMED_FILE.sub(redact, text), found
