"""The bad-input suite, commands: a careless or hostile value is refused before any work,
with exit 2 (4 for `compare`), the key, option or `file:line` named, and no traceback.

Every case runs the real command line in this process (typer's runner) from the repository
root; each must end in validation, so the whole file stays cheap. The DVC stages' cases are
in test_bad_input_stages.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agenteval.cli import app

ROOT = Path(__file__).resolve().parents[1]
DEAD = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there
UNWRITABLE = "/proc/agenteval-nowhere/run"  # /proc takes no new folders, not even as root

# (id, argv, exit code, what the message must name)
CASES: list[tuple[str, list[str], int, str]] = [
    # run: typed params, every value checked before the suite is built
    (
        "run-int",
        ["run", "--set", "run.concurrency=abc"],
        2,
        "--set run.concurrency: expected an integer",
    ),
    (
        "run-number",
        ["run", "--set", "judge.min_correctness=high"],
        2,
        "judge.min_correctness: expected a number",
    ),
    ("run-zero", ["run", "--set", "run.concurrency=0"], 2, "run.concurrency"),
    ("run-negative-timeout", ["run", "--set", "run.timeout_s=-5"], 2, "run.timeout_s"),
    ("run-iterations", ["run", "--set", "suite.iterations=0"], 2, "suite.iterations"),
    ("run-section", ["run", "--set", "nosuch.key=1"], 2, "unknown section 'nosuch'"),
    ("run-unknown-key", ["run", "--set", "run.concurency=4"], 2, "run.concurency: unknown key"),
    ("run-weight", ["run", "--set", "judge.weights.bogus=1"], 2, "judge.weights"),
    ("run-no-equals", ["run", "--set", "run.concurrency"], 2, "--set expects key=value"),
    (
        "run-bad-yaml",
        ["run", "--set", "run.concurrency=[1"],
        2,
        "--set run.concurrency: not a YAML value",
    ),
    ("run-list", ["run", "--set", "suite.categories=abc"], 2, "suite.categories: expected a list"),
    ("run-bool", ["run", "--set", "run.cache=maybe"], 2, "run.cache: expected true or false"),
    ("run-tier", ["run", "--tier", "nosuch"], 2, "--tier: suite.tier"),
    (
        "run-params-missing",
        ["run", "--params", "/nonexistent/params.yaml"],
        2,
        "--params /nonexistent/params.yaml: no such file",
    ),
    ("run-out", ["run", "--out", UNWRITABLE], 2, f"--out {UNWRITABLE}: cannot write there"),
    ("run-resume", ["run", "--resume", "/nonexistent"], 2, "/nonexistent/params.json"),
    (
        "run-scenario",
        ["run", "--scenario", "nosuch", "--out", "{tmp}/r"],
        2,
        "--scenario nosuch: no scenario file has this id",
    ),
    (
        "run-scenarios-path",
        ["run", "--set", "suite.scenarios=/nonexistent", "--out", "{tmp}/r"],
        2,
        "/nonexistent:1:",
    ),
    # an endpoint is only ever the one the user named
    (
        "chat-no-url",
        ["run", "--set", "target.kind=chat"],
        2,
        "target.base_url: required for target.kind chat",
    ),
    (
        "chat-no-model",
        ["run", "--set", "target.kind=chat", "--set", f"target.base_url={DEAD}"],
        2,
        "target.model: required",
    ),
    (
        "anthropic-no-url",
        [
            "run",
            "--set",
            "target.kind=chat",
            "--set",
            "target.protocol=anthropic",
            "--set",
            "target.model=claude",
        ],
        2,
        "target.base_url: required",
    ),
    (
        "chat-ftp",
        [
            "run",
            "--set",
            "target.kind=chat",
            "--set",
            "target.base_url=ftp://x",
            "--set",
            "target.model=m",
        ],
        2,
        "target.base_url: Value error, expected an http",
    ),
    (
        "chat-not-url",
        [
            "run",
            "--set",
            "target.kind=chat",
            "--set",
            "target.base_url=notaurl",
            "--set",
            "target.model=m",
        ],
        2,
        "target.base_url",
    ),
    (
        "simulator-no-url",
        ["run", "--set", "simulator.kind=llm", "--set", "simulator.model=m"],
        2,
        "simulator.base_url: required",
    ),
    (
        "judge-no-url",
        ["run", "--set", "judge.kind=hybrid", "--set", "judge.model=m"],
        2,
        "judge.base_url: required",
    ),
    (
        "judge-unset",
        ["run", "--set", "judge.kind=llm", "--out", "{tmp}/r"],
        2,
        "judge.model is required",
    ),
    (
        "judge-no-model",
        ["run", "--set", "judge.kind=llm", "--set", f"judge.base_url={DEAD}"],
        2,
        "judge.model: required",
    ),
    (
        "key-in-env-name",
        [
            "run",
            "--set",
            "target.kind=chat",
            "--set",
            f"target.base_url={DEAD}",
            "--set",
            "target.model=m",
            "--set",
            "target.api_key_env=sk-ant-api03-abcdefghijklmnopqrstu",
        ],
        2,
        "api_key_env",
    ),
    # the other scenario commands
    (
        "audit-list",
        ["audit", "--set", "target.limits.tools=abc"],
        2,
        "target.limits.tools: expected a list",
    ),
    ("noise-int", ["noise", "--set", "run.concurrency=abc"], 2, "run.concurrency"),
    ("validate-missing", ["validate", "/nonexistent"], 2, "/nonexistent:1: no such file"),
    ("controls-judge", ["controls", "--set", "judge.kind=bogus"], 2, "judge kind 'bogus'"),
    ("serve-target", ["serve-mcp", "--set", "target.kind=bogus"], 2, "target kind 'bogus'"),
    (
        "compare-missing",
        ["compare", "/nonexistent", "/nonexistent2"],
        4,
        "/nonexistent: not a run directory",
    ),
    ("recompute-missing", ["recompute", "/nonexistent"], 2, "/nonexistent: not a run directory"),
    (
        "gate-missing",
        ["gate", "/nonexistent", "--baseline", "/nonexistent2"],
        2,
        "/nonexistent: no results.json",
    ),
    ("ci-plan-event", ["ci-plan", "--event", "bogus"], 2, "--event: 'bogus' is not one of"),
    (
        "init-ci-out",
        ["init-ci", "--out", "/proc/agenteval.yml"],
        2,
        "--out /proc: cannot write there",
    ),
    # memory
    ("memory-suite", ["memory", "run", "--suite", "nosuch"], 2, "--suite: must be pr or full"),
    (
        "memory-suite-set",
        ["memory", "run", "--set", "memory.suite=nosuch"],
        2,
        "--set memory.suite",
    ),
    (
        "memory-gate-missing",
        ["memory", "run", "--gate", "/nonexistent.json"],
        2,
        "--gate /nonexistent.json: cannot read",
    ),
    (
        "memory-gate-not-json",
        ["memory", "run", "--gate", "/etc/hostname"],
        2,
        "--gate /etc/hostname: /etc/hostname: not a JSON file",
    ),
    (
        "memory-url",
        ["memory", "run", "--suite", "full", "--set", "memory.model.base_url=notaurl"],
        2,
        "memory.model.base_url",
    ),
    ("memory-out", ["memory", "run", "--out", UNWRITABLE], 2, f"--out {UNWRITABLE}"),
    (
        "memory-params",
        ["memory", "run", "--params", "/nonexistent.yaml"],
        2,
        "--params /nonexistent.yaml",
    ),
    # throughput: option values go in typed, never pasted into YAML
    (
        "tp-quote",
        ["bench", "throughput", "--model", "it's", "--endpoint-url", "ftp://x"],
        2,
        "--endpoint-url: throughput.endpoints.0.base_url",
    ),
    (
        "tp-ftp",
        ["bench", "throughput", "--endpoint-url", "ftp://x", "--model", "m"],
        2,
        "expected an http:// or https:// URL",
    ),
    (
        "tp-level-zero",
        ["bench", "throughput", "--concurrency", "0"],
        2,
        "--concurrency: throughput.concurrency.0",
    ),
    (
        "tp-level-text",
        ["bench", "throughput", "--concurrency", "1,abc"],
        2,
        "throughput.concurrency.1: expected an integer",
    ),
    (
        "tp-level-inject",
        ["bench", "throughput", "--concurrency", "1], repeats: 9, x: [1"],
        2,
        "throughput.concurrency.0",
    ),
    ("tp-repeats", ["bench", "throughput", "--repeats", "0"], 2, "--repeats: throughput.repeats"),
    (
        "tp-gate-first",
        ["bench", "throughput", "--gate", "/nonexistent.json"],
        2,
        "--gate /nonexistent.json: cannot read",
    ),
    (
        "tp-gate-not-json",
        ["bench", "throughput", "--gate", "/etc/hostname"],
        2,
        "--gate /etc/hostname: /etc/hostname: not a JSON file",
    ),
    (
        "tp-gate-other-kind",
        ["bench", "throughput", "--gate", "eval/baselines/code_retrieval/pr.json"],
        2,
        "a code_retrieval result, not a throughput baseline",
    ),
    (
        "cr-gate-not-json",
        ["bench", "code-retrieval", "--gate", "/etc/hostname"],
        2,
        "--gate /etc/hostname: /etc/hostname: not a JSON file",
    ),
    (
        "cr-gate-other-kind",
        ["bench", "code-retrieval", "--gate", "eval/baselines/throughput/pr.json"],
        2,
        "a throughput result, not a code_retrieval baseline",
    ),
    (
        "retrieval-gate-not-json",
        ["retrieval", "--gate", "/etc/hostname"],
        2,
        "--gate /etc/hostname: /etc/hostname: not a JSON file",
    ),
    ("tp-model-alone", ["bench", "throughput", "--model", "m"], 2, "--model needs --endpoint-url"),
    (
        "tp-two-endpoints",
        ["bench", "throughput", "--local", "--endpoint-url", DEAD, "--model", "m"],
        2,
        "--local and --endpoint-url",
    ),
    (
        "tp-attempts",
        ["bench", "throughput", "--set", "throughput.max_attempts=0"],
        2,
        "throughput.max_attempts",
    ),
    ("tp-out", ["bench", "throughput", "--out", UNWRITABLE], 2, f"--out {UNWRITABLE}"),
    (
        "tp-protocol",
        ["bench", "throughput", "--endpoint-url", DEAD, "--model", "m", "--protocol", "grpc"],
        2,
        "protocol",
    ),
    (
        "cr-gate-first",
        ["bench", "code-retrieval", "--gate", "/nonexistent.json"],
        2,
        "--gate /nonexistent.json: cannot read",
    ),
    (
        "cr-key",
        ["bench", "code-retrieval", "--set", "code_retrieval.nosuch=1"],
        2,
        "code_retrieval.nosuch: unknown key",
    ),
    ("cr-out", ["bench", "code-retrieval", "--out", UNWRITABLE], 2, f"--out {UNWRITABLE}"),
    # qa, retrieval, sessions, tasks
    ("qa-k", ["qa", "--k", "0"], 2, "--k: qa.k"),
    ("qa-k-text", ["qa", "--set", "qa.k=abc"], 2, "qa.k: expected an integer"),
    (
        "qa-tasks-file",
        ["qa", "--set", "qa.tasks=/nonexistent", "--out", "{tmp}/qa"],
        2,
        "/nonexistent:1:",
    ),
    ("qa-out", ["qa", "--out", UNWRITABLE], 2, f"--out {UNWRITABLE}"),
    (
        "qa-judge-url",
        ["qa", "--set", "qa.judge.base_url=file:///etc/passwd"],
        2,
        "qa.judge.base_url",
    ),
    (
        "retrieval-gate-first",
        ["retrieval", "--gate", "/nonexistent"],
        2,
        "--gate /nonexistent: cannot read",
    ),
    ("retrieval-out", ["retrieval", "--out", UNWRITABLE], 2, f"--out {UNWRITABLE}"),
    ("sessions-key", ["sessions", "--set", "sessions.nosuch=1"], 2, "sessions.nosuch: unknown key"),
    ("sessions-out", ["sessions", "--out", UNWRITABLE], 2, f"--out {UNWRITABLE}"),
    ("tasks-key", ["tasks", "run", "--set", "tasks.nosuch=1"], 2, "tasks.nosuch: unknown key"),
    ("tasks-repeats", ["tasks", "run", "--repeats", "0"], 2, "--repeats: tasks.repeats"),
    ("tasks-out", ["tasks", "run", "--out", UNWRITABLE], 2, f"--out {UNWRITABLE}"),
    (
        "tasks-judge-url",
        ["tasks", "run", "--set", "tasks.judge.base_url=notaurl"],
        2,
        "tasks.judge.base_url",
    ),
    ("climb-rounds", ["climb", "--set", "climb.rounds=abc"], 2, "climb.rounds"),
    (
        "run-agent-files",
        ["run", "--set", "target.agent={tmp}/noagent", "--out", "{tmp}/r"],
        2,
        "target.agent: ",
    ),
    ("align-mlflow", ["judge", "align", "--mlflow-align", "maybe"], 2, "--mlflow-align"),
    (  # MLflow's align() asked for where it cannot run: refused before any endpoint call
        "align-mlflow-protocol",
        [
            "judge",
            "align",
            "--mlflow-align",
            "on",
            "--no-track",
            "--set",
            "judge.kind=llm",
            "--set",
            "judge.model=m",
            "--set",
            "judge.base_url=http://127.0.0.1:9/v1",
            "--set",
            "judge.protocol=anthropic",
        ],
        2,
        "MLflow's judge speaks openai, not anthropic",
    ),
]


@pytest.fixture(scope="module", autouse=True)
def at_root() -> object:
    before = Path.cwd()
    os.chdir(ROOT)
    yield
    os.chdir(before)


@pytest.mark.parametrize(
    ("argv", "code", "named"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_refused_before_any_work(argv: list[str], code: int, named: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [a.replace("{tmp}", str(tmp_path)) for a in argv])
    said = result.output
    assert result.exit_code == code, said
    assert isinstance(result.exception, SystemExit), repr(result.exception)  # no traceback
    assert "Traceback" not in said
    assert named in said, said


def test_another_projects_scenarios_name_the_agent_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another project's scenario folder, run from that project's root: the builtin agent's
    files (target.agent, relative to the working directory) are not there. Refused before
    any work with the setting and the file named, not a FileNotFoundError."""
    import shutil

    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    for name in ("concise_answer.yaml", "admit_missing_benefit.yaml"):
        shutil.copy(ROOT / "eval/scenarios/personality" / name, scenarios / name)
    shutil.copy(ROOT / "eval/corpus/manifest.json", tmp_path / "manifest.json")
    monkeypatch.chdir(tmp_path)
    argv = ["run", "--no-progress", "--out", str(tmp_path / "run"),
            "--set", "suite.scenarios=scenarios", "--set", "suite.manifest=manifest.json",
            "--set", "tracking.enabled=false"]  # fmt: skip
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit) and "Traceback" not in result.output
    missing = tmp_path / "eval/agents/default/replies.yaml"
    assert f"target.agent: {missing} is missing" in result.output
    assert not (tmp_path / "run/data").exists()  # no suite built, no unit run
    fixed = [*argv, "--set", f"target.agent={ROOT / 'eval/agents/default'}"]
    assert "target.agent" not in CliRunner().invoke(app, fixed).output


def test_enough_cases() -> None:
    assert len(CASES) >= 60 and len({c[0] for c in CASES}) == len(CASES)


def test_a_quote_in_a_model_name_is_a_name() -> None:
    """--model reaches params as the value it is: a quote adds no key and breaks nothing."""
    from agenteval.benchmarks.base import params_model
    from agenteval.cli.bench_runs import _endpoint_options
    from agenteval.params import load_params

    hostile = "it's', base_url: 'http://evil.example/v1"
    options = _endpoint_options(DEAD, hostile, "openai", None, False)
    typed = params_model(("throughput",))  # its section is the benchmark's own Settings
    params = load_params(ROOT / "pipelines/throughput/params.yaml", [], options, typed)
    (endpoint,) = params["throughput"]["endpoints"]
    assert endpoint["model"] == endpoint["name"] == hostile
    assert endpoint["base_url"] == DEAD
