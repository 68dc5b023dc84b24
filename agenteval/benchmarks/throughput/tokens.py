"""Counting a reply's output tokens: the endpoint's usage when it reports it, else the model's
own tokenizer when one can be had here, else nothing (n/a, never 0).

The only tokenizer this project can load offline is a GGUF file's vocabulary, through
llama.cpp (`serve.local_engine.VocabTokenizer`: no weights loaded); `auto` uses the
local model's (the one `agenteval serve-local` serves) for the local endpoint and none for
any other, because another model's tokenizer would count another model's tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


class Tokenizer:
    """A GGUF file's tokenizer (llama.cpp, vocabulary only)."""

    def __init__(self, gguf: Path) -> None:
        from agenteval.serve.local_engine import VocabTokenizer

        self.name = gguf.name
        self._vocab: Any = VocabTokenizer(gguf)

    def count(self, text: str) -> int:
        return int(self._vocab.count(text))


@dataclass(frozen=True)
class Counted:
    tokens: int | None
    source: str  # usage | tokenizer | none


def count_output(usage_tokens: int | None, text: str, tokenizer: Tokenizer | None) -> Counted:
    if usage_tokens:
        return Counted(usage_tokens, "usage")
    if tokenizer is not None and text:
        return Counted(tokenizer.count(text), "tokenizer")
    return Counted(None, "none")


def resolve_tokenizer(setting: str, endpoint_kind: str, root: Path) -> tuple[Tokenizer | None, str]:
    """(tokenizer, how it was chosen) for `throughput.tokenizer` (auto | none | a .gguf path)."""
    if setting == "none":
        return None, "none (throughput.tokenizer)"
    if setting == "auto":
        if endpoint_kind != "local":
            return None, "none: no tokenizer of this endpoint's model is available offline"
        from agenteval.serve.local import LocalServerError, find_model_file

        try:
            gguf = find_model_file()
        except LocalServerError as exc:
            return None, f"none: {exc}"
    else:
        gguf = (root / setting).resolve()
    try:
        return Tokenizer(gguf), f"gguf vocabulary of {gguf.name}"
    except (ImportError, OSError, ValueError) as exc:
        return None, f"none: cannot load {gguf.name} ({type(exc).__name__}: {exc})"
