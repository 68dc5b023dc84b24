"""Judges `llm` and `hybrid` held to their contract, against planted judges on real HTTP.

A lenient judge (passes everything) must fail the controls gate as `llm`; as `hybrid` it
must do no worse than the code judge alone on the held controls code settles (issue 31):
every grade code gives binds, from one table in `scoring`. An invalid-JSON judge ends
ERRORED after the re-asks with its raw reply kept; dimensions that do not apply are null.
"""

from __future__ import annotations

import ast
import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from servers import AnthropicServer, FakeLLMServer, OpenAIServer, Reply
from servers.judges import invalid_json, is_scenario_request, lenient, scenario_json, turn_json

from agenteval.controls.measure import measure_judge
from agenteval.findings import BINDING_FINDINGS, CODE_FINDINGS, RECOMPUTE_FINDINGS
from agenteval.judges.base import make_judge
from agenteval.judges.correctness import Result, finding
from agenteval.judges.hybrid import bind
from agenteval.judges.output import TURN_SCHEMA, InvalidOutput, TurnJudgment, parse_output
from agenteval.params import DEFAULTS, deep_merge
from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import Participant, ToolCall, Transcript, TranscriptTurn
from agenteval.schema.verdict import TurnVerdict, Verdict
from agenteval.scoring import (
    DIMENSIONS,
    SCORE_MAX,
    ScenarioInfo,
    ScoringRules,
    fails_alone,
    score_scenario,
)
from agenteval.suite.build import build_suite

ROOT = Path(__file__).resolve().parents[1]
RULES = ScoringRules()
ONE_TURN = "csv_cell_lookup"  # expected answer $36,529
TWO_TURNS = "quarterly_revenue_lookup"


@pytest.fixture(scope="module")
def suite() -> dict[str, SuiteItem]:
    params = deep_merge(DEFAULTS, {"suite": {"ids": [ONE_TURN, TWO_TURNS]}})
    return {item.scenario.id: item for item in build_suite(params, ROOT).items}


def judge_params(server: FakeLLMServer, kind: str, **judge: Any) -> dict[str, Any]:
    section = {"kind": kind, "model": "judge-model", "base_url": server.base_url, **judge}
    section.setdefault("protocol", "openai")
    return deep_merge(DEFAULTS, {"judge": section, "run": {"cache_dir": None}})


def transcript(item: SuiteItem, responses: list[str], queried: bool = True) -> Transcript:
    query = ToolCall(name="query_documents", arguments={"query": "q"}, result={"results": []})
    turns = []
    for t, text in zip(item.scenario.turns, responses, strict=True):
        message = t.user_message or t.objective
        calls = [query] if queried else []
        turns.append(
            TranscriptTurn(turn=t.turn, user_message=message, response=text, tool_calls=calls)
        )
    return Transcript(
        scenario_id=item.scenario.id,
        scenario_digest=item.digest,
        status="COMPLETED",
        target=Participant(kind="chat", model="agent-model"),
        simulator=Participant(kind="scripted"),
        turns=turns,
    )


def grade(params: dict[str, Any], item: SuiteItem, said: Transcript) -> Verdict:
    return asyncio.run(make_judge(params, ROOT).judge(item, said))


# -- the done-when: a lenient judge, the held controls ------------------------------------
@pytest.fixture(scope="module")
def lenient_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    reports = {}
    with OpenAIServer(reply_fn=lenient()) as server:
        for kind in ("llm", "hybrid"):
            out = tmp_path_factory.mktemp(kind)
            reports[kind] = measure_judge(judge_params(server, kind), ROOT, out, "held").report
    code = deep_merge(DEFAULTS, {"judge": {"kind": "code"}})
    reports["code"] = measure_judge(code, ROOT, tmp_path_factory.mktemp("code"), "held").report
    return reports


