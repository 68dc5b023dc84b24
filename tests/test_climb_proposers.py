"""What a proposer sees (issue 38.5 and 38.3): the parent as it is after a kept round, held
only as Thresholdout released it, and a clean refusal when the llm proposer has no endpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agenteval.climb.artifacts import Edit, Spec
from agenteval.climb.proposers import Context, SearchProposer, render_prompt
from agenteval.climb.run import run_session
from agenteval.schema.agent import KnobRange
from tests.climb_repo import agenteval, git, make_repo

ROOT = Path(__file__).resolve().parents[1]


class Score:
    def __init__(self, low: float) -> None:
        self.low = low


def test_search_scores_every_move_again_against_a_new_parent() -> None:
    spec = Spec(ROOT, "eval/agents/default", (), {"top_k": KnobRange(type="int", low=1, high=10)})
    tried: list[tuple[str, int]] = []
    parent = {"name": "a"}

    def try_train(edit: Edit) -> Score:
        tried.append((parent["name"], int(edit.value or 0)))
        return Score(-abs(int(edit.value or 0) - 7) / 10)

    search = SearchProposer(seed=0, trials=4)
    first = search.propose(Context(spec, {"top_k": 4}, {}, [], parent="a", try_train=try_train))  # type: ignore[arg-type]
    assert first is not None and first.knob == "top_k"
    search.observe(first, "kept", None)
    parent["name"] = "b"
    after = Context(spec, {"top_k": first.value}, {}, [], round=2, parent="b",
                    try_train=try_train)  # type: ignore[arg-type]  # fmt: skip
    second = search.propose(after)
    assert second is not None and second.value != first.value
    assert f"top_k {first.value} -> {second.value}" in second.why  # from the new parent
    # Four fresh moves scored against the new parent, none borrowed from the old one.
    assert len([t for t in tried if t[0] == "b"]) == 4


class KeepThenLook:
    """Round 1: a move that is kept from the naive start. Round 2: records what it sees."""

    name = "planted"

    def __init__(self) -> None:
        self.seen: list[Context] = []

    def propose(self, ctx: Context) -> Edit | None:
        self.seen.append(ctx)
        if ctx.round == 1:
            return Edit(knob="abstain_threshold", value=0.2, why="planted")
        return None

    def observe(self, edit: Edit, outcome: str, train: object) -> None:
        return None


def test_after_a_kept_round_the_proposer_sees_the_new_parent_and_held_as_released(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", climb={"margin": 0.1})
    proposer = KeepThenLook()
    result = run_session(repo, [], proposer=proposer, echo=lambda _line: None)
    assert result["rounds"][0]["outcome"] == "kept", result["rounds"][0]["reason"]
    first, second = proposer.seen
    assert first.knobs["abstain_threshold"] == 0.5 and second.knobs["abstain_threshold"] == 0.2
    assert first.parent and second.parent and first.parent != second.parent
    held: dict[str, Any] = second.history[0]["held"]
    assert set(held) == {"released", "answered_by", "bound"}  # no held gain, no scenario
    prompt = render_prompt("{knobs}\n{history}", second)
    assert "abstain_threshold = 0.2 " in prompt and "Thresholdout answered" in prompt
    for sid in [*result["split"]["ids"]["held"], *result["split"]["ids"]["test"]]:
        assert sid not in prompt


def test_the_llm_proposer_without_its_endpoint_is_refused_before_any_work(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    head = git(repo, "rev-parse", "HEAD")
    for args, said in (
        ((), "--proposer llm needs its endpoint: climb.llm.model and climb.llm.base_url not set"),
        (("--set", "climb.llm.base_url=http://127.0.0.1:9/v1"), "climb.llm.model not set"),
        (("--set", "climb.llm.model=m", "--set", "climb.llm.api_key_env=AGENTEVAL_NO_SUCH_KEY"),
         "climb.llm.api_key_env: the environment variable AGENTEVAL_NO_SUCH_KEY is not set"),
        (("--set", "climb.llm.model=m", "--set", "climb.llm.base_url=http://127.0.0.1:9/v1",
          "--set", "climb.llm.prompt=eval/prompts/missing.md"),
         "climb.llm.prompt: no file eval/prompts/missing.md"),
    ):  # fmt: skip
        done = agenteval(repo, "climb", "--proposer", "llm", *args)
        assert done.returncode == 2 and said in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    assert not (repo / "runs").exists() and not (repo / "eval/climb/holdout_ledger.jsonl").exists()
    assert (
        git(repo, "rev-parse", "HEAD") == head and git(repo, "branch", "--list").strip() == "* main"
    )
