"""The held ledger (issue 38): each way a spent held split was reset or bypassed, refused or
recorded. Every repository is a scratch copy; the split is spent through the ledger exactly
as a session spends it (a counted Thresholdout query, appended and committed), and each
bypass is then tried with the real command line, which must refuse before any work.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

from agenteval.climb.artifacts import ClimbError, Edit
from agenteval.climb.evaluation import session_params, suites
from agenteval.climb.ledger import LEDGER, HeldSplit, HoldoutFlags, Ledger
from agenteval.climb.run import run_session
from agenteval.climb.session import prepare
from tests.climb_repo import HELD, TEST, TRAIN, agenteval, git, make_repo, pin

SMALL = [*TRAIN[:3], *HELD[:3], *TEST[:1]]


def spend(repo: Path, queries: int = 1, overrides: Sequence[str] = ()) -> str:
    """Ask the held split `queries` questions through its ledger, as a session does, and
    commit the ledger; returns the split's digest."""
    params = session_params(repo, list(overrides))
    _, everything = suites(repo, list(overrides))
    ledger = Ledger.open(repo, params, HeldSplit.of(everything), "test-spend")
    for _ in range(queries):
        ledger.mechanism.query(0.0, 0.0)
        ledger.save()
    ledger.flush()
    git(repo, "add", LEDGER)
    git(repo, "commit", "-qm", "held queries")
    return ledger.split.digest


def spent_repo(tmp_path: Path, **kw: object) -> Path:
    """A copy whose held split is spent (`pins={}`: the deal is the suite's own)."""
    repo = make_repo(tmp_path / "repo", climb={"holdout": {"max_queries": 1}}, **kw)  # type: ignore[arg-type]
    spend(repo)
    return repo


def dealt(repo: Path, split: str) -> list[str]:
    """The ids the repository's own deal puts in `split` (every scenario file)."""
    _, everything = suites(repo, [])
    return sorted(sid for sid, name in HeldSplit.of(everything).assignment.items() if name == split)


def refused(repo: Path, *args: str) -> str:
    """Run `agenteval climb ARGS`; it must exit 2 before any work. Returns stderr."""
    head = git(repo, "rev-parse", "HEAD")
    done = agenteval(repo, "climb", *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert not (repo / "runs").exists() and git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "branch", "--list", "climb/*").strip() == ""
    return done.stderr


def set_params(repo: Path, edit: str, to: str) -> None:
    params = repo / "params.yaml"
    assert edit in params.read_text()
    params.write_text(params.read_text().replace(edit, to))
    git(repo, "commit", "-qam", "params edited")


# ------------------------------------------------------------------ the seven bypasses


def test_bypass_1_raising_max_queries_is_refused_or_recorded_as_a_reset(tmp_path: Path) -> None:
    repo = spent_repo(tmp_path, ids=SMALL, tracking=True)
    said = refused(repo, "--set", "climb.holdout.max_queries=50")
    assert "climb.holdout.max_queries = 50 (the ledger's: 1)" in said and "--reset-holdout" in said
    said = refused(repo, "--set", "climb.holdout.budget=60")  # any limit of the mechanism
    assert "climb.holdout.budget = 60 (the ledger's: 6)" in said
    set_params(repo, "max_queries: 1", "max_queries: 50")  # committed in params.yaml: the same
    assert "climb.holdout.max_queries = 50 (the ledger's: 1)" in refused(repo)

    lines: list[str] = []
    result = run_session(repo, [], proposer=Idle(), echo=lines.append,
                         flags=HoldoutFlags(reset=True))  # fmt: skip
    reset = result["holdout"]["reset"]
    assert reset["before"]["max_queries"] == 1 and reset["after"]["max_queries"] == 50
    assert any(
        line.startswith("HOLDOUT RESET recorded: climb.holdout.max_queries") for line in lines
    )
    assert any(line.startswith("HOLDOUT RESET this session") for line in lines)
    assert json.loads((repo / "reports/climb.json").read_text())["holdout"]["reset"] == reset
    with sqlite3.connect(repo / "mlflow.db") as db:
        tag = db.execute("select value from tags where key = 'climb.holdout_reset'").fetchall()
    assert tag == [("climb.holdout.max_queries 1 -> 50 (held split " + reset["split"][:12] + ")",)]
    kinds = [json.loads(x)["kind"] for x in (repo / LEDGER).read_text().splitlines()]
    assert kinds == ["split", "query", "reset"]  # the reset is in the ledger, committed
    assert git(repo, "status", "--porcelain").strip() == ""
    # Queries asked before the reset still count: 1 of 50, not 0.
    assert result["holdout"]["queries"] == 1 and result["holdout"]["max_queries"] == 50