def test_a_lenient_llm_judge_fails_the_controls_gate(lenient_reports: dict[str, Any]) -> None:
    report = lenient_reports["llm"]
    held = report["splits"]["held"]
    assert not report["passed"] and any("false pass" in m for m in report["misses"]["held"])
    assert held["false_passes"] == held["confusion"]["fail"]["pass"] > 0
    assert held["confusion"]["fail"]["fail"] == 0  # it passed every wrong reply


def test_hybrid_has_no_false_pass_on_code_certain_held_controls(
    lenient_reports: dict[str, Any],
) -> None:
    report = lenient_reports["hybrid"]
    certain = report["splits"]["held"]["code_certain"]
    # The set comes from the code judge's own findings; it must cover every kind of wrong
    # answer issue 31 names, not a hand-picked few: refusals with and without a search,
    # figures off (vague and ranged ones too) or absent, contradicted claims, guesses.
    assert certain["controls"] >= 80
    assert {"wrong_value", "other_value", "wrong_name", "wrong_identifier", "absent",
            "alternatives", "negated", "conflicting", "refused", "lazy_refusal",
            "abstain_guess", "answered_unknown",
            "corrected", "invented_source"} <= set(certain["rules"])  # fmt: skip
    assert certain["false_passes"] == 0
    assert (
        lenient_reports["llm"]["splits"]["held"]["code_certain"]["false_passes"]
        == (certain["controls"])
    )


def test_a_lenient_hybrid_judge_does_no_worse_than_code_on_held(
    lenient_reports: dict[str, Any],
) -> None:
    """Issue 31's bound, on the held split: false passes at most the code judge's, and
    agreement at most one point below it on the controls the code judge settles."""
    code, hybrid = (lenient_reports[k]["splits"]["held"] for k in ("code", "hybrid"))
    # Beyond code's own false passes, only wrong replies code defers (issue 49: a source it
    # cannot look up, a figure in another row's words) are the lenient model's to pass.
    unsettled_wrong = code["confusion"]["fail"]["deferred"]
    assert hybrid["false_passes"] <= code["false_passes"] + unsettled_wrong
    settled = hybrid["code_settled"]
    assert settled["controls"] == code["judged"] >= 150  # code settles what it judges
    assert settled["code_agreement"] == code["agreement"]["value"]
    assert settled["judged"] == settled["controls"]
    assert settled["agreement"] >= settled["code_agreement"] - 0.01
    assert settled["false_passes"] == settled["code_false_passes"] == 0
    for klass in ("refusal", "lazy_refusal", "vague_quantity", "ranged_quantity",
                  "contradicted_claim", "abstention_plus_guess"):  # fmt: skip
        row = lenient_reports["hybrid"]["classes"][klass]
        assert row["controls"] >= 3 and row["false_passes"] == 0, klass
    # The model keeps the last word where code defers: those controls are its to pass.
    by_code = {c["id"]: c["verdict"] for c in lenient_reports["code"]["controls"]}
    deferred = [c for c in lenient_reports["hybrid"]["controls"] if by_code[c["id"]] == "deferred"]
    assert deferred and all(c["verdict"] == "pass" for c in deferred)


