"""`agenteval fix`: a scripted fixer (a local OpenAI-compatible server playing the LLM fixer)
proposes an overfitting patch, then a good one, in a scratch worktree. Each is a climb round
judged by the keep rule: the overfitting patch (fixes what train exercises, nothing held
needs) is reverted, the good one kept as a commit on the fix branch; the user's tree is
untouched, and the fixer read failing train conversations only, without reference answers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from climb_repo import ROOT, git, make_repo
from servers.common import Reply
from servers.openai_server import OpenAIServer

from agenteval.climb.artifacts import ClimbError
from agenteval.climb.fix import run_fix
from agenteval.climb.fixers import ClaudeCodeFixer

REPLIES = "eval/agents/default/replies.yaml"
PLAIN = (ROOT / REPLIES).read_text()
ABSTAIN = 'abstain: "I could not find that in the documents I have. It is not in the documents."'
MISSING = ('missing_file: "I could not find the file {path}. Please check the name or path and '
           'try again."')  # fmt: skip
START = PLAIN.replace(ABSTAIN, 'abstain: "Let me get back to you."')  # fails to abstain
# Helps train (it abstains again) and breaks what a held scenario needs (the missing-file
# reply): an edit fitted to what train exercises.
OVERFIT = PLAIN.replace(MISSING, 'missing_file: "Working on {path}."')
GOOD = PLAIN
# Train and held both fail on the vague abstention; held also asks for a missing file.
PINS = {"admit_missing_benefit": "train", "honest_about_limits": "train",
        "policy_silent_on_topic": "held", "missing_file_then_recover": "held",
        "no_sycophancy_wrong_number": "test"}  # fmt: skip
# Two scenarios a split: a train-held gap up to 0.6 is taken as sampling noise (the good patch
# moves held by 0.5 where it moves train by 1), beyond it held answers.
CLIMB = {"rounds": 2, "patience": 2, "holdout": {"threshold": 0.6}}


class ScriptedFixer:
    """Plays the LLM: the overfitting patch first, then the good one; keeps every prompt."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def __call__(self, request: dict[str, Any]) -> Reply:
        self.prompts.append(request["messages"][-1]["content"])
        text = OVERFIT if len(self.prompts) == 1 else GOOD
        why = "abstain plainly; be brief about files" if len(self.prompts) == 1 else (
            "say plainly what is not in the documents")  # fmt: skip
        return Reply(json.dumps({"file": REPLIES, "text": text, "why": why}))


def test_the_fix_loop_keeps_the_good_patch_and_reverts_the_overfitting_one(
    tmp_path: Path,
) -> None:
    assert len({START, OVERFIT, GOOD}) == 3
    repo = make_repo(tmp_path / "repo", ids=list(PINS), knobs={}, pins=PINS, climb=CLIMB)
    (repo / REPLIES).write_text(START)
    git(repo, "commit", "-qam", "vague phrasings")
    head = git(repo, "rev-parse", "HEAD").strip()
    fixer = ScriptedFixer()
    with OpenAIServer(reply_fn=fixer) as server:
        sets = [f"climb.llm.base_url={server.base_url}", "climb.llm.model=fixer-model",
                "climb.llm.protocol=openai"]  # fmt: skip
        summary = run_fix(repo, sets, "llm", echo=lambda _line: None)
    first, second = summary["rounds"]
    assert first["outcome"] == "reverted" and first["train"]["low"] > 0  # train improved
    assert first["held"]["delta"]["mean"] <= 0 and first["held"]["answered_by"] == "held"
    assert "held is not improved" in first["reason"]
    assert second["outcome"] == "kept" and second["keep_rule"] == "free text"
    branch = summary["branch"]
    assert branch.startswith("fix/") and git(repo, "show", f"{branch}:{REPLIES}") == PLAIN
    # the user's tree and branch are untouched; the patch waits on the fix branch
    assert git(repo, "rev-parse", "HEAD").strip() == head
    assert (repo / REPLIES).read_text() == START
    assert not git(repo, "status", "--porcelain")
    # the fixer read failing train conversations, nothing of held, no reference answer
    prompt = fixer.prompts[0]
    assert "The failing training conversations:" in prompt and "Let me get back" in prompt
    for sid, split in PINS.items():
        path = next((repo / "eval/scenarios").rglob(f"{sid}.yaml"))
        scenario = yaml.safe_load(path.read_text())
        for turn in scenario["turns"]:
            message = turn.get("user_message") or turn["objective"]
            if split != "train":
                assert message not in prompt, (sid, message)
            answer = (turn.get("ground_truth") or {}).get("expected_answer")
            assert not answer or str(answer) not in prompt, (sid, answer)
    shutil.rmtree(summary["worktree"], ignore_errors=True)


def test_claude_code_is_refused_with_the_reason_when_not_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no `claude` anywhere
    with pytest.raises(ClimbError, match="`claude` command, which is not installed"):
        ClaudeCodeFixer(ROOT)


class Interrupted:
    """A fixer interrupted (Ctrl-C) while it writes its first patch."""

    name = "interrupted"

    def propose(self, ctx: Any) -> None:
        raise KeyboardInterrupt

    def observe(self, *args: Any) -> None:  # never reached
        raise AssertionError


def _left_behind(repo: Path) -> tuple[str, str, bool]:
    branches = git(repo, "branch", "--list", "fix/*").strip()
    trees = git(repo, "worktree", "list", "--porcelain").count("worktree ")
    return (
        branches,
        str(trees),
        (repo / "runs" / "fix").exists() and any((repo / "runs" / "fix").iterdir()),
    )


def test_an_interrupted_or_refused_fix_leaves_no_worktree_or_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", ids=list(PINS), knobs={}, pins=PINS, climb=CLIMB)
    with pytest.raises(ClimbError, match="--fixer: 'bogus' is not one of"):
        run_fix(repo, [], "bogus", echo=lambda _line: None)
    assert _left_behind(repo) == ("", "1", False)  # refused before a worktree existed
    with pytest.raises(KeyboardInterrupt):
        run_fix(repo, [], "llm", echo=lambda _line: None, proposer=Interrupted())
    assert _left_behind(repo) == ("", "1", False)
    assert not git(repo, "status", "--porcelain").strip()
