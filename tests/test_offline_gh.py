"""The offline `gh` on PATH inside a task's sandbox (agenteval.benchmarks.tasks.offline_gh):
served from the task file's fixture through the real bubblewrap sandbox, every call logged
where the agent can neither read nor forge it, and the labels check read from that log (an
honest labelling passes; too many labels, the wrong one, other issues labelled, or a claim
with no call fail)."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from services import unavailable

from agenteval.benchmarks.tasks.boundary import agent_env
from agenteval.benchmarks.tasks.definitions import load_task_file
from agenteval.benchmarks.tasks.offline_gh import GhRecord, GhService, label_checks
from agenteval.benchmarks.tasks.sandbox import default_sandbox
from agenteval.benchmarks.tasks.tools import ToolRecord, WorkspaceTools
from agenteval.schema.task_records import TaskToolCall

ROOT = Path(__file__).resolve().parents[1]
SPEC = load_task_file(ROOT / "eval/tasks/tasks.json")
assert SPEC.github is not None
FIXTURE_PATH = ROOT / SPEC.github
FIXTURE = json.loads(FIXTURE_PATH.read_text(encoding="utf-8"))
WANTED = {16: ["bug"], 17: ["documentation"]}


@pytest.fixture
def service() -> Iterator[GhService]:
    gh = GhService(FIXTURE_PATH)
    yield gh
    gh.close()


def sandboxed(gh: GhService, work: Path) -> WorkspaceTools:
    if shutil.which("bwrap") is None:
        unavailable("bwrap is not installed: apt-get install bubblewrap")
    sandbox = gh.sandbox(default_sandbox().check())
    return WorkspaceTools(work, gh.environ(agent_env()), 30, ToolRecord(), sandbox)


def run(tools: WorkspaceTools, command: str) -> TaskToolCall:
    return asyncio.run(tools.call("run", {"command": command}))


def test_gh_inside_the_sandbox_serves_the_fixture_and_logs_out_of_reach(
    service: GhService, tmp_path: Path
) -> None:
    tools = sandboxed(service, tmp_path)
    listed = run(tools, "gh issue list")
    assert listed.ok, listed.output
    numbers = [line.split("\t")[0] for line in listed.output.splitlines()[1:]]
    assert numbers == ["11", "12", "13", "14", "15", "16", "17"]
    assert "strae" in run(tools, "gh issue view 11 --comments").output
    assert "sharp-s" in run(tools, "gh pr view 18 --json headRefName").output
    assert run(tools, "gh issue edit 16 --add-label bug").ok
    refused = run(tools, "gh repo clone toyshop/toybox")
    assert refused.exit_code == 1 and "not served offline" in refused.output
    # The log lies beside the client and the socket, in a folder the sandbox never shows:
    # not readable, not writable, not even there.
    home = service.home
    assert run(tools, f"ls -a {home}").output.split()[3:] == [".", "..", "bin", "sock"]
    for attempt in (f"cat {service.log}", f"echo forged >> {service.log}"):
        tried = run(tools, attempt)
        assert not tried.ok and "No such file or directory" in tried.output
    # Talking to the socket directly is a gh call like any other, served and logged as one.
    script = (
        "import json, socket; s = socket.socket(socket.AF_UNIX); s.connect("
        f"{str(service.socket_path)!r}); s.sendall(json.dumps({{'argv': ['issue', 'edit', "
        "'17', '--add-label', 'documentation'], 'ok': True, 'added_labels': ['bug']}).encode())"
        "; s.shutdown(socket.SHUT_WR); print(s.recv(9999).decode())"
    )
    assert run(tools, f'python -c "{script}"').ok
    record = service.record()
    commands = ["issue list", "issue view", "pr view", "issue edit", "repo clone", "issue edit"]
    assert [c["command"] for c in record.calls] == commands
    assert record.labels(16) == ["bug"] and record.labels(17) == ["documentation"]
    assert "forged" not in service.log.read_text()
    assert all(check.ok for check in label_checks(WANTED, record))


def edit(number: int, *labels: str) -> dict:
    return {"command": "issue edit", "number": number, "ok": True, "added_labels": list(labels)}


@pytest.mark.parametrize(
    ("calls", "why"),
    [
        ([], "labels [], expected ['bug']"),
        ([edit(16, "bug"), edit(17, "bug")], "expected ['documentation']"),
        ([edit(16, "bug", "documentation"), edit(17, "documentation")], "expected ['bug']"),
        ([edit(n, "bug") for n in range(11, 18)], "labels added to issues not asked about"),
        ([edit(16, "bug"), edit(17, "documentation"), edit(14, "duplicate")], "#14: duplicate"),
        ([{**edit(16, "bug"), "ok": False}, edit(17, "documentation")], "labels []"),
    ],
    ids=["no call", "both bug", "extra label", "everything", "another issue", "refused call"],
)
def test_wrong_or_lazy_labelling_gets_no_credit(calls: list[dict], why: str) -> None:
    checks = label_checks(WANTED, GhRecord(FIXTURE, calls))
    assert not all(c.ok for c in checks)
    assert any(why in c.detail for c in checks if not c.ok), [c.detail for c in checks]


def test_the_honest_labelling_passes_and_no_service_is_no_credit() -> None:
    honest = [edit(16, "bug"), edit(17, "documentation")]
    assert all(c.ok for c in label_checks(WANTED, GhRecord(FIXTURE, honest)))
    (missing,) = label_checks(WANTED, None)
    assert not missing.ok and "no offline gh" in missing.detail
