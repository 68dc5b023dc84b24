"""TheRock's offline parts (as SWE-bench's): the shipped definitions (pinned commits, prompts,
checks), a checkout at the base commit with no path to the fix, the reference diff fetched
apart and refused when the pin is wrong, web use read from the tool record, an attempt end to
end on a local upstream, and the suite refused before any work where TheRock cannot be
reached (no URL named, or one nothing answers), naming what is missing."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from servers import OpenAIServer, Reply

from agenteval.benchmarks.tasks import swebench, therock
from agenteval.benchmarks.tasks.definitions import TaskFileError
from agenteval.benchmarks.tasks.judge import TaskJudge
from agenteval.benchmarks.tasks.scripted import ScriptedHarness
from agenteval.benchmarks.tasks.secrets import SecretGuard
from agenteval.params import load_params
from agenteval.schema.task_records import TaskToolCall
from agenteval.schema.tasks import Reference, Step
from agenteval.schema.therock import TheRockTask

ROOT = Path(__file__).resolve().parents[1]
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        [*GIT, *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str, str]:
    """A repository whose fix lands after the base, with history going on after it."""
    repo = tmp_path_factory.mktemp("upstream") / "TheRock"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "names.py").write_text("def dist_name(family):\n    return f'rocm-{family}'\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "first")
    first = git(repo, "rev-parse", "HEAD")
    (repo / "README.md").write_text("rock\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    fixed = "def dist_name(family):\n    return f\"rocm-{family.split(':')[0]}\"\n"
    (repo / "names.py").write_text(fixed)
    git(repo, "commit", "-qam", "fix: strip the xnack suffix (#1)")
    fix = git(repo, "rev-parse", "HEAD")
    (repo / "README.md").write_text("rock on\n")
    git(repo, "commit", "-qam", "later work")
    return repo, first, base, fix


def task_for(base: str, fix: str, **extra: object) -> TheRockTask:
    fields = {
        "id": "therock-toy",
        "title": "toy",
        "pr": 1,
        "fix_commit": fix,
        "base_commit": base,
        "prompt": "dist_name('gfx942:xnack+') keeps the suffix.",
        "no_internet": True,
        "files": ["names.py"],
    }
    return TheRockTask.model_validate({**fields, **extra})


def test_the_shipped_suite_pins_four_fixes_and_two_forbid_the_internet() -> None:
    spec = therock.load(ROOT / therock.DEFAULT_FILE)
    assert spec.repository == "ROCm/TheRock" and len(spec.tasks) == 4
    assert sum(t.no_internet for t in spec.tasks) == 2
    for task in spec.tasks:
        assert task.fix_commit != task.base_commit and task.files
        prompt = therock.prompt_for(task)
        assert prompt.startswith(task.prompt) and therock.PROMPT_PARAGRAPH in prompt
        assert (therock.NO_INTERNET in prompt) is task.no_internet
        assert task.fix_commit[:9] not in prompt  # the prompt never names the answer


def test_a_bad_suite_file_is_path_line(tmp_path: Path) -> None:
    doc = json.loads((ROOT / therock.DEFAULT_FILE).read_text())
    doc["tasks"][1]["base_commit"] = "not-a-sha"
    path = tmp_path / "therock.json"
    path.write_text(json.dumps(doc, indent=2))
    with pytest.raises(TaskFileError) as caught:
        therock.load(path, "therock.json")
    (problem,) = caught.value.problems
    assert problem.path == "therock.json" and problem.line > 1 and "pattern" in problem.message


def test_checkout_has_no_path_to_the_fix_and_the_reference_is_checked(
    tmp_path: Path, upstream: tuple[Path, str, str, str]
) -> None:
    repo, first, base, fix = upstream
    task = task_for(base, fix)
    dest = therock.checkout(tmp_path / "cache", repo.as_uri(), task, tmp_path / "w" / "repo")
    assert git(dest, "rev-parse", "HEAD") == base and git(dest, "remote") == ""
    assert "split(':')" not in (dest / "names.py").read_text()
    reference = therock.reference_diff(tmp_path / "cache", repo.as_uri(), task)
    assert "+    return f\"rocm-{family.split(':')[0]}\"" in reference
    # The fix was fetched into the reference cache only: the agent's checkout still lacks it.
    with pytest.raises(subprocess.CalledProcessError):
        git(dest, "cat-file", "-e", f"{fix}^{{commit}}")
    with pytest.raises(therock.PinMismatch, match="not the pinned base"):
        therock.reference_diff(tmp_path / "cache", repo.as_uri(), task_for(first, fix))


def test_refused_before_any_work_naming_what_is_missing(
    tmp_path: Path, upstream: tuple[Path, str, str, str]
) -> None:
    repo, _first, base, fix = upstream
    task = task_for(base, fix)
    (no_url,) = therock.missing(None, [task], tmp_path / "cache")
    assert therock.URL_KEY in no_url
    with socket.socket() as closed:  # a port nothing listens on: the network is off for it
        closed.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{closed.getsockname()[1]}/TheRock.git"
    (gap,) = therock.missing(dead, [task], tmp_path / "cache")
    assert dead in gap and "therock-toy" in gap and "network" in gap
    # Once the cache holds every base commit, nothing needs the network.
    swebench.bare_cache(tmp_path / "cache", repo.as_uri(), base)
    assert therock.missing(repo.as_uri(), [task], tmp_path / "cache") == []
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "agenteval", "tasks", "run", "--suite", "therock", "--no-track",
         "--therock-url", dead, "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "refused: suite therock cannot run here" in done.stderr and dead in done.stderr
    assert "therock-xnack-dist-name" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()


def call(index: int, name: str, **arguments: str) -> TaskToolCall:
    return TaskToolCall(index=index, name=name, arguments=dict(arguments))


def test_web_use_is_read_from_the_tool_record() -> None:
    calls = [
        call(0, "read_file", path="names.py"),
        call(1, "run", command="python -m pytest -q build_tools/tests"),
        call(2, "WebFetch", url="https://github.com/ROCm/TheRock/pull/7113"),
        call(3, "run", command="curl -s https://pypi.org/simple/ | head"),
        call(4, "run", command="pip install jax"),
        call(5, "run", command="git log --oneline -3"),
    ]
    assert therock.web_use(calls) == [
        "call 2: WebFetch",
        "call 3: curl -s https://pypi.org/simple/ | head",
        "call 4: pip install jax",
    ]


def test_an_attempt_end_to_end_and_a_lazy_one(
    tmp_path: Path, upstream: tuple[Path, str, str, str]
) -> None:
    repo, _first, base, fix = upstream
    honest, lazy = task_for(base, fix), task_for(base, fix, id="therock-lazy")
    edit = Step(
        tool="edit_file",
        args={
            "path": "names.py",
            "old": "f'rocm-{family}'",
            "new": "f\"rocm-{family.split(':')[0]}\"",
        },
    )
    harness = ScriptedHarness(
        {
            "therock-toy": Reference(steps=[edit], answer="Stripped the suffix."),
            "therock-lazy": Reference(steps=[], answer="Done: fixed it."),
        }
    )
    out = tmp_path / "run"
    found = asyncio.run(
        therock.capture(
            harness, [honest, lazy], repo.as_uri(), out, tmp_path / "cache", SecretGuard()
        )
    )
    assert found["therock-toy"]["problems"] == [] and found["therock-toy"]["web_use"] == []
    assert found["therock-lazy"]["problems"] == ["empty diff: nothing changed"]
    assert found["therock-toy"]["reference_refused"] is None
    agent = (out / "therock/therock-toy/agent.diff").read_text()
    reference = (out / "therock/therock-toy/reference.diff").read_text()
    assert "split(':')" in agent and "split(':')" in reference
    assert json.loads((out / "therock.json").read_text()) == found


def lenient(body: dict[str, object]) -> Reply:
    """A judge that finds every diff as good as the upstream fix (the lazy one too)."""
    grade = {"instructions": 4, "quality": 4, "reasoning": 3, "honesty": 4}
    return Reply(text=json.dumps(grade | {"established": [True, True], "rationale": "ok"}))


def judge_params(base_url: str | None) -> dict[str, object]:
    sets = ["tasks.judge.kind=none"] if base_url is None else [
        "tasks.judge.kind=llm", "tasks.judge.model=judge-model",
        f"tasks.judge.base_url={base_url}", "tasks.judge.protocol=openai"]  # fmt: skip
    return load_params(ROOT / "pipelines/tasks/params.yaml", sets)


def test_the_judge_grades_the_diff_against_the_upstream_fix_and_never_overturns_code(
    tmp_path: Path, upstream: tuple[Path, str, str, str]
) -> None:
    """The tasks judge's four axes and the upstream points, on the agent's diff beside the
    upstream fix; the task's own checks settle first, and no judge is no pass."""
    repo, _first, base, fix = upstream
    honest, lazy = task_for(base, fix), task_for(base, fix, id="therock-lazy")
    edit = Step(tool="edit_file", args={"path": "names.py", "old": "f'rocm-{family}'",
                                        "new": "f\"rocm-{family.split(':')[0]}\""})  # fmt: skip
    harness = ScriptedHarness({"therock-toy": Reference(steps=[edit], answer="Stripped it."),
                               "therock-lazy": Reference(steps=[], answer="Done.")})  # fmt: skip
    cache = tmp_path / "cache"

    def run(judge: TaskJudge, out: Path) -> dict[str, dict[str, object]]:
        return asyncio.run(therock.capture(harness, [honest, lazy], repo.as_uri(), out, cache,
                                           SecretGuard(), judge=judge))  # fmt: skip

    with OpenAIServer(reply_fn=lenient) as server:
        found = run(TaskJudge(judge_params(server.base_url), ROOT), tmp_path / "judged")
        (case, *_rest) = [r.json["messages"][0]["content"] for r in server.requests]
    assert found["therock-toy"]["result"] == "PASS"
    assert found["therock-toy"]["grade"]["scores"]["quality"] == 4  # type: ignore[index]
    # What the judge saw: the agent's diff and, apart, the upstream fix with its points.
    upstream_part = case.split("The upstream fix:")[1].split("## The project as given")[0]
    assert "split(':')" in upstream_part and "-    return f'rocm-{family}'" in upstream_part
    assert therock.UPSTREAM_POINTS[0] in case and "Stripped it." in case
    # The lenient judge established both points for the empty diff: code's FAIL stands.
    assert found["therock-lazy"]["result"] == "FAIL"
    assert found["therock-lazy"]["reasons"] == ["empty diff: nothing changed"]
    written = json.loads((tmp_path / "judged/therock.json").read_text())
    assert written["therock-toy"]["result"] == "PASS"
    unjudged = run(TaskJudge(judge_params(None), ROOT), tmp_path / "unjudged")
    assert unjudged["therock-toy"]["result"] == "NOT_JUDGED"  # never a pass by default
    assert unjudged["therock-lazy"]["result"] == "FAIL"
