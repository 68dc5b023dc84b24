"""In-repository corpus pins: where each manifest document lives, its sha256, the corpus digest.

A result is only comparable with another measured on the same bytes, so every document in
the manifest may carry a `sha256` pin; `agenteval validate` fails when the bytes drift and
`agenteval corpus pin` rewrites the pins on purpose.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agenteval.fileio import digest_of, sha256_file, write_atomic
from agenteval.schema.corpus import AdversarialDocument, Document, Manifest

if TYPE_CHECKING:
    from agenteval.schema.sources import SourcesFile

DOCUMENTS_DIR = Path("eval/corpus/documents")
ADVERSARIAL_DIR = Path("eval/corpus/adversarial")
EXTERNAL_DIR = Path("data/corpora")
SOURCES_FILE = Path("eval/sources.yaml")


def documents(
    manifest: Manifest,
) -> Iterator[tuple[str, int, Document | AdversarialDocument, str]]:
    """(manifest key, index, document, repository-relative path) for every document."""
    for i, doc in enumerate(manifest.documents):
        yield "documents", i, doc, doc.path or str(DOCUMENTS_DIR / doc.filename)
    for i, adv in enumerate(manifest.adversarial_documents):
        yield "adversarial_documents", i, adv, adv.path or str(ADVERSARIAL_DIR / adv.filename)


SUB_MANIFEST = "manifest.json"


def sub_manifests(main: Path) -> list[Path]:
    """Manifests of corpus sub-folders (e.g. eval/corpus/real_world/manifest.json), merged
    into the main one; their documents live beside them."""
    return sorted(p for p in main.parent.glob(f"*/{SUB_MANIFEST}") if p.is_file())


def rebased(manifest: Manifest, folder: str) -> Manifest:
    """`manifest` with each document's location made repository-relative from `folder`."""
    copy = manifest.model_copy(deep=True)
    for doc in copy.documents:
        doc.path = doc.path or f"{folder}/{doc.filename}"
    for adv in copy.adversarial_documents:
        adv.path = adv.path or f"{folder}/{adv.filename}"
    return copy


def external_paths(root: Path, sources: Path | None = None) -> set[str]:
    """Repository paths that `agenteval fetch` materialises from eval/sources.yaml pins."""
    from agenteval.schema.sources import SourcesError, load_sources

    path = sources or root / SOURCES_FILE
    if not path.is_file():
        return set()
    try:
        loaded = load_sources(path)
    except (SourcesError, OSError):
        return set()  # `agenteval validate` reports the sources file's own problems
    return {str(EXTERNAL_DIR / source / rel) for source, rel, _pin in loaded.pins()}


def pins_digest(sources: SourcesFile) -> str:
    """sha256 over the pins: lines `<source>/<path>\\t<sha256>\\n`, sorted, UTF-8.

    Changes exactly when a file is added, removed, renamed or re-pinned; URLs and licence
    prose do not count, since moving a mirror does not change the corpus.
    """
    lines = sorted(f"{name}/{rel}\t{pin.sha256}\n" for name, rel, pin in sources.pins())
    return hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()


def sources_digest(root: Path, sources: Path | None = None) -> str | None:
    # Not through agenteval.corpus.fetch: every run computes this, and fetch imports httpx.
    from agenteval.schema.sources import SourcesError, load_sources

    path = sources or root / SOURCES_FILE
    if not path.is_file():
        return None
    try:
        return pins_digest(load_sources(path))
    except (SourcesError, OSError, ValueError):
        return None


def corpus_digest(manifest: Manifest | None, root: Path, sources: Path | None = None) -> str:
    """Digest of the corpus: each document's pin (or its bytes' sha256) plus the external pins.

    Only pins enter it, not file formatting: editing a comment in sources.yaml or re-indenting
    the manifest leaves results comparable; changing any byte of any document does not.
    """
    files: dict[str, str | None] = {}
    if manifest is not None:
        for _key, _i, doc, rel in documents(manifest):
            path = root / rel
            files[rel] = doc.sha256 or (sha256_file(path) if path.is_file() else None)
    return digest_of({"documents": files, "sources": sources_digest(root, sources)})


@dataclass(frozen=True)
class PinChange:
    doc_id: str
    path: str
    old: str | None
    new: str


def pin_manifest(manifest_path: Path, root: Path, folder: str | None = None) -> list[PinChange]:
    """Rewrite every document's sha256 from the bytes on disk; missing files keep their pin.

    `folder` (repository-relative) is where a sub-folder manifest's documents live."""
    raw = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest = Manifest.model_validate(raw)
    if folder is not None:
        manifest = rebased(manifest, folder)
    changes = []
    for key, index, doc, rel in documents(manifest):
        path = root / rel
        if not path.is_file():
            continue
        actual = sha256_file(path)
        if doc.sha256 != actual:
            raw[key][index] = _with_pin(raw[key][index], actual)
            changes.append(PinChange(doc.id, rel, doc.sha256, actual))
    if changes:
        write_atomic(manifest_path, json.dumps(raw, indent=2, ensure_ascii=False) + "\n")
    return changes


def _with_pin(entry: dict[str, object], sha256: str) -> dict[str, object]:
    """The entry with its pin placed right after the file's location, where a reader looks."""
    anchor = "path" if "path" in entry else "filename"
    out: dict[str, object] = {}
    for key, value in entry.items():
        if key != "sha256":
            out[key] = value
        if key == anchor:
            out["sha256"] = sha256
    return out
