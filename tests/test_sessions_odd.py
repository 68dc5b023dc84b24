"""Transcripts as they really come (issue 43): API errors and synthetic replies, IDE tags,
a question above its traceback, a self-contained "Now ..." request, the same session in two
files, odd files named *.jsonl, a giant line, bad bytes, a BOM, numeric timestamps, an empty
folder, and private residue that costs one case, not the dataset."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from agenteval.benchmarks.sessions.extract import Options, extract
from agenteval.benchmarks.sessions.privacy import SessionScrubber
from agenteval.benchmarks.sessions.rules import Drop, is_follow_up, is_pasted_dump
from agenteval.benchmarks.sessions.steps import RESIDUE, private_cases

SESSION = "11111111-2222-4333-8444-555555555555"


class Writer:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.n = 0

    def _line(self, kind: str, message: dict[str, Any], **extra: Any) -> str:
        self.n += 1
        uid = extra.pop("uuid", f"00000000-0000-4000-8000-{self.n:012d}")
        stamp = f"2026-01-01T00:00:{self.n:02d}Z"
        record = {"type": kind, "uuid": uid, "sessionId": SESSION, "cwd": "/tmp/p",
                  "timestamp": stamp, "message": message, **extra}  # fmt: skip
        self.lines.append(record)
        return uid

    def user(self, text: str, **extra: Any) -> str:
        return self._line("user", {"role": "user", "content": text}, **extra)

    def assistant(self, text: str, **extra: Any) -> str:
        model = extra.pop("model", "claude-sonnet-4-5")
        message = {"role": "assistant", "id": f"msg{self.n}", "model": model,
                   "content": [{"type": "text", "text": text}]}  # fmt: skip
        return self._line("assistant", message, **extra)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(x) + "\n" for x in self.lines), encoding="utf-8")
        return path


def project(tmp_path: Path) -> Path:
    return tmp_path / "projects" / "-tmp-p"


def requests(root: Path, **options: Any) -> tuple[list[str], dict[str, int], list[str]]:
    found = extract(root, Options(**options))
    summary = found.summary()
    return [f.case.request for f in found.cases], summary.dropped, summary.warnings


def test_api_errors_and_synthetic_replies_are_never_reference_answers(tmp_path: Path) -> None:
    w = Writer()
    w.user("Why is the nightly export slow on Mondays?")
    w.assistant('API Error: 529 {"type":"overloaded_error"}', isApiErrorMessage=True)
    w.user("Rename the settings loader to config_loader everywhere please.")
    w.assistant("No response requested.", model="<synthetic>")
    w.user("Which module owns the invoice rounding code?")
    w.assistant("The invoice rounding lives in billing/rounding.py.")
    w.write(project(tmp_path) / "a.jsonl")
    found = extract(tmp_path / "projects", Options())
    assert [(f.case.request, f.case.reference.answer) for f in found.cases] == [
        ("Which module owns the invoice rounding code?",
         "The invoice rounding lives in billing/rounding.py.")
    ]  # fmt: skip
    dropped = found.summary().dropped
    assert dropped[Drop.API_ERROR] == 1 and dropped[Drop.SYNTHETIC] == 1


def test_ide_tags_leave_the_request(tmp_path: Path) -> None:
    w = Writer()
    w.user("<ide_opened_file>The user opened /tmp/p/cart.py in the IDE.</ide_opened_file>"
           "Why does the cart total ignore the discount?")  # fmt: skip
    w.assistant("Because apply_discount runs after the total is cached.")
    w.write(project(tmp_path) / "a.jsonl")
    cases, _, _ = requests(tmp_path / "projects")
    assert cases == ["Why does the cart total ignore the discount?"]


def test_a_question_above_its_traceback_is_a_request_and_now_requests_stand_alone() -> None:
    trace = "\n".join(f'  File "app/x{i}.py", line {i}, in f{i}' for i in range(24))
    assert not is_pasted_dump(f"Why does this test fail with the error below?\n{trace}")
    assert is_pasted_dump(trace)
    assert not is_follow_up("Now run the linter on the cart module")
    assert is_follow_up("Now add a test for that.") and is_follow_up("Also log it.")


def test_the_same_messages_in_two_files_give_one_case(tmp_path: Path) -> None:
    w = Writer()
    w.user("Which tests cover the invoice rounding code?")
    w.assistant("tests/test_rounding.py covers it.")
    w.write(project(tmp_path) / "a.jsonl")
    w.write(project(tmp_path) / "b.jsonl")  # a resumed session repeats the lines
    cases, dropped, _ = requests(tmp_path / "projects")
    assert len(cases) == 1 and dropped[Drop.DUPLICATE] == 2


def test_odd_files_are_skipped_counted_and_never_opened(tmp_path: Path) -> None:
    w = Writer()
    w.user("Which tests cover the invoice rounding code?")
    w.assistant("tests/test_rounding.py covers it.")
    folder = project(tmp_path)
    w.write(folder / "good.jsonl")
    (folder / "dir.jsonl").mkdir()
    (folder / "broken.jsonl").symlink_to(folder / "missing")
    os.mkfifo(folder / "pipe.jsonl")  # opening it would block forever
    cases, _, warnings = requests(tmp_path / "projects")
    assert len(cases) == 1
    assert any("skipped 3 *.jsonl" in w and "1 broken symlink" in w and "1 directory" in w
               and "1 not a regular file" in w for w in warnings)  # fmt: skip


def test_a_giant_line_drops_its_case_and_bad_bytes_bom_and_epochs_are_read(
    tmp_path: Path,
) -> None:
    w = Writer()
    w.user("Summarise the release notes for 2.4, please.")
    w.assistant("x" * 5000)  # over the cap set below
    w.user("What does the sync_stock job do?", timestamp=1767225600123)  # epoch ms
    w.assistant("It copies stock levels from the warehouse API every ten minutes.")
    w.user("Is the caf\udce9 endpoint cached?")
    w.assistant("Yes, for five minutes.")
    path = w.write(project(tmp_path) / "a.jsonl")
    data = path.read_text(encoding="utf-8", errors="surrogateescape")
    raw = b"\xef\xbb\xbf" + data.replace("\\udce9", "\udce9").encode("utf-8", "surrogateescape")
    path.write_bytes(raw)
    found = extract(tmp_path / "projects", Options(max_line_bytes=4000))
    assert [f.case.request for f in found.cases] == [
        "What does the sync_stock job do?",
        "Is the caf\ufffd endpoint cached?",
    ]
    assert found.cases[0].case.timestamp == "2026-01-01T00:00:00.123000Z"
    assert found.summary().dropped[Drop.OVERSIZE_LINE] == 2  # the line and its request


def test_no_transcripts_gives_a_hint_naming_the_folder(tmp_path: Path) -> None:
    (tmp_path / "projects").mkdir()
    cases, _, warnings = requests(tmp_path / "projects")
    assert cases == [] and any(str(tmp_path / "projects") in w and "no transcripts" in w
                               for w in warnings)  # fmt: skip


def test_residue_costs_its_case_and_home_folders_of_anyone_become_tilde(tmp_path: Path) -> None:
    w = Writer()
    w.user("Ask carol whether the deploy user may restart the queue workers today.")
    w.assistant("I will check /Users/carol/notes/queue.md and /home/deploy/app/run.sh first.")
    w.user(r"Open C:\Users\bob\proj\main.py and explain the retry loop in it please.")
    w.assistant("The retry loop backs off twice and gives up.")
    w.user("Which port does the PLANTED-RESIDUE service listen on by default?")
    w.assistant("Port 8443.")
    w.write(project(tmp_path) / "a.jsonl")
    found = extract(tmp_path / "projects", Options())

    class Planted(SessionScrubber):  # a residue no rule removes, found by the final check
        def leaks(self, text: str) -> list[str]:
            return super().leaks(text) + (["planted"] if "PLANTED-RESIDUE" in text else [])

    kept, dropped = private_cases([f.case for f in found.cases], Planted(env={}))
    assert dropped == {f"{RESIDUE} (planted)": 1} and len(kept) == 2
    text = json.dumps([c.model_dump(mode="json") for c in kept])
    for private in ("carol", "/Users/", "/home/deploy", "Users\\\\bob", "bob"):
        assert private not in text, private
    assert "~/notes/queue.md" in text and "~/app/run.sh" in text


def test_planted_secrets_of_every_kind_leave_no_trace_in_the_dataset(tmp_path: Path) -> None:
    """The held corpus's planted secrets, typed into requests and said in answers, through
    `agenteval sessions --dataset-only`: not one value reaches dataset.json."""
    from typer.testing import CliRunner

    from agenteval.cli import app

    corpus = Path(__file__).resolve().parents[1] / "eval/scrub/held.jsonl"
    planted = [json.loads(line) for line in corpus.read_text().splitlines()]
    planted = [r for r in planted if "secrets" in r]
    w = Writer()
    for n, record in enumerate(planted):
        w.user(f"Request {n}: why does this config fail to load?\n{record['text']}")
        w.assistant(f"Answer {n}: the loader rejects it. You wrote:\n{record['text']}")
    w.write(project(tmp_path) / "a.jsonl")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "sessions",
            "--dataset-only",
            "--transcripts",
            str(tmp_path / "projects"),
            "--limit",
            "1000",
            "--out",
            str(out),
            "--no-track",
        ],
    )
    assert result.exit_code == 0, result.output
    dataset = (out / "dataset.json").read_text()
    assert json.loads(dataset)["summary"]["cases"] >= len(planted) - 2
    leaked = [r["id"] for r in planted for v in r["secrets"] if v in dataset]
    assert leaked == []


def test_a_clean_macos_transcript_is_kept_whatever_its_file_is_named(tmp_path: Path) -> None:
    # Quoted in JSON, `"-Users-bob-src-api/<uuid>.jsonl"` once read as a random value after
    # a colon and refused the whole dataset; the check now reads the strings scrubbed.
    from agenteval.benchmarks.sessions.steps import step_dataset

    session = "3f2a9c1e-7b4d-4e8a-9c2f-1d5e6a7b8c9d"
    w = Writer()
    w.user("Why does GET /orders?page=0 return the first page twice?", cwd="/Users/bob/src/api")
    w.assistant("page=0 and page=1 both map to offset 0; treat page as 1-based.")
    w.write(tmp_path / "projects" / "-Users-bob-src-api" / f"{session}.jsonl")
    params = {"sessions": {"transcripts": str(tmp_path / "projects")}}
    dataset = step_dataset(params, tmp_path / "repo", tmp_path / "out")
    assert [c.request for c in dataset.cases] == [
        "Why does GET /orders?page=0 return the first page twice?"
    ]
    written = (tmp_path / "out" / "dataset.json").read_text()
    assert "bob" not in written and "[REDACTED]" not in written


def test_a_judge_rationale_is_checked_as_the_text_it_is_not_as_escaped_json(
    tmp_path: Path,
) -> None:
    from pydantic import BaseModel

    from agenteval.benchmarks.sessions.privacy import withhold
    from agenteval.benchmarks.sessions.steps import write_model

    class Verdict(BaseModel):
        case: str
        rationale: str

    scrubber = SessionScrubber(env={})
    # JSON writes the newline as `\n`: `password\n```` read as a password's value and
    # refused results.json after every request (the red team's judge rationale).
    honest = Verdict(case="c1", rationale=(
        "The reference is:\n\n```\nsecretKeyRef: name: orders-db-credentials key: password\n"
        "```\n\nThe value `orders-db-credentials` is what the service reads."
    ))  # fmt: skip
    assert write_model(tmp_path / "results.json", honest, scrubber) == honest
    assert json.loads((tmp_path / "results.json").read_text())["rationale"] == honest.rationale
    # A string still holding a secret costs that string, never the file.
    value = {"case": "c2", "rationale": "it printed sk-ant-api03-" + "Q" * 40}
    kept, kinds = withhold(value, scrubber)
    assert kept == {"case": "c2", "rationale": "[REDACTED]"} and kinds