def test_bypass_2_a_ledger_path_cannot_be_set(tmp_path: Path) -> None:
    repo = spent_repo(tmp_path)
    said = refused(repo, "--set", "climb.holdout.ledger=runs/elsewhere")
    assert "--set climb.holdout.ledger: the held ledger has no path to set" in said
    done = agenteval(repo, "climb", "evaluate", "--set", "climb.holdout.ledger=x")
    assert done.returncode == 2 and "climb.holdout.ledger" in done.stderr


def test_bypass_3_selecting_all_but_one_held_scenario_is_the_same_ledger(tmp_path: Path) -> None:
    repo = spent_repo(tmp_path)
    every = [*TRAIN, *HELD, *TEST]
    fewer = [sid for sid in every if sid != HELD[0]]
    set_params(repo, f"  - {HELD[0]}\n", "")
    assert "held split is spent (1 of 1 held queries used)" in refused(repo)
    whole = prepare(repo, [f"suite.ids={json.dumps(every)}"], repo / "runs/x")
    part = prepare(repo, [f"suite.ids={json.dumps(fewer)}"], repo / "runs/x")
    assert whole.ledger.split.digest == part.ledger.split.digest
    assert HELD[0] not in part.splits["held"] and HELD[0] in whole.splits["held"]


def test_bypass_4_pinning_a_scenario_where_it_already_is_keeps_the_spent_ledger(
    tmp_path: Path,
) -> None:
    repo = spent_repo(tmp_path, pins={})
    before = dealt(repo, "held")
    pin(repo, before[1], "held")
    git(repo, "commit", "-qam", "pinned where it is")
    # Pinned where the deal put it, the scenario's answer group stays where it was and
    # nothing moves: the same held split, so the same spent ledger; --new-split has no new
    # split to open and says so.
    assert dealt(repo, "held") == before
    assert "held split is spent (1 of 1 held queries used)" in refused(repo)
    assert "--new-split: nothing moved" in refused(repo, "--new-split")


def test_a_pin_that_moves_scenarios_needs_new_split_and_names_them(tmp_path: Path) -> None:
    repo = spent_repo(tmp_path, pins={})
    moving = dealt(repo, "train")[0]
    pin(repo, moving, "held")
    git(repo, "commit", "-qam", "pinned to held")
    said = refused(repo)
    assert "train -> held" in said and moving in said and "--new-split" in said
    assert "continues the ledger of its parent" in said  # one scenario more: the same split
    assert "held split is spent" in refused(repo, "--new-split")


def test_bypass_5_an_edited_ledger_is_refused_and_removed_lines_still_count(
    tmp_path: Path,
) -> None:
    repo = spent_repo(tmp_path)
    ledger = repo / LEDGER
    lines = ledger.read_text().splitlines(keepends=True)
    assert json.loads(lines[1])["kind"] == "query"
    ledger.write_text(lines[0] + lines[1].replace('"query":1', '"query":0'))
    assert "not clean (eval/climb/holdout_ledger.jsonl)" in refused(repo)  # uncommitted
    git(repo, "commit", "-qam", "ledger edited")
    said = refused(repo)
    assert f"{LEDGER}:2: this ledger line was edited" in said
    # Taking the query out (and committing that) gives nothing back: git still has it.
    ledger.write_text(lines[0])
    git(repo, "commit", "-qam", "query removed")
    assert "held split is spent" in refused(repo)
    git(repo, "rm", "-q", LEDGER)
    git(repo, "commit", "-qm", "ledger removed")
    assert "held split is spent" in refused(repo)


def test_a_line_taken_out_of_the_middle_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", climb={"holdout": {"max_queries": 5}})
    spend(repo, queries=3)
    lines = (repo / LEDGER).read_text().splitlines(keepends=True)
    (repo / LEDGER).write_text(lines[0] + lines[1] + lines[3])
    git(repo, "commit", "-qam", "second query taken out")
    assert f"{LEDGER}:3: the line this one was appended after is gone" in refused(repo)


