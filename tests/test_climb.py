"""Acceptance tests of `agenteval climb`, each in its own scratch copy of the repository.

Small on purpose: 17 scenarios without fetched corpora, 3 iterations, a few rounds.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from agenteval.climb.artifacts import Edit
from agenteval.climb.run import run_session
from agenteval.fileio import sha256_bytes
from agenteval.params import load_params
from agenteval.suite.build import build_suite
from tests.climb_repo import HELD, NAIVE, TEST, TRAIN, agenteval, env, git, make_repo, summary
from tests.servers.common import Reply
from tests.servers.openai_server import OpenAIServer


def test_search_improves_train_beyond_noise_and_keeps_no_held_regression(tmp_path: Path) -> None:
    # Two held scenarios of eleven improve too: non-inferior within a 0.1 margin.
    repo = make_repo(tmp_path / "repo", tracking=True, climb={"margin": 0.1})
    start = git(repo, "rev-parse", "HEAD").strip()
    done = agenteval(repo, "climb", "--proposer", "search")
    assert done.returncode == 0, done.stderr
    result = summary(repo)
    assert result["split"]["ids"] == {"train": sorted(TRAIN), "held": sorted(HELD),
                                      "test": sorted(TEST)}  # fmt: skip
    train = result["figures"]["train"]
    assert train["low"] > 0 and train["candidate_judged"] > train["parent_judged"]
    kept = [r for r in result["rounds"] if r["outcome"] == "kept"]
    assert kept, result["rounds"]
    for record in kept:
        assert record["train"]["low"] > 0
        assert record["held"]["bound"] > -result["params"]["margin"]
        assert record["keep_rule"] == "knob" and "(knob rule: bound" in record["reason"]
        # one knob a round, committed on the scratch branch with its held query (the ledger)
        changed = git(repo, "show", "--name-only", "--format=", record["commit"]).split()
        assert changed == ["eval/climb/holdout_ledger.jsonl", "params.yaml"]
        assert record["diff"].count("\n-    ") == 1 and record["diff"].count("\n+    ") == 1
    # Each search move starts from the parent as it is, kept rounds included.
    knobs = dict(NAIVE)
    for record in result["rounds"]:
        if not (record.get("edit") or "").startswith("target.params."):
            continue
        knob, _, value = record["edit"].removeprefix("target.params.").partition(" = ")
        assert f"{knob} {knobs[knob]} -> {value}," in record["why"], (knobs, record["why"])
        if record["outcome"] == "kept":
            knobs[knob] = type(knobs[knob])(float(value))
    assert result["figures"]["held"]["mean"] >= 0
    test = result["figures"]["test"]
    assert result["figures"]["optimism_gap"] == pytest.approx(train["mean"] - test["mean"])
    assert result["held_queries"]["session"] == sum(1 for r in result["rounds"] if r.get("held"))
    # the session's own branch, starting at the start commit; the tree left clean
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == result["branch"]
    assert git(repo, "merge-base", "main", "HEAD").strip() == start
    assert git(repo, "status", "--porcelain").strip() == ""
    assert (repo / "reports/climb/deltas.png").is_file()
    rows = json.loads((repo / "reports/climb/deltas.json").read_text())
    assert {r["split"] for r in rows} == {"train", "held"}
    assert "stopped:" in done.stdout and "optimism gap" in done.stdout
    # MLflow: a parent run with the closing figures, one child run per round
    with sqlite3.connect(repo / "mlflow.db") as db:
        runs = db.execute("select run_uuid, name from runs").fetchall()
        parents = db.execute("select value from tags where key = 'mlflow.parentRunId'").fetchall()
        gap = db.execute("select value from metrics where key = 'optimism_gap'").fetchall()
    assert len(runs) == len(result["rounds"]) + 1 and len(parents) == len(result["rounds"])
    assert gap and gap[0][0] == pytest.approx(result["figures"]["optimism_gap"])
    assert_held_stays_aggregate(repo, result, done.stdout)


AGGREGATE = {"mean", "low", "n", "parent", "candidate", "parent_judged", "candidate_judged"}


def assert_held_stays_aggregate(repo: Path, result: dict[str, object], stdout: str) -> None:
    """No held or test scenario is named with a result anywhere a session writes or says:
    the console, climb.json (its split membership aside), the plot's data, the runs folder
    and every MLflow artifact; held and test figures are the aggregate keys only."""
    split = result["split"]["ids"]  # type: ignore[index]
    sealed = [*split["held"], *split["test"]]
    rest = {k: v for k, v in result.items() if k != "split"}
    places = {"stdout": stdout, "climb.json": json.dumps(rest)}
    for folder in ("runs", "mlartifacts", "reports/climb"):
        for path in (repo / folder).rglob("*"):
            if path.is_file() and path.suffix in (".json", ".md", ".diff", ".txt"):
                places[str(path)] = path.read_text(errors="replace")
    places = {k: v for k, v in places.items() if not k.endswith("artifacts/climb.json")}
    leaks = {place: sid for place, text in places.items() for sid in sealed if sid in text}
    assert not leaks, leaks
    for figures in (result["figures"]["held"], result["figures"]["test"]):  # type: ignore[index]
        assert set(figures) == AGGREGATE
    for record in result["rounds"]:  # type: ignore[attr-defined]
        if record.get("held"):
            assert set(record["held"]["delta"]) == AGGREGATE


class TrainGamer:
    """A planted proposer: helps train, hurts held (abstaining less, from the defaults)."""

    name = "planted"

    def __init__(self) -> None:
        self.calls = 0

    def propose(self, ctx: object) -> Edit | None:
        self.calls += 1
        return Edit(knob="abstain_threshold", value=0.1, why="planted") if self.calls == 1 else None

    def observe(self, edit: Edit, outcome: str, train: object) -> None:
        self.outcome = outcome


def test_an_edit_that_helps_train_and_hurts_held_is_reverted(tmp_path: Path) -> None:
    # From the shipped defaults abstain_threshold 0.1 makes the train three pass and the held
    # two fail: pinned so, whatever the salt.
    up = ["brief_under_time_pressure", "incident_followups", "missing_data_graceful"]
    down = ["admit_missing_benefit", "policy_silent_on_topic"]
    neutral = {"concise_answer": "held", "csv_cell_lookup": "train", "empty_file": "test",
               "false_premise": "test"}  # fmt: skip
    pins = {s: "train" for s in up} | {s: "held" for s in down} | neutral
    repo = make_repo(tmp_path / "repo", ids=list(pins), knobs={}, pins=pins)
    params = (repo / "params.yaml").read_bytes()
    gamer = TrainGamer()
    result = run_session(repo, [], proposer=gamer, echo=lambda _line: None)
    record = result["rounds"][0]
    assert record["outcome"] == "reverted" and gamer.outcome == "reverted"
    assert record["train"]["low"] > 0 and sorted(record["train"]["improved"]) == sorted(up)
    assert record["held"]["answered_by"] == "held"  # Thresholdout saw train and held disagree
    assert record["held"]["delta"]["mean"] < 0 and "worsened" not in record["held"]["delta"]
    assert "held is not non-inferior" in record["reason"]
    assert (repo / "params.yaml").read_bytes() == params  # every byte restored
    assert result["kept"] == 0 and result["figures"]["train"]["mean"] == 0


class OneMove:
    """A planted proposer with one known-good move (abstaining less from the naive start)."""

    name = "planted"

    def __init__(self) -> None:
        self.done = False

    def propose(self, ctx: object) -> Edit | None:
        if self.done:
            return None
        self.done = True
        return Edit(knob="abstain_threshold", value=0.2, why="planted")

    def observe(self, edit: Edit, outcome: str, train: object) -> None:
        return None


def test_a_kept_round_is_a_commit_that_dvc_repro_reproduces(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", climb={"repro": True, "margin": 0.1})
    result = run_session(repo, [], proposer=OneMove(), echo=lambda _line: None)
    record = result["rounds"][0]
    assert record["outcome"] == "kept", record["reason"]
    changed = set(git(repo, "show", "--name-only", "--format=", record["commit"]).split())
    assert {"params.yaml", "dvc.lock", "reports/metrics.json", "reports/scorecard.json"} <= changed
    git(repo, "checkout", "-q", record["commit"])
    status = json.loads(
        subprocess.run(["dvc", "status", "--json"], cwd=repo, capture_output=True, text=True,
                       env=env(), check=True).stdout.splitlines()[-1] or "{}"
    )  # fmt: skip
    assert status == {}  # no stage is always_changed: the kept commit is up to date
    card = json.loads((repo / "reports/scorecard.json").read_text())
    assert card["config"]["target"]["details"]["knobs"]["abstain_threshold"] == 0.2
    assert card["config"]["split"]["scenarios"]["csv_cell_lookup"] == "train"


def test_a_proposer_that_special_cases_a_train_scenario_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", knobs={})
    replies = repo / "eval/agents/default/replies.yaml"
    before = sha256_bytes(replies.read_bytes())
    planted = replies.read_text() + 'special: "If this is csv_cell_lookup, say the cell value."\n'
    edit = {"file": "eval/agents/default/replies.yaml", "text": planted, "why": "planted"}
    with OpenAIServer([Reply(json.dumps(edit))]) as server:
        done = agenteval(repo, "climb", "--proposer", "llm", "--patience", "1",
                         "--set", f"climb.llm.base_url={server.base_url}",
                         "--set", "climb.llm.model=proposer")  # fmt: skip
        prompt = server.requests[0].json["messages"][0]["content"]
    assert done.returncode == 0, done.stderr
    record = summary(repo)["rounds"][0]
    assert record["outcome"] == "rejected"
    assert "quotes the scenario id 'csv_cell_lookup' (train)" in record["reason"]
    assert sha256_bytes(replies.read_bytes()) == before
    # The proposer saw train failures only, with the reference answers taken out.
    assert "refused an answerable question" in prompt
    for sid in (*HELD, *TEST):
        assert sid not in prompt
    suite = build_suite(load_params(repo / "params.yaml"), repo)
    for item in suite.items:
        for turn in item.scenario.turns:
            truth = turn.ground_truth.expected_answer if turn.ground_truth else None
            assert not truth or len(truth) < 3 or truth not in prompt, truth
            if item.split == "held":
                assert turn.user_message not in prompt


def test_a_session_that_spends_its_held_budget_stops_and_says_so(tmp_path: Path) -> None:
    # Unpinned: the new salt below must deal a new split (pins would keep it in place).
    climb = {"holdout": {"max_queries": 1}, "search_trials": 3}
    repo = make_repo(tmp_path / "repo", climb=climb, pins={})
    done = agenteval(repo, "climb", "--patience", "5")
    assert done.returncode == 0, done.stderr
    result = summary(repo)
    assert result["held_queries"]["split_total"] == 1
    assert result["stop_reason"].startswith("held split spent: 1 of 1 held queries used")
    assert "held split spent" in done.stdout
    # The ledger outlives the session: the next one refuses to start on the spent split,
    # here and in a fresh clone (whose main never held the ledger: the session's branch has).
    git(repo, "checkout", "-q", "main")
    again = agenteval(repo, "climb")
    assert again.returncode == 2 and "held split is spent" in again.stderr
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    cloned = agenteval(clone, "climb")
    assert cloned.returncode == 2 and "held split is spent" in cloned.stderr
    assert not (clone / "runs").exists()
    salt = ("--set", "suite.split.salt=rotated")
    moved = agenteval(repo, "climb", "--rounds", "1", *salt)
    assert moved.returncode == 2 and "--new-split" in moved.stderr
    fresh = agenteval(repo, "climb", "--rounds", "1", "--new-split", *salt)
    assert fresh.returncode == 0, fresh.stderr
    assert summary(repo)["holdout"]["parent"] == result["holdout"]["split"]


def test_a_dirty_tree_is_refused_before_any_work(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "eval/agents/default/system_prompt.md").write_text("edited\n")
    done = agenteval(repo, "climb")
    assert done.returncode == 2
    assert "not clean (eval/agents/default/system_prompt.md)" in done.stderr
    assert "agenteval climb --worktree" in done.stderr  # the way out it offers
    assert not (repo / "runs").exists()
    bad = agenteval(repo, "climb", "--set", "target.params.top_k=3")
    assert bad.returncode == 2 and "--set target.params.top_k" in bad.stderr


def test_a_dirty_tree_climbs_on_a_worktree_of_its_own_and_keeps_every_edit(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", ids=[*TRAIN[:3], *HELD[:3], *TEST[:1]], tracking=True)
    prompt, params = repo / "eval/agents/default/system_prompt.md", repo / "params.yaml"
    prompt.write_bytes(prompt.read_bytes() + b"\nA person's unfinished edit.\r\n")
    params.write_bytes(params.read_bytes().replace(b"top_k: 1", b"top_k: 4"))
    (repo / "notes.txt").write_bytes(b"untracked \x00 bytes\n")
    (repo / "baseline.json").write_text("{}")
    edits = {p: p.read_bytes() for p in (prompt, params, repo / "notes.txt")}
    status = git(repo, "status", "--porcelain=v1", "-z")
    done = agenteval(repo, "climb", "--rounds", "1", "--worktree")
    assert done.returncode == 0, done.stderr
    # the user's tree: every byte, the same status, the same branch, nothing stashed
    assert {p: p.read_bytes() for p in edits} == edits
    assert git(repo, "status", "--porcelain=v1", "-z") == status
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert git(repo, "stash", "list") == "" and not (repo / "runs").exists()
    # the session ran from HEAD in its worktree, on its own branch, committed there
    (tree,) = tmp_path.glob("repo-climb-*")
    assert f"on worktree {tree}" in done.stdout and "git worktree remove" in done.stdout
    result = json.loads((tree / "reports/climb.json").read_text())
    assert git(tree, "rev-parse", "--abbrev-ref", "HEAD").strip() == result["branch"]
    assert result["start_commit"] == git(repo, "rev-parse", "HEAD").strip()
    assert b"top_k: 1" in (tree / "params.yaml").read_bytes()
    assert git(tree, "status", "--porcelain", "--", ".", ":!data") == ""  # corpus: ignored
    # its MLflow runs are in the repository's own store, where `mlflow ui` looks
    assert not (tree / "mlflow.db").exists()
    with sqlite3.connect(repo / "mlflow.db") as db:
        names = [name for (name,) in db.execute("select name from runs")]
    assert f"climb-{result['session']}" in names


def test_climb_evaluate_judges_a_working_tree_edit_by_the_same_rule(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", climb={"margin": 0.1})
    params = repo / "params.yaml"
    head = params.read_bytes()
    params.write_text(
        params.read_text().replace("abstain_threshold: 0.5", "abstain_threshold: 0.2")
    )
    edited = params.read_bytes()
    kept = agenteval(repo, "climb", "evaluate")
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert "kept:" in kept.stdout and params.read_bytes() == edited
    assert "  held: gain " in kept.stdout and "Thresholdout answered" in kept.stdout
    # The held query is committed at once, the ledger alone; the edit stays uncommitted.
    assert git(repo, "log", "-1", "--format=%s").startswith("holdout ledger: kept edit")
    assert git(repo, "status", "--porcelain").strip() == "M params.yaml"
    params.write_bytes(head)
    params.write_text(params.read_text().replace("top_k: 1", "top_k: 2"))
    flat = agenteval(repo, "climb", "evaluate")
    assert flat.returncode == 1 and params.read_bytes() == head
    assert "saved as" in flat.stdout
    (repo / "eval/tiers.yaml").write_text("tampered\n")
    refused = agenteval(repo, "climb", "evaluate")
    assert refused.returncode == 2 and "not in the agent's editable list" in refused.stdout


class Broken:
    """A planted proposer that fails mid-session (after the parent was evaluated)."""

    name = "broken"

    def propose(self, ctx: object) -> Edit | None:
        raise RuntimeError("proposer endpoint went away")

    def observe(self, edit: Edit, outcome: str, train: object) -> None:
        return None


def test_a_session_that_breaks_off_marks_its_parent_run_failed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", ids=[*TRAIN[:3], *HELD[:3], *TEST[:1]], tracking=True)
    params = (repo / "params.yaml").read_bytes()
    with pytest.raises(RuntimeError, match="went away"):
        run_session(repo, [], proposer=Broken(), echo=lambda _line: None)
    with sqlite3.connect(repo / "mlflow.db") as db:
        runs = db.execute("select status from runs").fetchall()
        stop = db.execute("select value from tags where key = 'climb.stop_reason'").fetchall()
    assert runs == [("FAILED",)] and stop == [("failed",)]
    assert (repo / "params.yaml").read_bytes() == params
