"""The sources a reply credits its answer to, checked against the documents it could read.

"Section 14.2 of the policy", "Appendix C", "Table 3", "row 31 of the sheet", "the Annual
Reliability Review": a reply that names where its answer comes from makes a claim code can
check. Each reference is looked up in the documents the scenario indexed (its setup and
the turn's successful index/read calls):
- `missing`: no indexed document has it (a section number beyond every numbered heading,
  an appendix in a document that has none, a table in one without tables, a row past the
  end of a sheet, a titled document whose distinctive title words no indexed document's
  title has) — an invented source, an invented fact (reference 002: hallucination, 0);
- `elsewhere`: it exists, but its text does not hold the expected value — a finding;
- `unresolved`: code cannot tell (pages of a text file, a subsection below a heading that
  exists, an entry of a document without rows, a document that cannot be read) — defer.
A reference is credited when it is cited: in a sentence from a word that cites ("Source:",
"documented in", "stated on", "matches", "see", an opening parenthesis) on, or in the places
`credited` names. Besides numbered parts, an entry filed under an identifier ("entry
CP-27-004": the identifier is in a document or missing), a note ("Note 3": some document says
"Note 3" or none does), a filing ("Form 10-Q": some document names it) and a PDF (no indexed
file is one) are looked up.
References that are the answer itself ("Which section covers patents?" "Section 11") are
not sources and are never checked.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

MISSING, ELSEWHERE, HOLDS, UNRESOLVED = "missing", "elsewhere", "holds", "unresolved"

_KINDS = r"sections?|§|items?|clauses?|chapters?|parts?|paragraphs?|appendix|annex|schedule|"
_KINDS += r"exhibit|tables?|rows?|lines?|entry|entries|pages?|notes?|figures?|fig\.|footnotes?"
REFERENCE = re.compile(
    rf"(?:\b(?P<kind>{_KINDS})\s*|(?P<sym>§)\s*)\**"
    r"(?P<label>\d+(?:\.\d+)*(?:\([a-z]\)|[a-z](?![a-z]))?(?![\d]|,\d)|[A-Z]{1,5}-\d[\w-]*|"
    r"[A-Z]\b|[IVX]+\b)",
    re.I,
)
# An identifier a register or log files an entry under ("entry CP-27-004"): looked up verbatim.
_ID_LABEL = re.compile(r"[A-Z]{1,5}-\d[\w-]*", re.I)
# A titled document: capitalised words ending in a kind of document ("Annual Reliability
# Review 2026", "the Capital Projects Register", "the Warranty Terms & Conditions PDF"), or a
# securities filing ("Form 10-Q").
_DOC_KINDS = r"Report|Review|Register|Memo|Memorandum|Handbook|Policy|Guide|Guidelines|Bulletin|"
_DOC_KINDS += r"Addendum|Survey|Audit|Study|Plan|Minutes|Log|Ledger|Statement|Summary|Newsletter|"
_DOC_KINDS += r"Circular|Manual|Charter|Agreement|Reference|Documentation|PDF"
TITLE = re.compile(
    rf"\b((?:(?:[A-Z][\w&'-]+|&)\s+){{1,5}}(?:{_DOC_KINDS})s?)\b"
    r"|\b(Form\s+(?:10-Q|10-K|8-K|20-F|S-1))\b"
)
_SECTIONISH = ("section", "sections", "§", "item", "items", "clause", "clauses", "chapter",
               "chapters", "part", "parts", "paragraph", "paragraphs")  # fmt: skip
_APPENDIX = ("appendix", "annex", "schedule", "exhibit")
_TITLE_FILLER = frozenset("the a an of and for on in to annual quarterly q1 q2 q3 q4".split())


# A web address: the page a reply says its answer is from. Looked up by its host and path in
# the indexed documents' text (a corpus indexes files, so the address must be one they give).
URL = re.compile(
    r"\bhttps?://[^\s<>()\[\]`]+|\bwww\.[a-z0-9-]+(?:\.[a-z0-9-]+)+[^\s<>()\[\]`]*", re.I
)


# Things a reply names as where its answer is, besides numbered parts and titles: a file by
# its name ("budget_summary.xlsx"), a code constant ("RATE_LIMIT_PER_MINUTE"), a part by its
# quoted label ("the 'H1 totals' summary row") and a document filed under an identifier
# ("the INC-2291 postmortem document"). Each is a claim about the corpus code can look up.
_FILE_EXTENSIONS = r"xlsx|xls|csv|tsv|py|md|txt|json|ya?ml|pdf|docx?|html?|toml|ini|cfg|js|ts|sql"
FILE_NAME = re.compile(rf"(?<![\w/.-])([\w-]+\.(?:{_FILE_EXTENSIONS}))(?![\w.-]*\w)", re.I)
CONSTANT = re.compile(r"(?<![\w-])([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?![\w-])")
QUOTED_PART = re.compile(
    r"['\u2018\"\u201c]([^'\u2019\"\u201d\n]{2,60})['\u2019\"\u201d]\s+(?:[a-z-]+\s+){0,2}"
    r"(?:rows?|lines?|columns?|entry|entries|fields?|headings?|tabs?|sheets?|sections?)\b",
    re.I,
)
# A part named before its quoted title: 'the heading "Probation and review"'.
QUOTED_TITLE = re.compile(
    r"\b(?:headings?|sections?|subsections?|titled|entitled|headed|called)\s+(?:of\s+)?"
    r"['\u2018\"\u201c]([^'\u2019\"\u201d\n]{2,60})['\u2019\"\u201d]",
    re.I,
)
# A function or method by its call ("retry_policy()", "client.fetch_page()"): looked up verbatim.
FUNCTION = re.compile(r"(?<![\w.])([A-Za-z_][\w.]*[A-Za-z0-9_])\(\)")
ID_DOCUMENT = re.compile(
    r"\b([A-Z]{2,5}-\d[\w-]*)\s+(?:[a-z-]+\s+){0,2}(?:documents?|docs?|post-?mortems?|"
    r"reports?|memos?|write-?ups?|runbooks?)\b"
)
_NAMED_KINDS = (
    ("file", FILE_NAME),
    ("constant", CONSTANT),
    ("label", QUOTED_PART),
    ("label", QUOTED_TITLE),
    ("function", FUNCTION),
)
# A named thing is credited when the reply says the answer is in, from, by or per it.
_NAMED_BEFORE = re.compile(
    r"\b(?:in|from|by|per|under|of|at|see|via|according to)\s+"
    r"(?:the\s+|its\s+|[\w'\u2019]+['\u2019]s\s+)?[`'\"\u2018\u201c]?$",
    re.I,
)


_NAMED = ("file", "constant", "label", "filed", "function")


@dataclass(frozen=True)
class Reference:
    kind: str
    label: str
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Document:
    path: str
    text: str  # as the agent's tools read it
    raw: str  # the file's own text (a sheet's rows, an HTML page's tables)

    @property
    def sheet(self) -> bool:
        return self.path.lower().endswith(".csv")


def references(reply: str) -> list[Reference]:
    found = []
    for m in REFERENCE.finditer(reply):
        kind = (m.group("kind") or m.group("sym") or "").lower()
        kind = {"sections": "section", "items": "item", "tables": "table", "rows": "row",
                "lines": "line", "entries": "entry", "pages": "page", "notes": "note",
                "figures": "figure", "fig.": "figure", "footnotes": "footnote",
                }.get(kind, kind)  # fmt: skip
        label = m.group("label")
        if kind in _APPENDIX and not re.fullmatch(r"[A-Z]|[IVX]+|\d+", label):
            continue
        if kind not in _APPENDIX and not label[0].isdigit() and not _ID_LABEL.fullmatch(label):
            continue  # "part A", "line B": not numbered references
        found.append(Reference(kind, label.strip(), m.start(), m.end(), m.group(0)))
    for m in URL.finditer(reply):
        url = m.group(0).rstrip(".,;:!?)\"'’”")
        found.append(Reference("url", url, m.start(), m.start() + len(url), url))
    for kind, pattern in _NAMED_KINDS:
        for m in pattern.finditer(reply):
            start = m.start() if kind == "label" else m.start(1)
            found.append(Reference(kind, m.group(1), start, m.end(1), m.group(1)))
    for m in ID_DOCUMENT.finditer(reply):
        found.append(Reference("filed", m.group(1), m.start(1), m.end(1), m.group(0)))
    for m in TITLE.finditer(reply):
        group = 1 if m.group(1) else 2
        title = m.group(group)
        found.append(Reference("document", title, m.start(group), m.end(group), title))
    return found


# A reference credited as the answer's source: it opens a sentence or clause ("Section 4:",
# "In row 2, ..."), follows "according to" / "per" / "see" / "under", or is followed by a
# verb of saying ("Table 3 of the report puts ..."). One inside quoted text ("the notice
# described in Exhibit B of this License") is the document's own, not the reply's credit.
_CREDIT_BEFORE = re.compile(
    r"(?:(?:^|[.;:!?(\n\u2014\u2013]\s*)(?:(?:in|under|per|from|see)\s+)?"
    r"|\b(?:according to|per|see|cf\.?|citing|under)\s+)(?:the\s+|[\w'’]+['’]s\s+)?$",
    re.I,
)
_CREDIT_AFTER = re.compile(
    r"^\s*(?:of\s+(?:the|this|its)\s+[\w\s'’-]{0,40}?)?,?\s*(?:says|say|states|state|gives|"
    r"give|lists|list|shows|show|puts|records|sets|caps|notes|reports|confirms|has|:|\()",
    re.I,
)


# A citation: from a word that credits a source ("Source:", "documented in", "stated on",
# "matches", an opening parenthesis) to the end of its sentence, every reference named is
# credited ("Source: the Travel Policy, §12.4"; "(Employee Handbook, Section 14, para. 2)").
_CITATION = re.compile(
    r"\bsources?\s*:|\baccording to\b|\bper\b|\bsee\b|\bciting\b|\bcited\b|\bmatches\b|"
    r"\b(?:documented|stated|listed|recorded|printed|published|shown|given|found|confirmed)"
    r"\s+(?:in|on|at|under|by)\b|\((?![^)]*\))|"
    r"\b(?:set|laid)\s+(?:out|down)\s+in\b|\b(?:defined|specified|described|provided|covered|"
    r"required|mentioned|detailed|explained)\s+(?:in|under|by)\b",
    re.I,
)
_SENTENCE_END = re.compile(r"\n|[.!?](?=\s+[A-Z*#]|\s*$)")


def credited(text: str, ref: Reference) -> bool:
    if ref.kind == "§":
        return True  # the section sign is only ever written to cite a document's part
    before = text[max(0, ref.start - 40) : ref.start]
    if ref.kind in _NAMED and _NAMED_BEFORE.search(before):
        return True
    if _CREDIT_BEFORE.search(before) or _CREDIT_AFTER.match(text[ref.end : ref.end + 60]):
        return True
    return _in_citation(text, ref.start)


def _in_citation(text: str, at: int) -> bool:
    """After a citing word in its sentence (inside a parenthesis still open)."""
    starts = [m.end() for m in _SENTENCE_END.finditer(text, 0, at)]
    sentence = text[starts[-1] if starts else 0 : at]
    return bool(_CITATION.search(sentence))


def quoted(text: str, ref: Reference, docs: list[Document]) -> bool:
    """The reference sits in words an indexed document has verbatim ("the notice described
    in Exhibit B of this License"): the document's own reference, not the reply's credit."""
    around = " ".join(text[max(0, ref.start - 30) : ref.end + 15].lower().split()[1:-1])
    return len(around) > 20 and any(around in " ".join(d.text.lower().split()) for d in docs)


@functools.lru_cache(maxsize=64)
def _load(path: str, stamp: tuple[int, int]) -> Document:
    from agenteval.corpus.documents import read_text  # lazy: only source checks read files

    file = Path(path)
    raw = file.read_bytes().decode("utf-8-sig", errors="replace")
    return Document(path, read_text(file), raw)


def load_documents(paths: list[str]) -> list[Document] | None:
    """The documents at `paths` (relative to the working directory: the repository root);
    None when any cannot be read, since a reference could then be in it."""
    docs = []
    for path in dict.fromkeys(paths):
        file = Path(path)
        try:
            stat = file.stat()
            docs.append(_load(str(file), (stat.st_size, stat.st_mtime_ns)))
        except OSError:
            return None
    return docs


# -- structure of a document -----------------------------------------------------------------
_MD_HEADING = re.compile(r"^#{1,6}\s+(?:(?:section|item|part|chapter)\s+)?(\d+(?:\.\d+)*)\.?\s",
                         re.I | re.M)  # fmt: skip
_TEXT_HEADING = re.compile(
    r"^\s{0,4}(?:(?:section|item|part|chapter)\s+)?(\d+(?:\.\d+)*)\.?\s+[A-Z][^\n]{0,70}$", re.M
)
_APPENDIX_HEADING = re.compile(
    r"^\s{0,4}(?:#{1,6}\s+)?(appendix|annex|schedule|exhibit)\s+([A-Z0-9]+)\b", re.I | re.M
)


def headings(doc: Document) -> list[tuple[str, int]]:
    """(number, offset) of the numbered headings, in order."""
    pattern = _MD_HEADING if doc.path.lower().endswith(".md") else _TEXT_HEADING
    return [(m.group(1), m.start()) for m in pattern.finditer(doc.text)]


def _section_text(doc: Document, number: str) -> str | None:
    heads = headings(doc)
    for i, (n, pos) in enumerate(heads):
        if n == number:
            end = next((p for m, p in heads[i + 1 :] if "." not in m or not m.startswith(n)),
                       len(doc.text))  # fmt: skip
            return doc.text[pos:end]
    return None


def _tables(doc: Document) -> int:
    if doc.sheet:
        return 1
    html = len(re.findall(r"<table\b", doc.raw, re.I))
    markdown = len(re.findall(r"(?:^|\n)(?!\|)[^\n]*\n\|[^\n]*\|\s*\n\|\s*:?-", doc.raw))
    return html + markdown


def _rows(doc: Document) -> list[str]:
    return [r for r in doc.raw.splitlines()[1:] if r.strip()]


# -- looking a reference up ------------------------------------------------------------------
def look_up(ref: Reference, docs: list[Document]) -> tuple[str, str | None]:
    """(missing | found | unresolved, the referenced text when found)."""
    results = [_in(ref, d) for d in docs]
    found = [text for status, text in results if status == "found"]
    if found:
        return "found", "\n".join(t for t in found if t is not None)
    if any(status == UNRESOLVED for status, _ in results) or not docs:
        return UNRESOLVED, None
    return MISSING, None


def _in(ref: Reference, doc: Document) -> tuple[str, str | None]:
    if ref.kind in _SECTIONISH:
        return _numbered(ref, doc)
    if ref.kind in _APPENDIX:
        heads = [m for m in _APPENDIX_HEADING.finditer(doc.text) if m.group(1).lower() == ref.kind]
        for m in heads:
            if m.group(2).upper() == ref.label.upper():
                return "found", doc.text[m.start() :]
        # Appendices with headings, and not this one: it is not there. None with a heading
        # but one named in the text: it may be a part the file does not carry.
        mentioned = not heads and re.search(rf"\b{ref.kind}\b", doc.text, re.I)
        return (UNRESOLVED, None) if mentioned else (MISSING, None)
    if ref.kind == "table":
        count = _tables(doc)
        number = int(re.match(r"\d+", ref.label).group(0))  # type: ignore[union-attr]
        return ("found", doc.text) if 1 <= number <= count else (MISSING, None)
    if ref.kind in _NAMED:
        return _named(ref, doc)
    if ref.kind in ("figure", "footnote"):
        return _marked(ref, doc)
    if _ID_LABEL.fullmatch(ref.label):
        return _filed_under(ref, doc)
    if ref.kind == "note":
        found = re.search(rf"\bnote\s+{re.escape(ref.label)}\b", doc.text, re.I)
        return ("found", doc.text[found.start() :]) if found else (MISSING, None)
    if ref.kind in ("row", "line", "entry"):
        return _row(ref, doc)
    if ref.kind == "document":
        return _titled(ref, doc)
    if ref.kind == "url":
        return _addressed(ref, doc)
    return UNRESOLVED, None  # pages: a text file has none code could count


def _numbered(ref: Reference, doc: Document) -> tuple[str, str | None]:
    heads = headings(doc)
    if not heads:
        return UNRESOLVED, None
    number = re.match(r"\d+(?:\.\d+)*", ref.label).group(0)  # type: ignore[union-attr]
    text = _section_text(doc, number)
    if text is not None:
        return "found", text
    top = number.split(".")[0]
    if _section_text(doc, top) is not None:
        return UNRESOLVED, None  # "5.3" under an existing "5": paragraphs may be unnumbered
    return MISSING, None


def _row(ref: Reference, doc: Document) -> tuple[str, str | None]:
    number = int(re.match(r"\d+", ref.label).group(0))  # type: ignore[union-attr]
    if doc.sheet:
        rows = _rows(doc)
        if number < 1 or number > len(rows) + 1:
            return MISSING, None
        # "row 3" may count the header line or not: either row may be meant. The rows as
        # the tools read them (one line each, every cell named by its column).
        lines = doc.text.splitlines()
        return "found", "\n".join(lines[max(0, number - 2) : number])
    if ref.kind == "line":
        lines = doc.raw.splitlines()
        return ("found", lines[number - 1]) if 1 <= number <= len(lines) else (MISSING, None)
    return UNRESOLVED, None


def _filed_under(ref: Reference, doc: Document) -> tuple[str, str | None]:
    """An entry by its identifier: the line that carries it, or missing."""
    for line in doc.text.splitlines():
        if re.search(rf"(?<![\w-]){re.escape(ref.label)}(?![\w-])", line, re.I):
            return "found", line
    return MISSING, None


def _titled(ref: Reference, doc: Document) -> tuple[str, str | None]:
    if ref.label.lower().startswith("form "):  # a filing: the document says what it is
        filing = ref.label.split()[-1]
        return ("found", doc.text) if filing.lower() in doc.text.lower() else (MISSING, None)
    if ref.label.lower().endswith(" pdf"):  # a file format none of the indexed files has
        return ("found", doc.text) if doc.path.lower().endswith(".pdf") else (MISSING, None)
    head = " ".join(doc.text.strip().splitlines()[:3]).lower()
    name = Path(doc.path).stem.replace("_", " ").lower()
    words = [w.lower() for w in re.findall(r"[A-Za-z][\w&'-]+", ref.label)]
    distinctive = [w for w in words[:-1] if w not in _TITLE_FILLER and not _company(w, name)]
    kind = words[-1].rstrip("s")
    if kind in head or kind in name or not distinctive:
        return "found", doc.text
    if any(w in head or w in name for w in distinctive):
        return UNRESOLVED, None
    return MISSING, None


def _company(word: str, name: str) -> bool:
    return word.rstrip("'s").rstrip("’s") in name.split()


def _addressed(ref: Reference, doc: Document) -> tuple[str, str | None]:
    """A web address: found when the document gives it (or a longer one it starts); a page
    under a host the document names may be one it does not list (unresolved); a host no
    document names is not a source the corpus has (missing)."""
    address = re.sub(r"^(?:https?://)?(?:www\.)?", "", ref.label.lower()).rstrip("/")
    host = address.split("/")[0].split("#")[0].split("?")[0]
    text = doc.raw.lower()
    if address in text:
        return "found", doc.text
    named = re.search(rf"(?<![\w.-]){re.escape(host)}(?![\w-])", text)
    return (UNRESOLVED, None) if named else (MISSING, None)


def _named(ref: Reference, doc: Document) -> tuple[str, str | None]:
    """A file by name (the indexed file itself; a file the document only mentions may be
    one the corpus lacks: unresolved), a constant or a quoted label (some indexed file
    writes it), a document filed under an identifier (a file titled by it; the identifier
    only in the text may be an entry, not a document: unresolved)."""
    if ref.kind == "file":
        if Path(doc.path).name.lower() == ref.label.lower():
            return "found", doc.text
        mentioned = ref.label.lower() in doc.raw.lower()
        return (UNRESOLVED, None) if mentioned else (MISSING, None)
    if ref.kind in ("constant", "function"):
        name = ref.label.rsplit(".", 1)[-1]
        return ("found", doc.text) if name in doc.raw else (MISSING, None)
    if ref.kind == "label":
        label = " ".join(ref.label.lower().split())
        texts = (" ".join(t.lower().split()) for t in (doc.raw, doc.text))
        return ("found", doc.text) if any(label in t for t in texts) else (MISSING, None)
    head = " ".join(doc.text.strip().splitlines()[:3]).lower()
    label = ref.label.lower()
    if label in head or label in Path(doc.path).stem.lower().replace("_", "-"):
        return "found", doc.text
    return (UNRESOLVED, None) if label in doc.text.lower() else (MISSING, None)


# Marks a file carries for figures and footnotes: without any, it has none to cite.
_FIGURE_MARKS = re.compile(r"<figure|<img|!\[|\bfig(?:ure|\.)\s*\d", re.I)
_FOOTNOTE_MARKS = re.compile(r"\[\^|<sup|\bfootnotes?\b|[\u00b9\u00b2\u00b3\u2070-\u2079]")


def _marked(ref: Reference, doc: Document) -> tuple[str, str | None]:
    """Figure N or footnote N: found where the file writes it so; missing in a file with no
    figure or footnote at all; otherwise unresolved (a caption or marker code cannot number)."""
    word = r"fig(?:ure|\.)" if ref.kind == "figure" else r"footnote"
    label = re.escape(ref.label)
    if re.search(rf"\b{word}\s*{label}\b|\[\^{label}\]", doc.raw, re.I):
        return "found", doc.text
    marks = _FIGURE_MARKS if ref.kind == "figure" else _FOOTNOTE_MARKS
    return (UNRESOLVED, None) if marks.search(doc.raw) else (MISSING, None)