def test_bypass_6_a_fresh_clone_or_a_deleted_branch_keeps_the_queries(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", climb={"holdout": {"max_queries": 1}})
    git(repo, "checkout", "-q", "-b", "side")
    spend(repo)  # committed on a side branch only
    git(repo, "checkout", "-q", "main")
    assert not (repo / LEDGER).exists()
    assert "held split is spent" in refused(repo)  # another branch of the repository has it
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    assert not (clone / LEDGER).exists()  # main has no ledger; origin/side has it
    assert "held split is spent" in refused(clone)
    git(repo, "branch", "-q", "-D", "side")
    assert "held split is spent" in refused(repo)  # the journal in .git/agenteval keeps it


def test_bypass_7_a_new_salt_needs_new_split_and_starts_a_ledger_with_its_parent(
    tmp_path: Path,
) -> None:
    repo = spent_repo(tmp_path, pins={})
    old = json.loads((repo / LEDGER).read_text().splitlines()[0])["split"]
    said = refused(repo, "--set", "suite.split.salt=rotated")
    assert "salt 'agenteval-split-1' -> 'rotated'" in said and "--new-split" in said
    moved = [line for line in said.splitlines() if " -> " in line and line.startswith("  ")]
    assert moved  # each move named with its scenarios
    state = prepare(
        repo, ["suite.split.salt=rotated"], repo / "runs/x", HoldoutFlags(new_split=True)
    )
    assert state.ledger.parent == old and state.mechanism.queries == 0
    assert any("were held before" in note for note in state.ledger.notes)
    state.ledger.flush()
    opened = json.loads((repo / LEDGER).read_text().splitlines()[-1])
    assert opened["kind"] == "split" and opened["parent"] == old
    assert opened["rule"]["salt"] == "rotated" and opened["split"] == state.ledger.split.digest
    # Back on the old salt, the old split's ledger continues, still spent.
    git(repo, "commit", "-qam", "new split opened")
    said = refused(repo, "--new-split")
    assert "held split is spent" in said


def test_climb_evaluate_refused_by_the_ledger_keeps_the_edit(tmp_path: Path) -> None:
    repo = spent_repo(tmp_path)
    prompt = repo / "eval/agents/default/system_prompt.md"
    prompt.write_text(prompt.read_text() + "- Read the whole table row before answering.\n")
    edited = prompt.read_bytes()
    done = agenteval(repo, "climb", "evaluate", "--set", "suite.split.salt=rotated")
    assert done.returncode == 2 and "--new-split" in done.stderr, done.stdout + done.stderr
    assert prompt.read_bytes() == edited  # nothing lost
    done = agenteval(repo, "climb", "evaluate", "--set", "climb.holdout.max_queries=9")
    assert done.returncode == 2 and "--reset-holdout" in done.stderr
    assert prompt.read_bytes() == edited
    assert git(repo, "status", "--porcelain").strip() == "M eval/agents/default/system_prompt.md"


def test_nothing_to_reset_and_nothing_moved_are_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    spend(repo, queries=0)
    assert "nothing to reset" in refused(repo, "--reset-holdout")
    assert "--new-split: nothing moved" in refused(repo, "--new-split")


class Idle:
    """A planted proposer with nothing to offer: the session evaluates the parent and test."""

    name = "idle"

    def propose(self, ctx: object) -> Edit | None:
        return None

    def observe(self, edit: Edit, outcome: str, train: object) -> None:
        return None


# ------------------------------------------------------------------ the ledger's own rules


def test_forks_merge_by_union_and_count_every_query(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", climb={"holdout": {"max_queries": 5}})
    spend(repo)
    for branch in ("a", "b"):  # two branches each ask one more question
        git(repo, "checkout", "-q", "-b", branch, "main")
        spend(repo)
    git(repo, "checkout", "-q", "a")
    git(repo, "merge", "-q", "-m", "merge b", "b")  # eval/climb/.gitattributes: merge=union
    lines = (repo / LEDGER).read_text().splitlines()
    assert len(lines) == 4  # the split, the common query, one from each branch
    state = prepare(repo, [], repo / "runs/x")
    assert state.mechanism.queries == 3
    assert state.mechanism.draws == sum(json.loads(x).get("draws", 0) for x in lines)


def test_a_crash_cut_journal_line_is_ignored(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    spend(repo)
    journal = repo / ".git/agenteval/holdout_ledger.jsonl"
    journal.write_bytes(journal.read_bytes() + b'{"seq":3,"kind":"qu')
    assert prepare(repo, [], repo / "runs/x").mechanism.queries == 1
    journal.write_bytes(journal.read_bytes().replace(b'"draws":', b'"draws": 1'))
    with pytest.raises(ClimbError, match=r"holdout_ledger\.jsonl:2: this ledger line was edited"):
        prepare(repo, [], repo / "runs/x")
