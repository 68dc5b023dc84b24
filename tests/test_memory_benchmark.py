"""`agenteval memory` on the shipped scenarios: the pr suite with the reference memory, the
gate check by check, bad scenario files, the full suite's model path over a loopback
OpenAI-compatible server, and how checks and answers are read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from agenteval.benchmarks.memory.checks import grade_answer, matches
from agenteval.benchmarks.memory.gate import GateRefused, gate
from agenteval.benchmarks.memory.model import parse_memories
from agenteval.benchmarks.memory.records import AnswerExpect, Match, MemoryResults
from agenteval.benchmarks.memory.run import load_results, write_outputs
from agenteval.cli import app
from tests.memory_params import params_of, run_suite
from tests.servers import OpenAIServer, Reply

ROOT = Path(__file__).resolve().parents[1]
PARAMS = ROOT / "pipelines/memory/params.yaml"
BASELINE = ROOT / "eval/memory/baselines/pr.json"
SCENARIOS = ROOT / "eval/memory/scenarios"


def params(*sets: str) -> dict[str, Any]:
    return params_of(PARAMS, ["tracking.enabled=false", *sets])


@pytest.fixture(scope="module")
def pr() -> MemoryResults:
    return run_suite(params(), ROOT, "pr")


def check(results: MemoryResults, check_id: str) -> Any:
    return next(
        c for s in results.scenarios for p in s.probes for c in p.checks if c.id == check_id
    )


def test_pr_is_deterministic_and_holds_its_committed_baseline(
    pr: MemoryResults, tmp_path: Path
) -> None:
    again = run_suite(params(), ROOT, "pr")
    assert again.model_dump_json() == pr.model_dump_json()
    assert pr.counts["scenarios"] == 6 and pr.counts["unmeasured"] == 0
    assert {s.id for s in pr.scenarios} == {p.stem for p in SCENARIOS.glob("*.yaml")}
    verdict = gate(pr, load_results(BASELINE))
    assert verdict.passed and not verdict.regressed and not verdict.fixed
    write_outputs(pr, tmp_path)
    assert load_results(tmp_path).model_dump() == pr.model_dump()
    assert (
        json.loads((tmp_path / "metrics.json").read_text())["checks.checks"] == pr.counts["checks"]
    )


def test_the_reference_memory_fails_checks_for_reasons_the_report_names(
    pr: MemoryResults, tmp_path: Path
) -> None:
    planted = check(pr, "chen_learns_project_quirks/planted-push/shown_clean/0")
    assert planted.ok is False and "push with --force" in planted.why
    boss = check(pr, "priya_work_documents_and_forgetting/manager-forgotten/store_accuracy/3")
    assert boss.ok is False and "My boss is also pushing me" in boss.why
    lexical = check(pr, "alex_three_months_of_life/near-home/shown_recall/0")
    assert lexical.ok is False and "in the store but not shown for this request" in lexical.why
    # ...and holds what its rules are for.
    for held in (
        "priya_work_documents_and_forgetting/password-never/store_accuracy/0",
        "priya_work_documents_and_forgetting/plans-not-theirs/store_accuracy/0",
        "sam_family_health/week-of-dinners/shown_clean/1",
        "jordan_reminders_change/this-week/shown_clean/1",
        "chen_learns_project_quirks/tests-after-uv/shown_clean/0",
    ):
        assert check(pr, held).ok is True, held
    report = write_outputs(pr, tmp_path).report.read_text()
    headers = [line[3:].split(":")[0] for line in report.splitlines() if line.startswith("## ")]
    assert headers == [s.id for s in pr.scenarios]
    shares = [
        sum(c.ok is True for p in s.probes for c in p.checks) / sum(len(p.checks) for p in s.probes)
        for s in pr.scenarios
    ]
    assert shares == sorted(shares), "worst scenario first"
    assert "written in chat c04 (turn 0, by extract)" in report
    causes = report.split("Failed checks by cause:", 1)[1].split("## ", 1)[0]
    assert "- in the store, but not shown for the request: " in causes
    assert "- kept in a chat log: 1" in causes
    assert (
        sum(int(line.rsplit(": ", 1)[1]) for line in causes.splitlines() if line.startswith("- "))
        == (pr.counts["failed"])
    )
    assert report.count("**FAILED**") == pr.counts["failed"]


def test_the_gate_lists_regressions_and_fixes_and_refuses_other_scenarios(
    pr: MemoryResults,
) -> None:
    narrower = run_suite(params("memory.adapter.top_k=1"), ROOT, "pr")
    regressed = gate(narrower, pr)
    assert not regressed.passed and regressed.regressed
    assert all(pr.checks[c] is True and narrower.checks[c] is not True for c in regressed.regressed)
    fixed = gate(pr, narrower)
    assert fixed.passed and sorted(fixed.fixed) == sorted(regressed.regressed)
    subset = run_suite(params(), ROOT, "pr", ["jordan_reminders_change"])
    with pytest.raises(GateRefused, match="only in the baseline: alex_three_months_of_life"):
        gate(subset, pr)
    with pytest.raises(GateRefused, match="the full suite"):
        gate(pr, pr.model_copy(update={"suite": "full"}))
    other = pr.model_copy(update={"memory": pr.memory.model_copy(update={"kind": "mcp"})})
    with pytest.raises(GateRefused, match="a mcp memory"):
        gate(pr, other)


def test_cli_run_gate_and_list(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "run"
    done = runner.invoke(app, ["memory", "run", "--out", str(out), "--gate", str(BASELINE)])
    assert done.exit_code == 0, done.output
    assert "gate: PASS" in done.output and "checks passed" in done.output
    assert (out / "report.md").is_file()
    worse = tmp_path / "worse"
    made = runner.invoke(
        app, ["memory", "run", "--out", str(worse), "--set", "memory.adapter.top_k=1"]
    )
    assert made.exit_code == 0, made.output
    gated = runner.invoke(
        app, ["memory", "gate", str(worse), "--baseline", str(out / "results.json")]
    )
    assert gated.exit_code == 1 and "REGRESSED" in gated.output
    listed = runner.invoke(app, ["memory", "list"])
    assert listed.exit_code == 0 and "priya_work_documents_and_forgetting:" in listed.output
    bad = runner.invoke(app, ["memory", "run", "--suite", "nightly", "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "--suite: must be pr or full" in bad.output
    assert not (tmp_path / "x").exists()
    missing = runner.invoke(app, ["memory", "run", "--gate", str(tmp_path / "nope.json")])
    assert missing.exit_code == 2 and "nope.json: cannot read" in missing.output
    refused = runner.invoke(
        app,
        [
            "memory",
            "run",
            "--scenario",
            "jordan_reminders_change",
            "--out",
            str(tmp_path / "j"),
            "--gate",
            str(BASELINE),
        ],
    )
    assert refused.exit_code == 2 and "refused: the baseline ran other scenarios" in refused.output


def test_a_bad_scenario_file_is_path_line_exit_2(tmp_path: Path) -> None:
    folder = tmp_path / "scenarios"
    folder.mkdir()
    shutil.copy(SCENARIOS / "jordan_reminders_change.yaml", folder)
    data = yaml.safe_load((SCENARIOS / "jordan_reminders_change.yaml").read_text())
    data["id"] = "early_probe"
    data["probes"][0]["at"] = "2025-01-01 08:00:00"
    (folder / "early_probe.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    (folder / "typo.yaml").write_text(
        "id: typo\ntitle: t\nperson: p\nstresses: [x]\nchats:\n"
        "  - id: c1\n    at: 2025-01-01 09:00:00\n    turns:\n"
        "      - user: hi\n        answr: hello\nprobes: []\n"
    )
    (folder / "broken.yaml").write_text("id: [unclosed\n")
    done = CliRunner().invoke(
        app,
        ["memory", "run", "--set", f"memory.scenarios={folder}", "--out", str(tmp_path / "out")],
    )
    assert done.exit_code == 2 and "Traceback" not in done.output
    lines = done.output.splitlines()
    assert any(line.startswith(f"{folder}/broken.yaml:2: invalid YAML") for line in lines), lines
    assert any(
        "typo.yaml:10: chats.0.turns.0.answr: Extra inputs are not permitted" in line
        for line in lines
    ), lines
    assert any(
        "early_probe.yaml:1:" in line and "probes before the first chat" in line for line in lines
    ), lines
    assert not (tmp_path / "out").exists()


# -- how checks and answers are read ----------------------------------------------------------
@pytest.mark.parametrize(
    ("unit", "match", "expected"),
    [
        ("Maya lives in Ballard, Seattle", Match(all=["Ballard"], any=["lives"]), True),
        ("Sam's sister Lena is vegan", Match(all=["vegan"], none=["Lena", "sister"]), False),
        ("Sam is vegan", Match(all=["vegan"], none=["Lena"]), True),
        (
            "The Low Tides rehearse on Friday evenings",
            Match(all=["Low Tides"], any=["Friday"]),
            True,
        ),
        ("Dentist appointment (due 2025-05-15T14:00:00)", Match(all=["15 May"]), True),
        ("Dentist appointment - due Tue 13 May 2025", Match(all=["15 May"]), False),
        ("weekly active users 41,200", Match(any=["41200"]), True),
        ("Ella is 7", Match(all=["Ella is 6"]), False),
    ],
)
def test_check_matching(unit: str, match: Match, expected: bool) -> None:
    assert matches(unit, match) is expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Your usual is a flat white with soy milk.", True),
        ("A flat white with oat milk, as always.", False),  # the stale value
        (
            "You switched from oat milk to soy milk, so soy milk it is.",
            True,
        ),  # history, with the truth
        ("Soy milk - not oat milk any more.", None),  # a negation beside the truth: defer
        ("Maybe soy milk? Or perhaps oat milk.", None),  # hedged candidates: code defers
        ("I don't know your coffee order.", False),
        ("", False),
    ],
)
def test_answers_are_read_by_the_answer_reader(answer: str, expected: bool | None) -> None:
    ok, why = grade_answer(
        answer, AnswerExpect(truth="soy milk", wrong=["oat milk"]), "Order my coffee"
    )
    assert ok is expected, why


def test_model_replies_are_parsed_strictly() -> None:
    found, errors = parse_memories(
        '{"memories": [{"op": "remember", "kind": "fact", "text": "A",'
        ' "key": "", "about": "user", "source": "user", "due": ""},'
        ' {"op": "remember", "kind": "fact", "text": ""}, 7]}'
    )
    assert [c.text for c in found] == ["A"] and found[0].key is None
    assert errors == ["memory 1: Value error, remember needs text", "memory 2: not an object"]
    assert parse_memories('{"memories": [')[1][0].startswith("not JSON")
    assert parse_memories('{"facts": []}') == ([], ["no `memories` list"])


# -- the full suite's model path, over a loopback OpenAI-compatible server ----------------------
def _oracle(scenarios: list[dict[str, Any]]) -> Any:
    """A model that extracts what each scenario's script says for the turn it is shown, and
    answers a probe with its truth when memory showed it (else admits not knowing)."""
    turns = {
        t["user"].strip(): t.get("extract", [])
        for s in scenarios
        for c in s["chats"]
        for t in c["turns"]
    }
    truths = [
        (p["request"], p["answer"]["truth"])
        for s in scenarios
        for p in s["probes"]
        if p.get("answer")
    ]
    upkeep = {str(c["at"])[:10]: c.get("consolidate", []) for s in scenarios for c in s["chats"]}

    def memories(rows: list[dict[str, Any]]) -> Reply:
        full = [
            {
                "op": "remember",
                "kind": "fact",
                "key": "",
                "about": "user",
                "source": "user",
                "due": "",
                **{k: str(v) for k, v in row.items()},
            }
            for row in rows
        ]
        return Reply(text=json.dumps({"memories": full}))

    def reply(body: dict[str, Any]) -> Reply:
        prompt = body["messages"][-1]["content"]
        if "The turn:" in prompt:
            assert body["response_format"]["type"] == "json_schema"
            user = prompt.split("The turn:\nUser: ", 1)[1].split("\n")[0].strip()
            return memories(turns.get(user, []))
        if "Notes:" in prompt:
            return memories(upkeep[prompt.split("Today: ", 1)[1][:10]])
        request = prompt.rsplit("User: ", 1)[1].strip()
        memory = prompt.split("about the user:", 1)[1]
        for asked, truth in truths:
            if asked == request and truth.lower() in memory.lower():
                return Reply(text=f"From what I remember: {truth}.")
        return Reply(text="I don't know that yet.")

    return reply


def test_full_suite_asks_the_model_and_grades_its_answers(tmp_path: Path) -> None:
    ids = ["jordan_reminders_change", "maya_moves_and_changes_jobs"]
    raw = [yaml.safe_load((SCENARIOS / f"{i}.yaml").read_text()) for i in ids]
    with OpenAIServer(reply_fn=_oracle(raw)) as server:
        sets = [
            f"memory.model.base_url={server.base_url}",
            "memory.model.model=oracle",
            "run.cache=false",
        ]
        results = run_suite(params(*sets), ROOT, "full", ids)
        pr = run_suite(params(), ROOT, "pr", ids)
    assert results.suite == "full" and results.model.model == "oracle"
    answers = {
        c.id: c.ok
        for s in results.scenarios
        for p in s.probes
        for c in p.checks
        if c.metric == "answer_accuracy"
    }
    assert answers and results.metrics["answer_accuracy"] is not None
    assert answers["jordan_reminders_change/dentist-when/answer_accuracy/0"] is True
    # The model proposed what the script proposes, so memory's own checks come out the same.
    mine = {k: v for k, v in results.checks.items() if "/answer_accuracy/" not in k}
    assert mine == pr.checks
    with pytest.raises(GateRefused, match="the pr suite"):
        gate(results, pr)


def test_dense_vectors_run_or_are_refused_with_the_install_command(pr: MemoryResults) -> None:
    from agenteval.memory.vectors import dense_unavailable

    dense = params("memory.adapter.vectors=dense")
    if dense_unavailable():
        with pytest.raises(ValueError, match=r'dense: .*pip install -e "\.\[dense\]"'):
            run_suite(dense, ROOT, "pr", ["alex_three_months_of_life"])
        return
    found = run_suite(dense, ROOT, "pr", ["alex_three_months_of_life"])
    assert found.memory.details["settings"]["vectors"] == "dense"
    hashed = next(s for s in pr.scenarios if s.id == "alex_three_months_of_life")
    assert found.scenarios[0].metrics["shown_recall"] >= hashed.metrics["shown_recall"]


def test_agenteval_gate_reads_a_memory_run_through_the_registry(
    pr: MemoryResults, tmp_path: Path
) -> None:
    """`agenteval gate` on memory results: the check-by-check rule as a GateResult; a check
    that held and fails now fails it, another suite is refused, not compared."""
    from agenteval.benchmarks.gate import GateRefused as NotComparable
    from agenteval.benchmarks.gate import gate as gate_any
    from agenteval.benchmarks.gate import load_run

    write_outputs(pr, tmp_path / "now")
    now = load_run(tmp_path / "now")
    assert gate_any(now, load_run(BASELINE)).passed
    held = next(c for c, ok in now["checks"].items() if ok is True)
    worse = json.loads(json.dumps(now))
    worse["checks"][held] = False
    failed = gate_any(worse, now)
    assert not failed.passed
    assert [c["name"] for c in failed.checks if not c["ok"]] == ["checks held", held]
    with pytest.raises(NotComparable, match="the pr suite, this run full"):
        gate_any(dict(now, suite="full"), now)
