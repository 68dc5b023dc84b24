"""Reading Claude Code transcripts and extracting cases (`agenteval sessions --dataset-only`).

The fixtures under tests/fixtures/claude_sessions/ are written like real ~/.claude/projects
files (see their README): every line type, a follow-up chain, a sidechain in a session file
and in an agent file, a truncated last line and fields of a newer format. Every drop rule is
checked on the line it applies to.
"""

from __future__ import annotations

import json
import shutil
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agenteval.benchmarks.sessions import rules
from agenteval.benchmarks.sessions.extract import ExtractError, Options, extract
from agenteval.benchmarks.sessions.rules import Drop
from agenteval.benchmarks.sessions.transcript import Line, Message, read_transcript
from agenteval.cli import app

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests/fixtures/claude_sessions"
INVENTORY = "-home-dev-work-inventory-api"
NOTES = "-home-dev-work-notes-cli"
MAIN = f"{INVENTORY}/539e996f-6715-5940-b09c-19dbe46fe26c.jsonl"
AGENT = f"{INVENTORY}/agent-5d8e1f3a.jsonl"
CUT = f"{INVENTORY}/df0abea0-bda3-50c2-8214-e4d4ea5c2977.jsonl"
FUTURE = f"{NOTES}/b3fa75be-7290-58d2-aa2c-4c17af0dba27.jsonl"


@pytest.fixture(scope="module")
def found() -> object:
    return extract(FIXTURES, Options())


def requests(extraction: object) -> list[tuple[str, int, str, int]]:
    return [
        (f.case.source.file, f.case.source.line, f.case.request, len(f.case.context))
        for f in extraction.cases  # type: ignore[attr-defined]
    ]


def test_every_request_a_person_typed_becomes_a_case(found: object) -> None:
    assert requests(found) == [
        (FUTURE, 2, "How do I make `notes export` skip archived notes?", 0),
        (FUTURE, 9, "Also make it print how many were skipped.", 1),
        (
            MAIN,
            6,
            "GET /items?limit=0 returns every item instead of an empty page. Can you "
            "find out why and fix it?",
            0,
        ),
        (MAIN, 23, "Now add a regression test for that.", 1),
        (MAIN, 29, "Do the same for the offset parameter.", 2),
        (MAIN, 35, "Which of our endpoints are missing the auth dependency?", 0),
        (CUT, 1, "What does the sync_stock job do, and how often does it run?", 0),
    ]


def test_every_dropped_line_names_its_rule(found: object) -> None:
    dropped = {d.file: d.reasons for d in found.dropped_lines()}  # type: ignore[attr-defined]
    main = dropped[MAIN]
    assert main[Drop.METADATA] == [1, 2]  # summary, file-history-snapshot
    assert main[Drop.SLASH_COMMAND] == [3, 4, 5]  # caveat, /model echo, its stdout
    assert main[Drop.SYSTEM] == [15]
    assert main[Drop.HOOK_FEEDBACK] == [17]
    assert main[Drop.ACKNOWLEDGEMENT] == [21]
    assert main[Drop.SIDECHAIN] == [37, 38, 39, 40]  # the Task subagent inside the session
    assert main[Drop.TASK_NOTIFICATION] == [43]
    assert main[Drop.IMAGE] == [45]
    assert main[Drop.PASTED_DUMP] == [47]
    # Answers to dropped lines never pass for the answer to a request.
    assert main[Drop.ORPHAN] == [22, 44, 46, 48]
    # The interrupted request, its tool call and result, and the interrupt marker.
    assert main[Drop.INTERRUPTED] == [49, 50, 51, 52]
    assert dropped[AGENT] == {Drop.SIDECHAIN: [1, 2]}  # a subagent's own file
    assert dropped[CUT] == {Drop.NO_REFERENCE: [5], Drop.TRUNCATED: [6]}
    future = dropped[FUTURE]
    assert future[Drop.UNKNOWN_TYPE] == [6]
    assert future[Drop.COMPACT_SUMMARY] == [7]
    assert future[Drop.SLASH_COMMAND] == [13, 16, 17]  # /review echo, /clear echo, stdout
    assert future[Drop.IS_META] == [14]  # the expanded /review prompt
    assert future[Drop.FOLLOWUP_WITHOUT_CONTEXT] == [18, 19]  # after /clear
    assert future[Drop.NO_REFERENCE] == [20, 21, 22]  # tests ran, nothing was said


def test_the_summary_counts_every_line_once(found: object) -> None:
    summary = found.summary()  # type: ignore[attr-defined]
    total_lines = sum(1 for p in FIXTURES.rglob("*.jsonl") for _ in p.open("rb"))
    assert summary.files == 4 and summary.cases == 7
    assert summary.lines == total_lines  # the cut last line (no newline) included
    assert sum(summary.used.values()) + sum(summary.dropped.values()) == summary.lines
    assert summary.used["request"] == 7 and summary.truncated_files == 1


