"""Prompt files under eval/prompts/: loading, sha256, `{{placeholder}}` rendering, sections.

A placeholder without a value is an error rather than a silent hole in the prompt; double
braces keep literal JSON braces in prompts unambiguous.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agenteval.fileio import sha256_text

PLACEHOLDER = re.compile(r"\{\{\s*([a-z_][a-z0-9_]*)\s*\}\}")


class PromptError(ValueError):
    """A prompt file is missing, or a placeholder in it has no value."""


@dataclass(frozen=True)
class PromptTemplate:
    path: Path
    text: str

    @property
    def sha256(self) -> str:
        return sha256_text(self.text)

    def placeholders(self) -> set[str]:
        return set(PLACEHOLDER.findall(self.text))

    def render(self, values: Mapping[str, object], text: str | None = None) -> str:
        source = self.text if text is None else text
        missing = sorted(set(PLACEHOLDER.findall(source)) - set(values))
        if missing:
            raise PromptError(f"{self.path}: no value for placeholder(s) {missing}")
        return PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), source).strip() + "\n"


def load_prompt(path: Path) -> PromptTemplate:
    try:
        return PromptTemplate(path, path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PromptError(f"cannot read prompt {path}: {exc}") from None


def split_sections(text: str, marker: str) -> tuple[str, dict[str, str]]:
    """(text before the first `marker` heading, {heading name: body}) for `### name` lists."""
    head, *rest = re.split(rf"^{re.escape(marker)}[ \t]*", text, flags=re.MULTILINE)
    sections: dict[str, str] = {}
    for block in rest:
        name, _, body = block.partition("\n")
        sections[name.strip()] = body.strip()
    return head, sections