def test_the_controls_command_shows_the_bound(tmp_path: Path) -> None:
    with OpenAIServer(reply_fn=lenient()) as server:
        done = subprocess.run(
            [sys.executable, "-m", "agenteval", "controls", "--split", "held", "--no-track",
             "--out", str(tmp_path), "--set", "judge.kind=hybrid", "--set", "judge.model=m",
             "--set", f"judge.base_url={server.base_url}", "--set", "judge.protocol=openai",
             "--set", "run.cache_dir=null"],
            cwd=ROOT, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    # Issue 49: thirteen wrong held replies are ones code defers (a figure in another row's
    # words, two dates of which code cannot tell the asked one, a figure within the tolerance
    # whose digits no rounding writes, a German abstention beside a figure no document holds,
    # and the fifth round's: a figure, identifier or name no document holds beside the right
    # answer, an approximated figure, a bold answer of another item): a lenient model passes
    # them and misses the gate; on everything code settles it is held to code exactly. The
    # sixth round's new reply forms add three wrong replies code defers (sixteen), the
    # seventh's five (hedges_called_off.yaml: a span, a called-off value, another period or
    # base): twenty-one, and the agreement falls below the gate too. (The eighth round's
    # spoken_forms.yaml adds no wrong reply code defers: still twenty-one; the ninth's
    # last_word.yaml three: twenty-four.)
    assert done.returncode == 2 and "24 false pass(es)" in done.stderr
    line = r"^held: on the (\d+) control\(s\) the code judge settles, (\d+) judged: .*"
    settled = re.search(line + r" false passes 0 \(code alone 0\)$", done.stdout, re.M)
    assert settled and settled[1] == settled[2], done.stdout
    assert "false passes 0 (code alone 0)" in (tmp_path / "controls.md").read_text()


# -- one table of code findings ------------------------------------------------------------
ISSUE_31_RULES = ("lazy_refusal", "refused", "wrong_value", "other_value", "absent",
                  "conflicting", "negated", "alternatives", "abstain_guess",
                  "answered_unknown")  # fmt: skip


def test_binding_findings_are_derived_from_the_code_judges_table() -> None:
    below_full = {r for r, f in CODE_FINDINGS.items() if f.score is None or f.score < SCORE_MAX}
    assert set(BINDING_FINDINGS) == below_full
    for rule in ISSUE_31_RULES:  # each fails a turn on its own, whatever the model says
        found = CODE_FINDINGS[rule]
        assert found.score is not None and fails_alone(found.dimension, found.score, RULES)
        assert rule in BINDING_FINDINGS
    for rule in ("precision", "forbidden_tool", "tool_loop"):  # ceilings that do not fail
        assert rule in BINDING_FINDINGS


def test_a_code_score_without_a_rule_of_the_table_is_refused() -> None:
    assert Result(None, "deferred").rule is None
    with pytest.raises(ValueError, match="CODE_FINDINGS"):
        Result(0.0, "a wrong value")
    with pytest.raises(ValueError, match="CODE_FINDINGS"):
        Result(0.0, "a wrong value", "made_up")
    with pytest.raises(ValueError, match="graded"):
        finding("precision", "no score")
    with pytest.raises(ValueError, match="scores 0"):
        finding("wrong_value", "half wrong", 5.0)
    assert finding("lazy_refusal", "x") == Result(0.0, "x", "lazy_refusal")


CODE_JUDGE = ("code.py", "correctness.py", "commitment.py", "abstention.py")


def test_every_rule_the_code_judge_names_is_in_the_table_and_none_is_unused() -> None:
    named: set[str] = set()
    for name in CODE_JUDGE:
        tree = ast.parse((ROOT / "agenteval/judges" / name).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "finding":
                # A rule given as a literal must be in the table (one computed is checked
                # when its grade is made: Result refuses a score without a known rule).
                first = node.args[0]
                literals = [n.value for n in ast.walk(first) if isinstance(n, ast.Constant)]
                unknown = [v for v in literals if isinstance(v, str) and v not in CODE_FINDINGS]
                assert not unknown, f"{name}: {ast.unparse(node)}"
            if isinstance(node, ast.Constant) and node.value in CODE_FINDINGS:
                named.add(node.value)
    assert named == set(CODE_FINDINGS) - RECOMPUTE_FINDINGS


def test_every_grade_on_the_shipped_controls_names_a_rule() -> None:
    from agenteval.controls.measure import chosen_controls
    from agenteval.controls.run import pairs_of
    from agenteval.judges.code import CodeJudge, judge_transcript

    manifest, controls = chosen_controls(DEFAULTS, ROOT, "all", None)
    seen: set[str] = set()
    for item, said in pairs_of(controls, manifest, ROOT):
        for turn in judge_transcript(item, said, CodeJudge().participant).turns:
            scored = {d for d, v in turn.scores.items() if v is not None}
            assert set(turn.findings) == scored, turn
            seen |= set(turn.findings.values())
    assert set(ISSUE_31_RULES) <= seen


@pytest.mark.parametrize(
    ("reply", "queried", "rule"),
    [
        ("The sales file doesn't give that figure.", True, "refused"),
        ("I don't know, sorry.", False, "lazy_refusal"),
        ("Coastal made somewhere between $30,000 and $45,000 in March.", True, "wrong_value"),
        ("Coastal's March revenue was roughly $40,000.", True, "wrong_value"),
        ("Coastal had no sales in March; the store was closed.", True, "absent"),
        # issue 49's findings bind the model as every other does
        ("Coastal made $36,529 in March. Actually, I mean $38,160.", True, "corrected"),
        ("Coastal made $36,529 in March. On second thought, scratch that.", True, "retracted"),
        ("Row 90 of the sheet: Coastal made $36,529 in March.", True, "invented_source"),
    ],
)
def test_a_lenient_model_cannot_pass_what_code_fails(
    suite: dict[str, SuiteItem], reply: str, queried: bool, rule: str
) -> None:
    item = suite[ONE_TURN]
    with OpenAIServer(reply_fn=lenient()) as server:
        verdict = grade(judge_params(server, "hybrid"), item, transcript(item, [reply], queried))
    bound = {o.dimension: o for o in verdict.overrides}
    override = bound["correctness"]
    assert (override.rule, override.llm_score, override.code_score) == (rule, 10.0, 0.0)
    info = ScenarioInfo(item.scenario.id, item.scenario.category, None, 1)
    assert score_scenario(info, "COMPLETED", verdict, RULES).status == "FAIL"


def test_hybrid_records_every_override(suite: dict[str, SuiteItem]) -> None:
    item = suite[ONE_TURN]
    with OpenAIServer(reply_fn=lenient()) as server:
        verdict = grade(judge_params(server, "hybrid"), item, transcript(item, ["It was $41,000."]))
    (override,) = verdict.overrides
    assert (override.dimension, override.rule) == ("correctness", "wrong_value")
    assert (override.llm_score, override.code_score) == (10.0, 0.0)
    turn = verdict.turns[0]
    assert turn.scores["correctness"] == 0.0 and turn.judged_by["correctness"] == "code"
    assert turn.judged_by["personality"] == "llm" and turn.findings["correctness"] == "wrong_value"
    assert not [d for d in verdict.disagreements if d.dimension == "correctness"]
    info = ScenarioInfo(item.scenario.id, item.scenario.category, None, 1)
    result = score_scenario(info, "COMPLETED", verdict, ScoringRules())
    assert result.status == "FAIL" and result.overrides == ["wrong_value"]
    assert verdict.judge.kind == "hybrid"


def test_the_precision_table_caps_the_model_and_an_exact_figure_does_not() -> None:
    code = TurnVerdict(
        turn=1,
        scores={"correctness": 8.0, "efficiency": 10.0},
        findings={"correctness": "precision"},
        reasons={"correctness": "2% off"},
    )
    model = TurnVerdict(turn=1, scores={"correctness": 10.0, "efficiency": 3.0}, reasons={})
    merged, overrides = bind(model, code)
    assert merged.scores == {"correctness": 8.0, "efficiency": 3.0}  # a ceiling, not a floor
    assert [o.rule for o in overrides] == ["precision"]
    low = TurnVerdict(turn=1, scores={"correctness": 2.0}, reasons={})
    assert bind(low, code) == (low.model_copy(update={"findings": code.findings}), [])


def test_hybrid_digest_covers_both_instruments(server_url: str) -> None:
    base = {"model": "m", "base_url": server_url}
    llm = make_judge(judge_params_url(server_url, "llm", **base), ROOT).participant
    hybrid = make_judge(judge_params_url(server_url, "hybrid", **base), ROOT).participant
    other = make_judge(judge_params_url(server_url, "hybrid", model="m2"), ROOT).participant
    assert hybrid.kind == "hybrid" and hybrid.config_digest != llm.config_digest
    assert other.config_digest != hybrid.config_digest  # the model is in it
    assert hybrid.details["prompts"] == llm.details["prompts"]  # one prompt, true for both


@pytest.fixture
def server_url() -> str:
    return "http://127.0.0.1:9/v1"  # never called: building a judge makes no request


def judge_params_url(url: str, kind: str, **judge: Any) -> dict[str, Any]:
    section = {"kind": kind, "model": "m", "base_url": url, "protocol": "openai", **judge}
    return deep_merge(DEFAULTS, {"judge": section})


# -- strict output ------------------------------------------------------------------------
def test_an_invalid_json_judge_is_errored_after_the_reasks(suite: dict[str, SuiteItem]) -> None:
    item = suite[ONE_TURN]
    with OpenAIServer(reply_fn=invalid_json()) as server:
        verdict = grade(judge_params(server, "hybrid", max_attempts=4), item,
                        transcript(item, ["It was $36,529."]))  # fmt: skip
        asks = [r.json["messages"][-1]["content"] for r in server.requests[1:]]
    assert verdict.status == "ERRORED" and verdict.judge_attempts == 4
    assert "invalid after 4 attempt(s)" in (verdict.error or "")
    assert verdict.raw_reply is not None and verdict.raw_reply.startswith("```json")
    # Each refusal is explained to the model in the re-ask.
    assert "not exactly one JSON object" in asks[0]
    assert "duplicate key 'total'" in asks[1]
    assert "confidence" in asks[2] and "Extra inputs are not permitted" in asks[2]
    info = ScenarioInfo(item.scenario.id, item.scenario.category, None, 1)
    assert score_scenario(info, "COMPLETED", verdict, ScoringRules()).status == "ERRORED"


def test_an_invalid_json_judge_still_fails_a_code_certain_wrong_answer(
    suite: dict[str, SuiteItem],
) -> None:
    item = suite[ONE_TURN]
    info = ScenarioInfo(item.scenario.id, item.scenario.category, None, 1)
    with OpenAIServer(reply_fn=invalid_json()) as server:
        params = judge_params(server, "hybrid", max_attempts=2)
        wrong = grade(params, item, transcript(item, ["It was $41,000."]))
        llm = grade(judge_params(server, "llm", max_attempts=2), item,
                    transcript(item, ["It was $41,000."]))  # fmt: skip
    # The model never gave a valid grade, but no grade could pass a figure that far off.
    assert wrong.status == "FAIL" and wrong.raw_reply is not None
    assert "code settled the FAIL" in (wrong.error or "") and "invalid after 2" in wrong.error
    (override,) = wrong.overrides
    assert (override.rule, override.llm_score, override.code_score) == ("wrong_value", None, 0.0)
    assert wrong.turns[0].judged_by["correctness"] == "code"
    assert score_scenario(info, "COMPLETED", wrong, ScoringRules()).status == "FAIL"
    assert llm.status == "ERRORED"  # the llm judge has no binding findings to fall back on


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('Here it is: {"scores": {}, "total": 1}', "not exactly one JSON object"),
        (turn_json(9) + "\n{}", "not exactly one JSON object"),
        (turn_json(9).replace('"total": 9', '"total": NaN'), "NaN is not a JSON number"),
        (turn_json(9).replace('"score": 9', '"score": "9"'), "valid number"),
        (turn_json(9).replace('"score": 9', '"score": true'), "valid number"),
        (turn_json(9).replace('"score": 9', '"score": null'), "must be scored"),
    ],
)
def test_only_the_exact_schema_is_accepted(text: str, problem: str) -> None:
    with pytest.raises(InvalidOutput, match=problem):
        parse_output(text, TurnJudgment)


