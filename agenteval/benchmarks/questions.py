"""A question with a short answer as a one-turn scenario: the record and the suite the
engine runs, shared by the QA benchmark (its task files) and the retrieval benchmark (its
labelled questions, asked over the whole library)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agenteval.corpus.pins import corpus_digest
from agenteval.fileio import digest_of
from agenteval.schema.corpus import Manifest
from agenteval.schema.scenario import IndexDocument, Scenario, Setup, Turn
from agenteval.schema.suite import Suite, SuiteItem

PERSONA = "qa_benchmark"
OBJECTIVE = "Answer the question with a short final answer."


class QATask(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.\-]+$")
    question: str = Field(min_length=1)
    answer: str = Field(min_length=1, description="The ground truth, as short as possible.")
    level: int = Field(ge=1, le=3, description="1 lookup, 2 inference or discovery, 3 multi-step.")
    files: list[str] = Field(
        default_factory=list,
        description="Repository-relative files indexed before the question; [] lets the "
        "agent discover its documents.",
    )
    aliases: list[str] = Field(
        default_factory=list, description="Other accepted forms of the answer."
    )

    @field_validator("answer", mode="before")
    @classmethod
    def _scalar_to_text(cls, value: object) -> object:
        # GAIA and hand-written JSON give numeric answers as numbers; they are text to match.
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        return value


def as_scenario(task: QATask) -> Scenario:
    """The task as a one-turn conversation: the question is the user's only message."""
    return Scenario(
        id=task.id,
        category=f"level_{task.level}",
        persona=PERSONA,
        setup=Setup(index_documents=[IndexDocument(path=f) for f in task.files]),
        turns=[Turn(turn=1, objective=OBJECTIVE, user_message=task.question)],
    )


def build_qa_suite(
    tasks: list[QATask], attempts: int, seed: int, root: Path, manifest: Manifest | None
) -> Suite:
    """The suite the engine runs: one item per task, `attempts` iterations (own seeds)."""
    items = []
    for task in sorted(tasks, key=lambda t: t.id):
        scenario = as_scenario(task)
        missing = [f for f in task.files if not (root / f).is_file()]
        items.append(
            SuiteItem(
                path=task.id,
                digest=digest_of({"task": task, "scenario": scenario}),
                scenario=scenario,
                missing_documents=missing,
            )
        )
    return Suite(
        iterations=attempts,
        seed=seed,
        scenario_set_digest=digest_of(sorted((i.scenario.id, i.digest) for i in items)),
        corpus_digest=corpus_digest(manifest, root),
        items=items,
    )
