"""The model a benchmark's judge may ask (`qa.judge`, `tasks.judge` with `kind: llm`): its
endpoint, prompt and participant, read from the benchmark's params section in one way.

The model under test never grades itself: neither fair nor comparable across models.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.fileio import code_of, digest_of
from agenteval.llm.config import EndpointConfig, endpoint_from
from agenteval.llm.prompts import PromptTemplate, load_prompt
from agenteval.schema.transcript import Participant


def refuse_same_model(params: Mapping[str, Any], judge_model: str, role: str) -> None:
    """ValueError naming `<role>.model` when it is `target.model` (a builtin target has none)."""
    target = params.get("target") or {}
    if target.get("kind") == "builtin" or not target.get("model"):
        return
    under_test = str(target["model"]).strip().lower()
    if under_test == judge_model.strip().lower():
        raise ValueError(
            f"{role}.model {judge_model!r} is the model under test (target.model); "
            "point the judge at a different model"
        )


@dataclass(frozen=True)
class JudgeSetup:
    """`config` and `prompt` are set when kind is `llm`, None for the judge that asks no model."""

    kind: str
    max_attempts: int
    config: EndpointConfig | None
    prompt: PromptTemplate | None
    participant: Participant


def judge_setup(
    params: Mapping[str, Any],
    root: Path,
    *,
    role: str,
    offline: str,
    default_prompt: str | None,
    module: str,
) -> JudgeSetup:
    """The judge of section `role` (`qa.judge`): kind `offline` (asks no model) or `llm`.

    Its participant is `<benchmark>-<kind>`, keyed by the settings and by the code of
    `module` (the judge's own module, with everything it imports)."""
    benchmark = role.partition(".")[0]
    section = dict((params.get(benchmark) or {}).get("judge") or {})
    kind = str(section.get("kind", offline))
    max_attempts = int(section.get("max_attempts", 2))
    config = prompt = None
    details: dict[str, Any] = {"kind": kind}
    model = protocol = None
    if kind == "llm":
        endpoint = endpoint_from(section, role)
        refuse_same_model(params, endpoint.model, role)
        config = EndpointConfig.from_params(
            {"run": params.get("run") or {}, role: section}, role, root
        )
        prompt = load_prompt(root / str(section.get("prompt", default_prompt)))
        model, protocol = endpoint.model, endpoint.protocol
        details |= {
            "endpoint": config.describe(),
            "prompt_sha256": prompt.sha256,
            "max_attempts": max_attempts,
        }
    elif kind != offline:
        raise ValueError(f"{role}.kind must be {offline} or llm, not {kind!r}")
    participant = Participant(
        kind=f"{benchmark}-{kind}",
        model=model,
        protocol=protocol,
        config_digest=digest_of({"details": details, "code": code_of(module)}),
        details=details,
    )
    return JudgeSetup(kind, max_attempts, config, prompt, participant)