def test_optional_dimensions_may_be_null_and_drop_out_of_the_mean(
    suite: dict[str, SuiteItem],
) -> None:
    marks = json.loads(turn_json(8))
    marks["scores"]["error_recovery"]["score"] = None
    marks["scores"]["correctness"]["score"] = 10

    def reply(body: Any) -> Reply:
        return Reply(text=scenario_json("PASS") if is_scenario_request(body) else json.dumps(marks))

    item = suite[TWO_TURNS]
    with OpenAIServer(reply_fn=reply) as server:
        verdict = grade(judge_params(server, "llm"), item,
                        transcript(item, ["It was $8.6 million.", "41.5%"]))  # fmt: skip
        formats = [r.json.get("response_format") for r in server.requests]
    first, second = verdict.turns
    assert first.scores["error_recovery"] is None and first.scores["context_retention"] is None
    assert second.scores["context_retention"] == 8.0  # turn 2 has earlier turns to keep
    assert "first turn" in first.reasons["context_retention"]
    rules = ScoringRules()
    info = ScenarioInfo(item.scenario.id, item.scenario.category, None, 2)
    turn = score_scenario(info, "COMPLETED", verdict, rules).turns[0]
    # 0.25*10 + (0.20 + 0.15 + 0.10 + 0.05)*8 over 0.75 of the weight: no phantom 10s.
    assert turn.score == pytest.approx((2.5 + 0.5 * 8) / 0.75, abs=1e-3)
    assert formats[0]["json_schema"]["schema"] == TURN_SCHEMA
    optional = TURN_SCHEMA["properties"]["scores"]["properties"]
    assert optional["error_recovery"]["properties"]["score"]["type"] == ["number", "null"]
    assert optional["correctness"]["properties"]["score"]["type"] == "number"


