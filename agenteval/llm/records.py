"""Values a record names in another field: a secret whose name stands in a sibling field,
and personal data in a table's column whose header names it.

API tools export a header or a variable as a pair of fields, the name in one and the value
in the other: Postman's `{"key": "x-algolia-api-key", "value": "..."}`, a HAR file's and
Insomnia's `{"name": "Authorization", "value": "..."}`, a Kubernetes env entry's
`- name: DB_PASSWORD` / `value: ...`, Maven's `<name>token</name><value>...</value>`. No
`NAME: value` rule sees those: the name is the key field's VALUE. `sibling_rules()` redacts the
value when the name says secret (either order of the two fields, other fields between).

A CSV, TSV or Markdown table with a header row names its columns: a column headed name,
surname, birth date, phone, e-mail, address, passport ... (several languages) holds personal
data in every row, whatever each cell looks like (`Marta,Kowalczyk,1962-02-09`).
`private_columns(text)` gives the text with those cells redacted, and the values.
"""

from __future__ import annotations

import csv
import re

from agenteval.llm.secret_rules import REDACTED, Rule

# What a sibling field's name says is secret: api keys, tokens, passwords, auth headers.
_SECRET_FIELD = re.compile(
    r"(?i:pass(?:word|wd|phrase)?|pwd|secret|token|api[_\-.\s]?key|apikey|[_\-.]key$|key$"
    r"|^key|auth(?:orization)?|cookie|credential|session|signature|private|bearer|\bpat\b"
    r"|access[_\-]?key|client[_\-]?secret|webhook|dsn|license)"
)
_NAME_FIELD = r"(?:key|name|header|variable|var|id|param(?:eter)?|field)"
_VALUE_FIELD = r"(?:value|val|default|current_?value|initial_?value|initialValue|currentValue)"
_JSON_STR = r"\"(?P<{g}>[^\"\\\n]*(?:\\.[^\"\\\n]*)*)\""
# Other fields of the same object between the two: `"type": "string", "enabled": true,`.
_OTHER = r"(?:\"\w+\"\s*:\s*(?:\"[^\"\n]*\"|true|false|null|-?\d+)\s*,\s*){0,4}"
_NAME_THEN_VALUE = re.compile(
    rf"\"{_NAME_FIELD}\"\s*:\s*{_JSON_STR.format(g='name')}\s*,\s*{_OTHER}"
    rf"\"{_VALUE_FIELD}\"\s*:\s*{_JSON_STR.format(g='value')}",
    re.IGNORECASE,
)
_VALUE_THEN_NAME = re.compile(
    rf"\"{_VALUE_FIELD}\"\s*:\s*{_JSON_STR.format(g='value')}\s*,\s*{_OTHER}"
    rf"\"{_NAME_FIELD}\"\s*:\s*{_JSON_STR.format(g='name')}",
    re.IGNORECASE,
)
# YAML (a Kubernetes env entry, a CI variable) and XML forms of the same pair.
_YAML_PAIR = re.compile(
    rf"(?im)^[ \t]*-?[ \t]*{_NAME_FIELD}:[ \t]*[\"']?(?P<name>[\w.\-]+)[\"']?[ \t]*\n"
    rf"(?:[ \t]+\w+:[^\n]*\n){{0,2}}[ \t]+{_VALUE_FIELD}:[ \t]*[\"']?(?P<value>[^\s\"'#]+)"
)
_XML_PAIR = re.compile(
    rf"(?i)<{_NAME_FIELD}>(?P<name>[^<]{{1,80}})</{_NAME_FIELD}>\s*"
    rf"<{_VALUE_FIELD}>(?P<value>[^<]{{1,400}})</{_VALUE_FIELD}>"
)
# A sibling field's value that is no secret: a placeholder or a reference to one.
_NOT_A_VALUE = re.compile(
    r"\{\{.*\}\}|\$\{?\w+\}?|<[^>]*>|%\w+%|\[REDACTED\]|(?i:x{3,}|\*{3,}|true|false|null|none"
    r"|changeme|your[_\-].*|string|secret|password|bearer|basic|apikey|header|query|text)"
)
MIN_VALUE = 6
RECORD_HINT = r"(?i:[\"'<]?\b(?:value|val|default|current_?value|initial_?value)\b[\"'>]?\s*[:=>])"


def _sibling(match: re.Match[str]) -> str | None:
    name, value = match.group("name"), match.group("value")
    words = value.split()  # an Authorization header's scheme stays: `Bearer <token>`
    scheme = len(words) == 2 and words[0].lower() in ("bearer", "token", "basic")
    secret = words[-1] if scheme else value
    if not _SECRET_FIELD.search(name) or len(secret) < MIN_VALUE or _NOT_A_VALUE.fullmatch(secret):
        return None
    start = match.start("value") - match.start() + (len(value) - len(secret))
    whole = match.group(0)
    return whole[:start] + REDACTED + whole[start + len(secret) :]


def sibling_rules() -> list[Rule]:
    return [
        ("sibling_value", pattern, _sibling)
        for pattern in (_NAME_THEN_VALUE, _VALUE_THEN_NAME, _YAML_PAIR, _XML_PAIR)
    ]


