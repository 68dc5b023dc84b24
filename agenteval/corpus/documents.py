"""Turn a document file into plain text an index can chunk: one reader per format."""

from __future__ import annotations

import csv
import io
from html.parser import HTMLParser
from pathlib import Path

_BLOCK_TAGS = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "table", "section"}


class _HTMLText(HTMLParser):
    """Visible text with block elements on their own lines and table cells joined by ' | '."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip = max(0, self._skip - 1)
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.parts.append("\n" + " | ".join(self._row) + ".\n")
            self._row = None
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if self._cell is not None:
            self._cell.append(data)
        else:
            self.parts.append(data)


def html_to_text(markup: str) -> str:
    parser = _HTMLText()
    parser.feed(markup)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)


def csv_to_text(content: str) -> str:
    """Each row becomes a line 'Header: value; Header: value.' so rows retrieve as units."""
    rows = list(csv.reader(io.StringIO(content)))
    if not rows:
        return ""
    header, body = rows[0], rows[1:]
    lines = []
    for row in body:
        cells = [
            f"{h.strip()}: {v.strip()}" for h, v in zip(header, row, strict=False) if v.strip()
        ]
        if cells:
            lines.append("; ".join(cells) + ".")
    return "\n".join(lines)


def read_text(path: Path, data: bytes | None = None) -> str:
    """Text of a supported document; undecodable bytes are replaced, never fatal. A PDF is
    its text layer (corpus.pdf: a scanned or damaged one is refused, never read empty).
    `data`: the file's bytes, read already by a caller that checked what it opened (the
    agent's tools, through the fence); `path` then only names it and gives its format."""
    if path.suffix.lower() == ".pdf":
        from agenteval.corpus.pdf import pdf_text

        return pdf_text(path, data)
    raw = path.read_bytes() if data is None else data
    content = raw.decode("utf-8-sig", errors="replace")
    suffix = path.suffix.lower()
    if suffix in (".html", ".htm"):
        return html_to_text(content)
    if suffix == ".csv":
        return csv_to_text(content)
    return content
