"""The offline harness: each task's reference solution replayed through the confined tools.

No model is involved, so the whole suite runs in CI: the tool record, the diff, the checks,
`verified` and the judge inputs are all the real ones a model's attempt produces. A solution
other than the task's own (a shortcut, a planted control) can be replayed the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agenteval.benchmarks.tasks.harness import AttemptContext
from agenteval.fileio import code_of, digest_of
from agenteval.schema.tasks import Reference, Task
from agenteval.schema.transcript import Participant

MODEL = "reference-solution"


class ScriptedHarness:
    in_process = True

    def __init__(self, solutions: Mapping[str, Reference] | None = None, label: str = MODEL):
        self.solutions = dict(solutions or {})
        identity = {
            "label": label,
            "code": code_of(__name__),
            "solutions": digest_of(
                {k: v.model_dump(mode="json") for k, v in sorted(self.solutions.items())}
            ),
        }
        self.participant = Participant(
            kind="scripted",
            model=label,
            protocol="in-process",
            config_digest=digest_of(identity),
            # Its code, for the content stamp of its attempts (agenteval.stamps.code_stamp).
            details={"label": label, "code": identity["code"]},
        )

    def key_env_names(self) -> list[str]:
        return []

    def preflight(self) -> None:
        return None

    async def attempt(self, task: Task, ctx: AttemptContext) -> None:
        solution = self.solutions.get(task.id, task.reference)
        for step in solution.steps:
            await ctx.tools.call(step.tool, step.args)
        ctx.record.answer(solution.answer)


def from_params(params: Mapping[str, Any], root: Path) -> ScriptedHarness:
    """The registry's factory: every task's own reference solution."""
    return ScriptedHarness()
