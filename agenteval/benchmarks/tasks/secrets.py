"""Every transcript, diff and grade is scrubbed before it is written, and checked after.

Scrubbing (agenteval.llm.scrub) replaces known key values and secret-shaped strings. The check
is a second, independent look at the scrubbed text: the exact values of the environment's
secret variables must not occur, and the scrubber must find nothing left. When something
survives, nothing is written and the run fails (`SecretSurvived`, naming the variable or the
shape, never the value).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agenteval.fileio import json_text, write_atomic
from agenteval.llm.scrub import MIN_SECRET_LEN, SECRET_ENV_NAME, Scrubber


class SecretSurvived(RuntimeError):
    """A secret was still present after scrubbing: nothing was written."""


class SecretGuard:
    def __init__(
        self,
        key_env_names: Iterable[str] = (),
        env: Mapping[str, str] | None = None,
        scrubber: Scrubber | None = None,
    ) -> None:
        source = dict(os.environ if env is None else env)
        names = set(key_env_names)
        self.known = {
            name: value.strip()
            for name, value in source.items()
            if (name in names or SECRET_ENV_NAME.search(name))
            and len(value.strip()) >= MIN_SECRET_LEN
        }
        self.scrubber = scrubber or Scrubber(
            secret_values={f"env:{k}": v for k, v in self.known.items()}
        )

    def text(self, text: str, where: str) -> str:
        clean = self.scrubber.scrub_text(text)
        self._check(clean, where)
        return clean

    def value(self, value: Any, where: str) -> Any:
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json", by_alias=True)
        clean = self.scrubber.scrub(value)
        self._check(json_text(clean), where)
        return clean

    def _check(self, clean: str, where: str) -> None:
        left = [f"env:{name}" for name, secret in self.known.items() if secret in clean]
        left += self.scrubber.leaks(clean)
        if left:
            which = ", ".join(sorted(set(left)))
            raise SecretSurvived(f"{where}: a secret survived scrubbing ({which}); nothing written")

    def write_text(self, path: Path, text: str) -> None:
        write_atomic(path, self.text(text, str(path)))

    def write_json(self, path: Path, value: Any) -> None:
        write_atomic(path, json_text(self.value(value, str(path))))
