"""`agenteval draft` and `agenteval promote`: scenarios from real sessions, scrubbed.

The chat log below plants emails, a phone number, provider tokens, a bearer JWT, a secret
environment value, a user name and absolute POSIX, Windows and home paths; none of them may
survive into the draft file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from lifecycle_runs import ROOT, run_builtin
from typer.testing import CliRunner

from agenteval.cli import app
from agenteval.health.draft import DraftError, write_draft
from agenteval.health.redact import DraftScrubber
from agenteval.schema.scenario import CapturedFrom, Scenario

ENV_SECRET = "acme-Q7f2k9LmZp3xW4"
PLANTED = [
    "alice.novak@harbor-mail.com",
    "bob.r@corp.example.org",
    "555-2671",
    "sk-proj-Zx81QwErTy7788UiOp",
    "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "eyJhbGciOiJIUzI1NiJ9",
    ENV_SECRET,
    "/home/",
    "alicen",
    "C:\\",
    "Users",
    "~/",
    "https://intranet.harbor.local",
]
HANDBOOK = "/home/alicen/work/agenteval/eval/corpus/documents/fenwick_orla_handbook.md"


def _call(name: str, **arguments: str) -> dict[str, object]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {"id": "c", "type": "function", "function": function}


CHAT = [
    {"role": "system", "content": "You are a helpful assistant."},
    {
        "role": "user",
        "content": "Hi, I'm Alice (alice.novak@harbor-mail.com, +1 (415) 555-2671). "
        f"Please index {HANDBOOK} for me.",
    },
    {"role": "assistant", "content": None, "tool_calls": [_call("index_document", path=HANDBOOK)]},
    {"role": "tool", "tool_call_id": "c", "content": f"indexed 12 chunks from {HANDBOOK}"},
    {"role": "assistant", "content": "Indexed. Ask away, alicen."},
    {
        "role": "user",
        "content": [
            {
                "type": "text",
                "text": "My key sk-proj-Zx81QwErTy7788UiOp and the deploy token "
                "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 both failed. How many vacation "
                "days do I get per year? Mail me at bob.r@corp.example.org.",
            }
        ],
    },
    {"role": "assistant", "tool_calls": [_call("query_documents", query="vacation days")]},
    {
        "role": "assistant",
        "content": "You get 25 days. Notes saved to C:\\Users\\alicen\\Documents\\notes.txt",
    },
    {
        "role": "user",
        "content": "Thanks! Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkw"
        f"In0.abcdefghijklmnop and {ENV_SECRET}; my plan is in ~/secrets/plan.md and on "
        "https://intranet.harbor.local/u/alicen?id=5",
    },
    {"role": "assistant", "content": "Noted."},
]


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("ACME_SERVICE_TOKEN", ENV_SECRET)


def _chat_log(tmp_path: Path) -> Path:
    path = tmp_path / "alicen-support-chat.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in CHAT) + "\n", encoding="utf-8")
    return path


def _draft(tmp_path: Path, *source: str) -> tuple[Path, dict[str, object]]:
    out = tmp_path / "drafts"
    result = CliRunner().invoke(app, ["draft", *source, "--out", str(out)])
    assert result.exit_code == 0, result.output
    (path,) = out.glob("*.yaml")
    return path, yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.mark.usefixtures("in_repo")
def test_nothing_planted_survives_into_the_draft(tmp_path: Path) -> None:
    path, draft = _draft(tmp_path, "--from-chat-log", str(_chat_log(tmp_path)))
    text = path.read_text(encoding="utf-8")
    for planted in PLANTED:
        assert planted not in text, planted
    assert "person1@example.com" in text and "[REDACTED]" in text
    assert "eval/corpus/documents/fenwick_orla_handbook.md" in text  # made relative, resolvable
    assert "secrets/plan.md" in text and "Documents/notes.txt" in text
    scenario = Scenario.model_validate(draft)
    tools = [t.expected_tools for t in scenario.turns]
    assert tools == [["index_document"], ["query_documents"], []]
    assert scenario.turns[1].user_message is not None
    assert "How many vacation days do I get per year?" in scenario.turns[1].user_message
    # The objective is the first question, else the last sentence (the request, not the hello).
    assert scenario.turns[1].objective == "How many vacation days do I get per year?"
    assert scenario.turns[0].objective == (
        "Please index eval/corpus/documents/fenwick_orla_handbook.md for me."
    )
    assert scenario.turns[0].user_message is not None
    assert scenario.turns[0].user_message.startswith(
        "Hi, I'm Alice (person1@example.com, [REDACTED])"
    )
    assert scenario.source == "session" and scenario.difficulty_rationale is None
    assert isinstance(scenario.captured_from, CapturedFrom)
    assert scenario.captured_from.session_id == "user-support-chat"  # the file name, scrubbed
    assert scenario.captured_from.captured_at
    assert all(t.ground_truth is None and t.success_criteria is None for t in scenario.turns)
    assert path.parent.name == "drafts" and text.startswith("# DRAFT")
    assert "#   turn 2: You get 25 days." in text


def test_scrubbing_layers_one_by_one() -> None:
    scrubber = DraftScrubber(ROOT, env={"X_API_KEY": "k-9f8e7d6c5b4a3"})
    assert scrubber.text("use k-9f8e7d6c5b4a3 now") == "use [REDACTED] now"
    # One scrubber: the sessions' e-mail rule (scrubadub's read "me at alice.smith" as an
    # address), phone numbers by the scrubber's personal layer, any country's.
    assert scrubber.text("mail me at alice.smith@corp-mail.com") == "mail me at person1@example.com"
    assert scrubber.text("ring +1 415 555 2671 or +49 30 901820") == "ring [REDACTED] or [REDACTED]"
    assert scrubber.text("again alice.smith@corp-mail.com") == "again person1@example.com"
    assert scrubber.text("wire to DE89 3704 0044 0532 0130 00") == "wire to [REDACTED]"
    assert (
        scrubber.text("docs at https://wiki.corp.local/x.") == "docs at https://example.com/link-1."
    )
    here = ROOT / "eval/corpus/documents/fenwick_orla_handbook.md"
    assert scrubber.text(f"read {here}.") == "read eval/corpus/documents/fenwick_orla_handbook.md."
    assert scrubber.text("C:\\Users\\zoe\\x\\y.txt") == "x/y.txt"
    assert scrubber.text("/Users/zoe/a/b and zoe") == "a/b and user"
    scrubber.learn(["toolbox at /var/home/ingrid/src"])  # every home form's user is learned
    assert "ingrid" not in scrubber.text("ingrid's /var/home/ingrid/src and ~ingrid/x")
    assert scrubber.text("POST /v1/chat/completions") == "POST v1/chat/completions"
    assert scrubber.text("$36,529 on 2026-03-05, 4 of 12, v3.17.2") == (
        "$36,529 on 2026-03-05, 4 of 12, v3.17.2"
    )  # numbers that are not personal stay


def test_a_draft_that_would_leak_is_not_written(tmp_path: Path) -> None:
    scrubber = DraftScrubber(ROOT)
    target = tmp_path / "d.yaml"
    for leak in ("see /home/zed/notes.md", "mail zed@example.org", "key sk-ant-abcdefghijklmnop"):
        with pytest.raises(DraftError, match="draft not written"):
            write_draft(f"id: x\nnote: {leak}\n", scrubber, target)
    assert not target.exists()


@pytest.mark.usefixtures("in_repo")
def test_bad_sources_exit_2_with_path_line(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text('{"role": "user", "content": "hi"}\n{not json\n{"role": "robot"}\n')
    result = CliRunner().invoke(app, ["draft", "--from-chat-log", str(log), "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert f"{log}:2: not JSON" in result.output and f"{log}:3: not a chat message" in result.output
    both = CliRunner().invoke(
        app, ["draft", "--from-chat-log", str(log), "--from-transcript", str(log)]
    )
    assert both.exit_code == 2 and "exactly one" in both.output
    assert not list(tmp_path.glob("*.yaml"))


@pytest.mark.usefixtures("in_repo")
def test_draft_from_a_transcript_keeps_setup_and_tools(tmp_path: Path) -> None:
    run = run_builtin(tmp_path / "run", ["minutes_pronoun_chain"], 1)
    transcript = run / "data/transcripts/minutes_pronoun_chain/0.json"
    _, draft = _draft(tmp_path, "--from-transcript", str(transcript))
    scenario = Scenario.model_validate(draft)
    assert [d.path for d in scenario.setup.index_documents] == [
        "eval/corpus/documents/quillfeather_migration_minutes.md"
    ]
    assert len(scenario.turns) == 3
    assert all(t.expected_tools == ["query_documents"] for t in scenario.turns)
    assert isinstance(scenario.captured_from, CapturedFrom)
    assert scenario.captured_from.session_id == "minutes_pronoun_chain/0"


@pytest.mark.usefixtures("in_repo")
def test_draft_from_an_mlflow_trace_reads_its_whole_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow import MlflowClient

    from agenteval.layout import Layout
    from agenteval.params import load_params
    from agenteval.tracking.run import log_evaluation

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    run = run_builtin(tmp_path / "run", ["switch_between_documents"], 1)
    logged = log_evaluation(Layout.run_dir(ROOT, run), load_params(ROOT / "params.yaml"))
    assert logged is not None
    client = MlflowClient(uri)
    traces = client.search_traces(locations=[logged.experiment_id], run_id=logged.run_id)
    last = max(traces, key=lambda t: t.info.request_time)  # any turn names the session
    _, draft = _draft(tmp_path, "--from-mlflow-trace", last.info.trace_id)
    scenario = Scenario.model_validate(draft)
    shipped = yaml.safe_load(
        (ROOT / "eval/scenarios/context_retention/switch_between_documents.yaml").read_text()
    )
    assert [t.user_message for t in scenario.turns] == [t["user_message"] for t in shipped["turns"]]
    assert isinstance(scenario.captured_from, CapturedFrom)
    # the session id names the scenario, its iteration and the run it belongs to
    assert scenario.captured_from.session_id == f"switch_between_documents.0.{logged.run_id[:12]}"
    missing = CliRunner().invoke(app, ["draft", "--from-mlflow-trace", "tr-0000"])
    assert missing.exit_code == 2


# ----------------------------------------------------------------------------- promote


def _filled_draft(tmp_path: Path, answers_from: str = "minutes_pronoun_chain") -> Path:
    run = run_builtin(tmp_path / "run", ["minutes_pronoun_chain"], 1)
    path, draft = _draft(
        tmp_path, "--from-transcript", str(run / "data/transcripts/minutes_pronoun_chain/0.json"),
        "--id", "minutes_chain_from_session", "--category", "context_retention",
    )  # fmt: skip
    truth = yaml.safe_load(
        (ROOT / f"eval/scenarios/context_retention/{answers_from}.yaml").read_text()
    )
    for turn, shipped in zip(draft["turns"], truth["turns"], strict=True):  # type: ignore[call-overload]
        turn["ground_truth"] = shipped["ground_truth"]
    draft["difficulty_rationale"] = "Short follow-ups that lean on the earlier topic."
    header = "".join(line for line in path.read_text().splitlines(True) if line.startswith("#"))
    path.write_text(header + yaml.safe_dump(draft, sort_keys=False), encoding="utf-8")
    return path


def _promote(path: Path, tmp_path: Path, *extra: str) -> tuple[int, str]:
    args = ["promote", str(path), "--out", str(tmp_path / "replay"), "--iterations", "2"]
    result = CliRunner().invoke(app, [*args, "--set", "tracking.enabled=false", *extra])
    return result.exit_code, result.output


@pytest.mark.usefixtures("in_repo")
def test_promote_requires_ground_truth_and_rationale(tmp_path: Path) -> None:
    run = run_builtin(tmp_path / "run", ["minutes_pronoun_chain"], 1)
    path, _ = _draft(
        tmp_path, "--from-transcript", str(run / "data/transcripts/minutes_pronoun_chain/0.json")
    )
    code, output = _promote(path, tmp_path)
    assert code == 2, output
    assert "needs a ground_truth or a non-empty success_criteria" in output
    assert "difficulty_rationale: a person must say why" in output
    assert path.exists() and not (tmp_path / "replay").exists()  # refused before any replay


@pytest.mark.usefixtures("in_repo")
def test_promote_replays_and_adopts_a_passable_unsaturated_draft(tmp_path: Path) -> None:
    path = _filled_draft(tmp_path)
    dest = tmp_path / "suite" / "minutes_chain_from_session.yaml"
    saturated = _promote(path, tmp_path, "--dry-run")
    assert saturated[0] == 1 and "saturated: every judged iteration passed" in saturated[1]
    code, output = _promote(
        path, tmp_path, "--weak-set", "target.params.abstain_threshold=0.8", "--dest", str(dest)
    )
    assert code == 0, output
    assert "replay configured: 2/2" in output and "replay weak: 0/2" in output
    assert not path.exists() and dest.is_file()
    text = dest.read_text(encoding="utf-8")
    assert not text.startswith("#") and "DRAFT" not in text
    promoted = Scenario.model_validate(yaml.safe_load(text))
    assert promoted.id == "minutes_chain_from_session" and promoted.source == "session"


@pytest.mark.usefixtures("in_repo")
def test_promote_refuses_a_draft_nobody_passes(tmp_path: Path) -> None:
    path = _filled_draft(tmp_path, answers_from="incident_followups")  # wrong answers
    code, output = _promote(path, tmp_path, "--dry-run")
    assert code == 1, output
    assert "not passable" in output and path.exists()


def test_a_chat_completion_trace_without_a_session_is_read_as_its_conversation(
    tmp_path: Path,
) -> None:
    import mlflow

    from agenteval.health.draft import turns_of
    from agenteval.tracking.sessions import read_session
    from agenteval.tracking.store import mlflow_client

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    request = {
        "model": "m",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Which port does the API use?"},
            {"role": "assistant", "content": "8080."},
            {"role": "user", "content": "And the admin console?"},
        ],
    }
    reply = {"choices": [{"message": {"role": "assistant", "content": "9090."}}]}
    with mlflow_client(uri) as client:
        experiment = client.create_experiment("chat-app")
        span = mlflow.start_span_no_context(
            name="chat", span_type="CHAT_MODEL", inputs=request, experiment_id=experiment
        )
        span.end(outputs=reply)
        trace_id = span.trace_id
    session = read_session(trace_id, uri)
    assert session.session_id == trace_id
    turns = turns_of(session.messages)
    assert [t.user for t in turns] == ["Which port does the API use?", "And the admin console?"]
    assert [t.replies[-1] for t in turns] == ["8080.", "9090."]