def test_anthropic_judges_get_the_schema_as_output_config(suite: dict[str, SuiteItem]) -> None:
    item = suite[ONE_TURN]
    with AnthropicServer(reply_fn=lenient()) as fake:
        verdict = grade(judge_params(fake, "hybrid", protocol="anthropic"), item,
                        transcript(item, ["It was $36,529."]))  # fmt: skip
        bodies = [r.json for r in fake.requests]
    assert verdict.status == "PASS"
    assert bodies[0]["output_config"]["format"] == {"type": "json_schema", "schema": TURN_SCHEMA}
    assert "Answer format" in bodies[0]["system"]


def test_the_prompt_renders_what_code_does_from_code() -> None:
    from agenteval.findings import BINDING_FINDINGS
    from agenteval.judges.prompts import code_checks
    from agenteval.scoring import AUTO_ZERO_DEVIATION, TOOL_LOOP_REPEATS

    text = code_checks()
    assert f"more than {AUTO_ZERO_DEVIATION * 100:g}% off" in text
    assert f"same call {TOOL_LOOP_REPEATS} or more times" in text
    assert text.count("\n- ") == len(BINDING_FINDINGS)
    prompt = (ROOT / "eval/prompts/judge_turn.md").read_text()
    assert "{{code_checks}}" in prompt and "5%" not in prompt and "give `null`" in prompt
    scenario = (ROOT / "eval/prompts/judge_scenario.md").read_text()
    assert "{{critical_severity}}" in scenario and "`critical`" not in scenario


def test_the_case_is_blind(suite: dict[str, SuiteItem]) -> None:
    from agenteval.judges.prompts import turn_case

    item = suite[ONE_TURN]
    said = transcript(item, ["It was $36,529."])
    case = turn_case(item, said, said.turns[0])
    for hidden in (item.scenario.id, item.scenario.category, "description"):
        assert hidden not in case
    after = turn_case(item, said, said.turns[0], truth="after")
    assert after.index("## Agent reply") < after.index("## Ground truth")
    assert case.index("## Ground truth") < case.index("## Agent reply")


def test_every_model_dimension_is_still_required() -> None:
    assert all(d in TURN_SCHEMA["properties"]["scores"]["required"] for d in DIMENSIONS)
