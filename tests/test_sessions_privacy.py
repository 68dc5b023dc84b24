"""The user's own prompts stay theirs: a secret planted in a transcript appears in no file
the run writes, in no MLflow row (the store's database and artifact files are read byte by
byte), and in no request sent to the agent or the judge.

Two secrets are planted: one only its value identifies (an environment variable named like a
password holds it: the scrubber knows the value), one only its shape identifies (a GitHub
token the process was never told about). An email address, a home folder and the user name
in it are planted beside them.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from servers import OpenAIServer
from servers import session_judges as judges

from agenteval.benchmarks.sessions.privacy import (
    PrivacyError,
    SessionScrubber,
    check_private_folder,
    write_private,
)
from tests.sessions_world import ROOT, agent_reply, make_world, run_cli, sets_for

KNOWN_SECRET = "velvet-otter-4471-harbour"  # no shape gives it away: only its value does
SHAPED_SECRET = "ghp_" + "R8kV2mQ7xL4nP9sT3wY6zB1cD5fH0jK2aE7g"
EMAIL = "maria.kowalska@example-corp.io"
HOME = "/home/mkowalska/src/inventory-api"


def plant(projects: Path) -> None:
    """Put the secrets in a request, a tool result and the reference answer."""
    path = next(projects.glob("-home-dev-work-inventory-api/539e*.jsonl"))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        content = (line.get("message") or {}).get("content")
        if isinstance(content, str) and content.startswith("Which of our endpoints"):
            line["message"]["content"] = (
                f"{content} The staging password is {KNOWN_SECRET} and my token is "
                f"{SHAPED_SECRET}; mail {EMAIL} if unsure. Repo: {HOME}"
            )
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result":
                block["content"] = f"{block['content']}\nDB_URL=postgres://app:{KNOWN_SECRET}@db"
            if block.get("type") == "text" and block["text"].startswith("Two endpoints skip"):
                block["text"] += f" (token {SHAPED_SECRET} seen in {HOME}/.env)"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def leaked(data: bytes) -> list[str]:
    found = [s for s in (KNOWN_SECRET, SHAPED_SECRET, EMAIL, "mkowalska") if s.encode() in data]
    return found


@pytest.mark.parametrize("log_text", [False, True], ids=["default", "log_text"])
def test_a_planted_secret_is_written_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log_text: bool
) -> None:
    monkeypatch.setenv("STAGING_DB_PASSWORD", KNOWN_SECRET)
    projects, _ = make_world(tmp_path)
    plant(projects)
    out = tmp_path / "run"
    cache = ROOT / ".cache/agenteval/llm"  # the response cache would keep replies unscrubbed
    cached = set(cache.rglob("*")) if cache.is_dir() else set()
    with (
        OpenAIServer(reply_fn=agent_reply) as agent,
        OpenAIServer(reply_fn=judges.graded_by_kind()) as judge,
    ):
        sets = sets_for(projects, agent, judge, tmp_path, f"sessions.log_text={log_text}")
        result = run_cli(out, sets)
        sent = [r.body.encode() for r in [*agent.requests, *judge.requests]]
    assert result.exit_code == 0, result.output
    assert all(not leaked(body) for body in sent)
    assert (set(cache.rglob("*")) if cache.is_dir() else set()) == cached
    written = [p for p in tmp_path.rglob("*") if p.is_file() and "projects" not in p.parts]
    stores = [p for p in written if "mlflow.db" in p.name or "mlartifacts" in p.parts]
    assert any(p.name == "mlflow.db" for p in stores)
    assert {p.name for p in out.iterdir()} >= {"dataset.json", "results.json", "report.md"}
    for path in written:
        assert not leaked(path.read_bytes()), path
    dataset = (out / "dataset.json").read_text()
    assert "[REDACTED]" in dataset and "person1@example.com" in dataset
    assert "~/src/inventory-api" in dataset  # the home folder, without the user's name
    for path in out.rglob("*"):
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), path
    # With log_text the run carries the (scrubbed) text; by default only digests.
    db = b"".join(p.read_bytes() for p in stores)
    assert (b"Which of our endpoints" in db) is log_text
    if log_text:  # the store holds the texts: this user's only, as the private folder is
        for path in stores:
            assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path


def test_a_line_that_would_leak_is_withheld_not_written(tmp_path: Path) -> None:
    scrubber = SessionScrubber(env={"X_API_KEY": "abcd1234efgh5678"})
    text = scrubber.scrub_text("key abcd1234efgh5678 at /home/jdoe/x, mail a.b@corp.example")
    assert text == "key [REDACTED] at ~/x, mail person1@example.com"
    write_private(tmp_path / "f.md", "# Report\nraw abcd1234efgh5678\nend\n", scrubber)
    assert (tmp_path / "f.md").read_text() == "# Report\n[REDACTED]\nend\n"
    assert scrubber.scrub_text("jdoe wrote it") == "user wrote it"  # learned from the path


def test_an_output_folder_git_or_dvc_would_pick_up_is_refused() -> None:
    with pytest.raises(PrivacyError, match="not ignored by git"):
        check_private_folder(ROOT / "eval/sessions-out", ROOT)
    check_private_folder(ROOT / "runs/sessions-x", ROOT)  # both ignore it
    with pytest.raises(PrivacyError, match=r"not in \.dvcignore"):
        check_private_folder(ROOT / "runs/other-x", ROOT)


def test_a_secret_pasted_once_in_context_is_scrubbed_from_the_whole_case() -> None:
    from agenteval.benchmarks.sessions.privacy import SessionScrubber

    key = "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"
    case = {
        "request": f"AWS_SECRET_ACCESS_KEY={key} fails, why?",
        "context": [f"do we reference {key} anywhere else?"],
        "reference": f"Yes: config/prod.env holds {key}.",
    }
    scrubber = SessionScrubber([], env={})
    clean = scrubber.scrub(case)
    assert key not in json.dumps(clean)
    assert scrubber.scrub({"other": f"is {key} used?"}) == {"other": f"is {key} used?"}
