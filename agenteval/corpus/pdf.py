"""PDF text through pypdf's text layer, refusing what would index empty or partial.

A scanned, image-only PDF has no text layer: indexing it would store nothing and answer
"not in the documents" forever, so it is refused with what to do instead (no vision model
reads images here). A truncated or damaged file is refused too, rather than indexed as far
as a lenient parser got: pypdf reads it in strict mode.
"""

from __future__ import annotations

from pathlib import Path


class UnreadableDocument(ValueError):
    """A document that cannot be indexed as text; the message says why and what to do."""


def pdf_text(path: Path, data: bytes | None = None) -> str:
    """The text of every page, pages separated by a blank line (`data`: the file's bytes,
    when the caller has read them already)."""
    import io

    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(path if data is None else io.BytesIO(data), strict=True)
        pages = [page.extract_text() or "" for page in reader.pages]
        images = sum(_images(page) for page in reader.pages)
    except (PyPdfError, ValueError, KeyError, OSError) as exc:
        raise UnreadableDocument(
            f"{path.name}: truncated or damaged PDF ({type(exc).__name__}: {exc}); "
            "nothing was indexed: fetch the file again or repair it (qpdf --check names "
            "the damage)"
        ) from None
    text = "\n\n".join(p.strip() for p in pages if p.strip())
    if not text:
        found = f"{images} image(s) on {len(pages)} page(s)" if images else "no text"
        raise UnreadableDocument(
            f"{path.name}: no text layer ({found}): a scanned PDF needs OCR and no vision "
            "model is configured, so it was not indexed; run OCR on it (ocrmypdf adds a text "
            "layer) or add a text version of the document"
        )
    return text


def _images(page: object) -> int:
    try:
        return len(page.images)  # type: ignore[attr-defined]
    except Exception:  # an image pypdf cannot decode still counts as one
        return 1
