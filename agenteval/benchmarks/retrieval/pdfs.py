"""Small, valid PDF files written byte by byte for the hard cases: one page of text lines
(a text layer pypdf extracts) or one page holding only an image (a scan: no text layer).
Deterministic, so the cases index the same bytes on every run."""

from __future__ import annotations


def text_pdf(lines: list[str]) -> bytes:
    """One page whose text layer holds `lines`, top to bottom."""
    shown = " 0 -16 Td ".join(f"({_escape(line)}) Tj" for line in lines)
    content = f"BT /F1 11 Tf 56 760 Td {shown} ET".encode("latin-1")
    return _document(content, font=True)


def scanned_pdf(size: int = 16) -> bytes:
    """One page holding a grey `size` x `size` image and no text: what a scanner writes."""
    pixels = bytes((x * 13 + y * 7) % 256 for y in range(size) for x in range(size))
    content = b"q 400 0 0 400 100 300 cm /Im1 Do Q"
    image = (
        (
            f"<< /Type /XObject /Subtype /Image /Width {size} /Height {size} /ColorSpace "
            f"/DeviceGray /BitsPerComponent 8 /Length {len(pixels)} >>\nstream\n"
        ).encode()
        + pixels
        + b"\nendstream"
    )
    return _document(content, image=image)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _document(content: bytes, font: bool = False, image: bytes | None = None) -> bytes:
    resources = b"<< /Font << /F1 4 0 R >> >>" if font else b"<< /XObject << /Im1 6 0 R >> >>"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources "
        + resources
        + b" /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Length {len(content)} >>\nstream\n".encode() + content + b"\nendstream",
    ]
    if image is not None:
        objects.append(image)
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\n".encode()
    out += f"startxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)