# -- tables with a header row ---------------------------------------------------------------
_SEP = r"[ _\-.]?"
# A column only a person's data is in (a table with one is a table of people) ...
_PERSON_COLUMN = re.compile(
    rf"(?i)^(?:(?:first|last|given|family|middle|full|sur|maiden|legal|patient|employee"
    rf"|customer|client|contact|person|holder|member|account{_SEP}holder){_SEP}name|surname"
    rf"|forename|apellidos?|pr[ée]nom|vorname|nachname|cognome|sobrenome|voornaam|achternaam"
    rf"|patient|paciente|patientin|employee|mitarbeiter(?:in)?|(?:date{_SEP}of{_SEP})?birth"
    rf"(?:{_SEP}date|day)?|dob|birthdate|birthday|geburtsdatum|geburtstag|fecha{_SEP}"
    rf"(?:de{_SEP})?nacimiento|date{_SEP}de{_SEP}naissance|data{_SEP}(?:di{_SEP})?nascita"
    rf"|phone|phone{_SEP}(?:number|no)|telephone|telefon|tel[ée]fono|mobile|handy|e-?mail"
    rf"|email{_SEP}address|correo|street|street{_SEP}address|address{_SEP}line{_SEP}\d"
    rf"|anschrift|direcci[óo]n|indirizzo|ssn|nino|national{_SEP}id|passport"
    rf"|passport{_SEP}(?:no|number)|iban|account{_SEP}(?:no|number)|card{_SEP}number"
    rf"|tax{_SEP}id|dni|nie|nif|cpf|curp|pesel|bsn|personnummer|steuer{_SEP}id)$"
)
# ... and one that holds it in such a table: `name`, `first`, `address`, `zip`.
_PERSON_TOO = re.compile(
    rf"(?i)^(?:name|names|first|last|nombre|nom|nome|naam|contact|customer|client|kunde"
    rf"|address|adresse|addr|zip|zip{_SEP}code|post{_SEP}code|postal|plz|tel|cell|fax|mail"
    rf"|card|cc|sin)$"
)
_DELIMITERS = (",", "\t", ";", "|")
MIN_CELL = 2
_NO_CELL = re.compile(r"[\-:| ]+|person\d+@example\.com")  # a separator row, a fixture


def _cells(line: str, delimiter: str) -> list[str]:
    if delimiter == "|":
        return [c.strip() for c in line.strip().strip("|").split("|")]
    return [c.strip() for c in next(csv.reader([line], delimiter=delimiter), [])]


_HEADER_CELL = re.compile(r"[A-Za-z_\u00c0-\u024f][\w .\-()\u00c0-\u024f]{0,30}")
Table = tuple[str, list[int], int]  # delimiter, personal columns, cells a row has


def _header(line: str) -> Table | None:
    """The delimiter, personal columns and width of a header row, if `line` is one of a
    table of people (a column only a person's data is in)."""
    for delimiter in _DELIMITERS:
        if line.count(delimiter) < (2 if delimiter == "|" else 1):
            continue
        cells = [c.strip("\"' *") for c in _cells(line, delimiter)]
        if len(cells) < 2 or not all(_HEADER_CELL.fullmatch(c) for c in cells):
            continue
        if any(_PERSON_COLUMN.match(c) for c in cells):
            columns = [
                i for i, c in enumerate(cells) if _PERSON_COLUMN.match(c) or _PERSON_TOO.match(c)
            ]
            return delimiter, columns, len(cells)
    return None


def _redact_row(line: str, table: Table, values: set[str]) -> str:
    delimiter, columns, _ = table
    cells = _cells(line, delimiter)
    cursor = 0
    for index, cell in enumerate(cells):
        at = line.find(cell, cursor) if cell else cursor
        if (
            index in columns
            and len(cell) >= MIN_CELL
            and REDACTED not in cell
            and not _NO_CELL.fullmatch(cell)
        ):
            values.add(cell)
            line = line[:at] + REDACTED + line[at + len(cell) :]
            cell = REDACTED
        cursor = at + len(cell)
    return line


# An SQL insert names its columns: `INSERT INTO users (name, birth_date) VALUES ('...', ...)`.
_SQL_INSERT = re.compile(
    r"(?is)\binsert\s+into\s+[\w.\"`\[\]]+\s*\((?P<columns>[^()]{1,400})\)\s*values\s*"
    r"(?P<rows>(?:\((?:[^()']|'(?:[^']|'')*')*\)\s*,?\s*){1,50})"
)
_SQL_ROW = re.compile(r"\(((?:[^()']|'(?:[^']|'')*')*)\)")


def _sql_values(text: str) -> set[str]:
    """The personal columns' values of each SQL insert in `text`."""
    found: set[str] = set()
    for insert in _SQL_INSERT.finditer(text):
        columns = [c.strip(' "`[]\n') for c in insert.group("columns").split(",")]
        if not any(_PERSON_COLUMN.match(c) for c in columns):
            continue
        personal = {
            i for i, c in enumerate(columns) if _PERSON_COLUMN.match(c) or _PERSON_TOO.match(c)
        }
        for row in _SQL_ROW.finditer(insert.group("rows")):
            cells = next(csv.reader([row.group(1)], quotechar="'", skipinitialspace=True), [])
            found |= {c.strip() for i, c in enumerate(cells) if i in personal}
    return {v for v in found if len(v) >= MIN_CELL and not _NO_CELL.fullmatch(v) and v != "NULL"}


def private_columns(text: str) -> tuple[str, frozenset[str]]:
    """`text` with every cell of a personal column of each table redacted (a table runs
    from its header row while rows have its delimiter), and those cells' values."""
    values = _sql_values(text) if "values" in text.lower() else set()
    for value in sorted(values, key=len, reverse=True):
        text = text.replace(value, REDACTED)
    if "\n" not in text:
        return text, frozenset(values)
    lines = text.split("\n")
    table: Table | None = None
    for number, line in enumerate(lines):
        if table is not None and len(_cells(line, table[0])) == table[2]:
            lines[number] = _redact_row(line, table, values)
            continue
        table = _header(line)
    if not values:
        return text, frozenset()
    return "\n".join(lines), frozenset(values)