def test_the_reference_is_what_the_assistant_finally_said(found: object) -> None:
    cases = {f.case.source.line: f.case for f in found.cases if f.file == MAIN}  # type: ignore[attr-defined]
    first = cases[6]
    # Narration before the tool calls is not the answer; the text after the Stop hook's
    # feedback is part of it (the assistant carried on with the same request).
    assert not first.reference.answer.startswith("I'll look")
    assert first.reference.answer.endswith("the lint hook flagged.")
    assert "if limit is not None:" in first.reference.answer
    assert [t.name for t in first.reference.tools] == ["Grep", "Read", "Edit", "Edit"]
    assert first.reference.tools[0].target == "app/routes"
    # The subagent's report reached the main chain as a tool result; the answer is the
    # assistant's own summary of it.
    assert cases[35].reference.answer.startswith("Two endpoints skip")
    assert [t.name for t in cases[35].reference.tools] == ["Task"]


def test_a_follow_up_carries_its_chain_as_context(found: object) -> None:
    cases = {f.case.source.line: f.case for f in found.cases if f.file == MAIN}  # type: ignore[attr-defined]
    chain = cases[29].context
    assert [e.request for e in chain] == [cases[6].request, cases[23].request]
    assert chain[0].answer == cases[6].reference.answer
    assert chain[1].answer == cases[23].reference.answer
    assert "follow-up carrying 2 earlier exchange(s)" in cases[29].kept_because
    assert cases[35].context == []  # a new question starts afresh


def test_newer_formats_degrade_to_warnings() -> None:
    read = read_transcript(FIXTURES / FUTURE)
    assert read.unknown["field 'promptOrigin'"] == 1
    assert read.unknown["block type 'citation_summary'"] == 1
    summary = extract(FIXTURES, Options(project=NOTES)).summary()
    joined = "\n".join(summary.warnings)
    assert f"{FUTURE}:2: unknown field 'promptOrigin'" in joined
    assert f"{FUTURE}:5: unknown block type 'citation_summary'" in joined
    assert f"{FUTURE}:6: unknown line type 'session-bookmark'" in joined
    # The answer next to the unknown block is still read.
    case = extract(FIXTURES, Options(project=NOTES)).cases[0].case
    assert case.reference.answer.startswith("`export()` in `notes/export.py`")


def test_fields_read_by_name_are_not_unknown_and_others_are(tmp_path: Path) -> None:
    """Unknown fields are named from the parsed line (the model keeps only what it reads):
    a declared field, by its alias or its name, is not unknown; anything else is."""
    path = tmp_path / "s.jsonl"
    lines = [
        {"type": "user", "isApiErrorMessage": True, "message": {"content": "hi"}},
        {"type": "user", "parent_uuid": "p", "message": {"content": "hi"}},
        {"type": "user", "isApiErrorMesage": True, "message": {"content": "hi"}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    read = read_transcript(path)
    assert dict(read.unknown) == {"field 'isApiErrorMesage'": 1}
    assert read.first_seen == {"field 'isApiErrorMesage'": 3}
    assert [line.is_api_error_message for _, line in read.lines] == [True, None, None]


def test_a_message_reads_its_content_once_and_again_when_it_changes() -> None:
    message = Line.model_validate(
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "first"}]}}
    ).message
    assert message is not None and message.texts() == ["first"]
    message.content = [{"type": "image"}, {"type": "text", "text": "second"}]
    assert message.texts() == ["second"] and message.kinds() == {"image", "text"}
    copied = message.model_copy(update={"content": "third"})
    assert copied.texts() == ["third"] and message.texts() == ["second"]
    read = Message(content="x")
    assert read.texts() == ["x"]
    assert read.model_dump() == Message(content="x").model_dump()  # what it keeps is not dumped
    assert set(read.model_dump()) == set(Message.model_fields)


def test_a_broken_middle_line_is_named_and_nothing_else_is_lost(tmp_path: Path) -> None:
    folder = tmp_path / INVENTORY
    folder.mkdir()
    lines = (FIXTURES / CUT).read_text().splitlines()
    lines.insert(2, '{"type": "assistant", "message": ')
    (folder / "s.jsonl").write_text("\n".join(lines[:5]) + "\n")
    found = extract(tmp_path, Options())
    assert f"{INVENTORY}/s.jsonl:3: not a JSON object; line skipped" in found.warnings
    assert [f.case.request for f in found.cases] == [
        lines[0] and json.loads(lines[0])["message"]["content"]
    ]
    assert found.dropped[f"{INVENTORY}/s.jsonl"][Drop.MALFORMED] == [3]
    assert found.truncated_files == 0


