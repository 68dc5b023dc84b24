"""A reply's markdown read as the sentences a grader reads: tables, lists, code blocks.

Agents answer in markdown. Read as raw text, a table row "| Heron | $2,690 |" has no words
tying the figure to its name, a list item's bold label is noise, and a fenced block's
markers split the answer from its line. markdown-it-py parses the reply (CommonMark with
GFM tables; link reference definitions are kept as text, so a footnote "[^1]: 18 days" is
never dropped) and `flatten` writes it back as plain lines: each table row one sentence
whose cells carry their column's header ("Heron price $2,690."), each list item and code
line its own line, emphasis and markers gone, and no text left out. Plain text without
markdown comes back unchanged.
"""

from __future__ import annotations

import functools
import re
from typing import Any

# Markdown that changes how a reply reads: table pipes, fences, headings, quotes, bullets,
# emphasis, inline code. Text without any of these is returned as it is.
_MARKDOWN = re.compile(
    r"^\s*(?:\||```|~~~|#{1,6}\s|>|[-*+]\s)|\*\*|__|`|\|.*\||~~|<(?:del|s|strike)>", re.M | re.I
)
# HTML that strikes text through: what it wraps is withdrawn, not said.
_STRUCK_OPEN = re.compile(r"<(del|s|strike)(?:\s[^>]*)?>", re.I)
_STRUCK_CLOSE = re.compile(r"</(del|s|strike)\s*>", re.I)


@functools.cache
def _parser() -> Any:
    from markdown_it import MarkdownIt  # lazy: only judging reads markdown

    return MarkdownIt("commonmark").enable(["table", "strikethrough"]).disable("reference")


def looks_like_markdown(text: str) -> bool:
    return bool(_MARKDOWN.search(text))


def flatten(text: str) -> str:
    """The reply as plain lines (see the module docstring); unchanged without markdown."""
    if not looks_like_markdown(text):
        return text
    tokens = _parser().parse(text)
    out: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.type == "table_open":
            i = _table(tokens, i, out)
            continue
        if tok.type == "inline":
            out.append(_inline(tok))
        elif tok.type in ("fence", "code_block", "html_block"):
            out.append(tok.content.rstrip("\n") + "\n")
        elif tok.type == "list_item_open" and tok.info:
            out.append(f"{tok.info}{tok.markup} ")  # an ordered item keeps its number
        elif tok.type in ("paragraph_close", "heading_close", "hr"):
            out.append("\n")
        i += 1
    flat = re.sub(r"[ \t]+\n", "\n", "".join(out))
    return re.sub(r"\n{3,}", "\n\n", flat).strip()


def _inline(tok: Any) -> str:
    """An inline run's text; struck-through text (~~6 hours~~, <del>) is left out: a value
    the reply strikes is one it withdraws, as a grader reads it."""
    parts, struck = [], 0
    for child in tok.children or []:
        if child.type == "s_open" or (
            child.type == "html_inline" and _STRUCK_OPEN.fullmatch(child.content)
        ):
            struck += 1
        elif child.type == "s_close" or (
            child.type == "html_inline" and _STRUCK_CLOSE.fullmatch(child.content)
        ):
            struck = max(0, struck - 1)
        elif struck:
            continue
        elif child.type in ("text", "code_inline", "html_inline"):
            parts.append(child.content)
        elif child.type == "softbreak":
            parts.append(" ")
        elif child.type == "hardbreak":
            parts.append("\n")
        elif child.type == "image":
            parts.append(child.content)
    return "".join(parts)


def _table(tokens: list[Any], i: int, out: list[str]) -> int:
    """Rows of the table at tokens[i] as sentences; the index after its end."""
    header: list[str] = []
    row: list[str] = []
    in_head = False
    while tokens[i].type != "table_close":
        tok = tokens[i]
        if tok.type == "thead_open":
            in_head = True
        elif tok.type == "thead_close":
            in_head = False
            if not any(header):
                header = []
        elif tok.type == "tr_open":
            row = []
        elif tok.type == "inline":
            (header if in_head else row).append(_inline(tok).strip())
        elif tok.type == "tr_close" and not in_head:
            out.append(_row_sentence(header, row))
        i += 1
    return i + 1


def _row_sentence(header: list[str], row: list[str]) -> str:
    """ "Heron price $2,690." from headers (Model, Price) and cells (Heron, $2,690): the
    first cell names the row, every other cell follows its column's name. Empty cells and
    dashes say nothing and are left out."""
    cells = [(header[k] if k < len(header) else "", c) for k, c in enumerate(row)]
    said = [(h, c) for h, c in cells if c and not re.fullmatch(r"[-—–\s]+", c)]
    if not said:
        return ""
    first = said[0][1]
    rest = [f"{h.lower()} {c}".strip() for h, c in said[1:]]
    sentence = " ".join([first, *rest]).rstrip()
    return sentence + ("\n" if sentence.endswith((".", "?", "!")) else ".\n")


# -- the column a question asks for --------------------------------------------------------
_MONTHS = "jan feb mar apr may jun jul aug sep oct nov dec".split()
_PERIOD = re.compile(
    r"\b(?:FY\s?(?P<fy>\d{2,4})|(?P<year>(?:19|20)\d{2})|(?P<q>Q[1-4])|(?P<h>H[12])|"
    r"(?P<month>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?)\b",
    re.I,
)


def periods(text: str) -> dict[str, str]:
    """The period a header or question names, by kind: {year: 2027, month: mar, quarter: q2}."""
    found: dict[str, str] = {}
    for m in _PERIOD.finditer(text):
        if m["fy"] or m["year"]:
            year = m["fy"] or m["year"]
            found["year"] = year if len(year) == 4 else "20" + year
        elif m["q"] or m["h"]:
            found["part"] = (m["q"] or m["h"]).lower()
        else:
            found["month"] = m["month"].lower()
    return found


def _agrees(header: str, asked: dict[str, str]) -> bool | None:
    """True: the header names the asked period; False: another one; None: says nothing."""
    named = periods(header)
    shared = [k for k in named if k in asked]
    if not shared:
        return None
    return all(named[k] == asked[k] for k in shared)


def asked_columns(text: str, question: str) -> str:
    """A markdown table whose columns name periods, with the columns of other periods than
    the question's left out when exactly the rest name the asked one ("FY2026 actual |
    FY2027 requested" asked about FY2027). Otherwise the reply as it is."""
    asked = periods(question)
    if not asked or "|" not in text or not looks_like_markdown(text):
        return text
    lines = text.split("\n")
    for tok in _parser().parse(text):
        if tok.type != "table_open" or tok.map is None:
            continue
        start, end = tok.map
        header = _cells(lines[start])
        verdicts = [_agrees(h, asked) for h in header]
        if verdicts.count(True) != 1 or False not in verdicts:
            continue  # no one column is the asked period's: leave it whole
        keep = [k for k, v in enumerate(verdicts) if v is not False]
        for n in range(start, end):
            cells = _cells(lines[n])
            if len(cells) == len(header):
                lines[n] = "| " + " | ".join(cells[k] for k in keep) + " |"
    return "\n".join(lines)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]
