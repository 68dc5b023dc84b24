"""The corpus manifest: documents, their facts (with answers, or null when absent) and pins."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Fact(_Open):
    id: str
    question: str
    answer: str | None = Field(description="null: the fact is NOT in the document.")
    difficulty: str | None = None


class Document(_Open):
    id: str
    filename: str = Field(description="Relative to the documents directory.")
    path: str | None = Field(
        None,
        description="Repository-relative location when the document does not live in the "
        "documents directory (e.g. a pinned external file under data/corpora/).",
    )
    format: str | None = None
    domain: str | None = None
    sha256: str | None = Field(None, description="Pin of the file's bytes (lowercase hex).")
    facts: list[Fact] = Field(default_factory=list)


class AdversarialDocument(_Open):
    id: str
    filename: str = Field(description="Relative to the adversarial directory.")
    path: str | None = Field(
        None, description="Repository-relative location, when not in the adversarial directory."
    )
    expected_behavior: str | None = None
    sha256: str | None = None


class Manifest(_Open):
    generated_at: str | None = None
    total_documents: int | None = None
    total_facts: int | None = None
    notes: str | None = None
    documents: list[Document]
    adversarial_documents: list[AdversarialDocument] = Field(default_factory=list)

    def fact_index(self) -> dict[tuple[str, str], Fact]:
        """(document id, fact id) -> fact: fact ids are unique within their document."""
        return {(doc.id, fact.id): fact for doc in self.documents for fact in doc.facts}

    def find_fact(self, fact_id: str, doc_id: str | None = None) -> list[tuple[str, Fact]]:
        """(document id, fact) of every fact with this id, in `doc_id` when it is given."""
        return [
            (doc.id, fact)
            for doc in self.documents
            if doc_id is None or doc.id == doc_id
            for fact in doc.facts
            if fact.id == fact_id
        ]

    def document_ids(self) -> set[str]:
        return {d.id for d in self.documents} | {d.id for d in self.adversarial_documents}