def test_project_since_and_limit_select(found: object) -> None:
    only = extract(FIXTURES, Options(project=NOTES))
    assert {f.file.split("/")[0] for f in only.cases} == {NOTES}
    by_path = extract(FIXTURES, Options(project="/home/dev/work/notes-cli"))
    assert len(by_path.cases) == len(only.cases) == 2
    recent = extract(FIXTURES, Options(since=datetime(2025, 12, 1, tzinfo=UTC)))
    assert len(recent.cases) == 5
    assert recent.dropped[FUTURE][Drop.BEFORE_SINCE][:2] == [2, 3]
    limited = extract(FIXTURES, Options(limit=2))
    assert [f.file for f in limited.cases] == [MAIN, CUT]  # the two most recent requests
    assert limited.summary().dropped[Drop.OVER_LIMIT] > 0
    with pytest.raises(ExtractError, match="--project nope: no such project"):
        extract(FIXTURES, Options(project="nope"))


@pytest.mark.parametrize(
    ("text", "drop"),
    [
        ("thanks!", Drop.ACKNOWLEDGEMENT),
        ("ok, looks good", Drop.ACKNOWLEDGEMENT),
        ("👍", Drop.ACKNOWLEDGEMENT),
        ("ok but why does the second test still fail?", None),
        ("yes", Drop.ACKNOWLEDGEMENT),
        ("Stop hook feedback:\n[lint]: 2 errors", Drop.HOOK_FEEDBACK),
        ("<task-notification>\n<task-id>x</task-id>", Drop.TASK_NOTIFICATION),
        (
            "<command-message>review</command-message>\n<command-name>/review</command-name>",
            Drop.SLASH_COMMAND,
        ),
        ("[Request interrupted by user]", Drop.INTERRUPTED),
        ("   ", Drop.EMPTY),
        (  # a question above its trace is a request with its evidence (issue 43)
            "Why does this fail?\n" + "\n".join(f"  at frame_{i} (lib.js:{i})" for i in range(25)),
            None,
        ),
        ("\n".join(f"  at frame_{i} (lib.js:{i})" for i in range(25)), Drop.PASTED_DUMP),
        (
            "Please review these notes and tell me what is missing.\n"
            + "\n".join(
                f"Step {i} of the release checklist is written down here." for i in range(25)
            ),
            None,
        ),
    ],
)
def test_user_text_rules(text: str, drop: Drop | None) -> None:
    assert rules.read_user_text(text).drop == drop


@pytest.mark.parametrize(
    ("text", "follow_up"),
    [
        ("Do the same for the other one.", True),
        ("Now run the tests.", True),
        ("Also update the changelog.", True),
        ("fix that", True),
        ("why did it fail?", True),
        ("GET /items returns every item instead of an empty page, why?", False),
        ("Which endpoints are missing auth?", False),
        ("Explain how the scheduler picks the next job and what happens when two are due.", False),
    ],
)
def test_follow_up_cues(text: str, follow_up: bool) -> None:
    assert rules.is_follow_up(text) is follow_up


def test_dataset_only_writes_the_dataset_privately(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    result = CliRunner().invoke(
        app,
        [
            "sessions",
            "--dataset-only",
            "--transcripts",
            str(FIXTURES),
            "--limit",
            "20",
            "--out",
            str(out),
            "--no-track",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "dataset: 7 case(s) from 4 file(s)" in result.output
    assert sorted(p.name for p in out.iterdir()) == ["dataset.json"]
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    assert stat.S_IMODE((out / "dataset.json").stat().st_mode) == 0o600
    data = json.loads((out / "dataset.json").read_text())
    assert {c["cwd"] for c in data["cases"]} == {"~/work/inventory-api", "~/work/notes-cli"}
    assert data["summary"]["dropped"]["sidechain"] == 6


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--limit", "0"], "--limit: must be at least 1"),
        (["--since", "last tuesday"], "--since: 'last tuesday' is not a date"),
        (["--project", "nope"], "--project nope: no such project"),
    ],
)
def test_bad_values_are_refused_before_any_work(
    tmp_path: Path, args: list[str], message: str
) -> None:
    out = tmp_path / "never"
    result = CliRunner().invoke(
        app,
        ["sessions", "--dataset-only", "--transcripts", str(FIXTURES), "--out", str(out), *args],
    )
    assert result.exit_code == 2 and message in result.output
    assert "Traceback" not in result.output and not out.exists()


def test_a_missing_transcripts_folder_is_named(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "sessions",
            "--dataset-only",
            "--transcripts",
            str(tmp_path / "no"),
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert result.exit_code == 2 and "no transcripts folder at" in result.output


def test_a_folder_of_one_project_reads_too(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / NOTES, tmp_path / NOTES)
    assert len(extract(tmp_path / NOTES, Options()).cases) == 2
