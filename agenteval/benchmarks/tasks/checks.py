"""The `expect` block run against the finished project, after the agent has exited.

* `tests_pass`: the project's own suite (`python -m pytest`), after removing the paths the
  task names in `clean`, so a cache the agent warmed does not help;
* `probe`: a command whose exit status and output must match;
* `unchanged`: files byte-identical to the snapshot (a deleted file is changed);
* `labels`: the labels each named issue carries at the end, exactly, read from the offline
  gh's call log (offline_gh), which the agent could not reach; no other issue gained one;
* `kills_mutants`: on a copy of the finished project with one file broken (a text
  replacement, or the snapshot's version put back), the selected tests must fail. Tests that
  still pass on a broken project test nothing, and a "regression test" that passes on the
  unfixed file is not one.

Every check runs in the graded tree (workspace.Workspace.grade: the snapshot plus the agent's
regular text changes, the task's own tests put back), never in the agent's copy. pytest's
outcome is read from its own JUnit report (junit). Also: `tests_tampered` (a protected test
file changed), `agent_tests` (the agent's new test files, run on their own), the `hidden`
probes made now from the seed, and `equivalent` (the agent's tests on an equivalent,
differently written implementation).

Nothing here is shown to the agent; the checks read the task definition only now. Every
check command runs in the run's sandbox: the agent's code (a planted conftest.py, a patched
module) runs in them too, and must reach no more than the agent did.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from agenteval.benchmarks.tasks import bytecode, hidden, junit, stream
from agenteval.benchmarks.tasks.boundary import OutsideWorkspace, confine
from agenteval.benchmarks.tasks.calls import run_call_probe
from agenteval.benchmarks.tasks.commands import DRAIN_S, PYTEST_MAIN, CommandResult, run_command
from agenteval.benchmarks.tasks.offline_gh import GhRecord, label_checks
from agenteval.benchmarks.tasks.protected import runnable
from agenteval.benchmarks.tasks.sandbox import NO_SANDBOX, Sandbox
from agenteval.benchmarks.tasks.terminal import run_on_terminal
from agenteval.benchmarks.tasks.workspace import Grading, Workspace, _copy_ignore
from agenteval.schema.task_records import CheckName, CheckResult
from agenteval.schema.tasks import Expect, Mutant, Probe, TestsPass
from agenteval.scratch import discard, make_folder, temporary_folder

PYTEST_OPTIONS = ["-q", "-p", "no:cacheprovider"]
PYTEST = ["python", *PYTEST_MAIN, *PYTEST_OPTIONS]
# pytest's exit statuses: 1 tests failed, 2 interrupted (a collection error counts: the
# broken file broke the tests). 0 passed, 4 usage error and 5 nothing collected are not kills.
KILLED_STATUSES = frozenset({1, 2})
DETAIL_CHARS = 600
VARIANT_PREFIX = "agenteval-variant-"  # every mutant's and the equivalent's copy alike
# The interpreter of every check loads nothing from outside the project: no user site, no
# bytecode written or trusted from a cache (the graded tree has none).
# git's replace refs are never read either (a commit hidden behind one is still a commit).
CHECK_ENV = {"PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1", "GIT_NO_REPLACE_OBJECTS": "1"}
# What a coding task's commands need besides the shell: the checks, and every reference or
# honest agent, run the project's tests with it. Missing, it fails every test run, and the
# agent would be blamed for it (a "misreported" passing suite).
TOOLCHAIN = {"pytest": [*PYTEST, "--version"]}


def _tail(result: CommandResult) -> str:
    text = result.describe()
    return text if len(text) <= DETAIL_CHARS else "..." + text[-DETAIL_CHARS:]


def normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def probe_mismatch(probe: Probe, result: CommandResult) -> str | None:
    """Why `result` does not satisfy `probe`, or None when it does."""
    if result.timed_out:
        return "timed out"
    if probe.exit_code is not None and result.exit_code != probe.exit_code:
        return f"exit code {result.exit_code}, expected {probe.exit_code}"
    out = result.output
    if probe.stdout is not None and normalise(out) != normalise(probe.stdout):
        return f"output {normalise(out)[:300]!r}, expected {normalise(probe.stdout)[:300]!r}"
    missing = [s for s in probe.contains if s not in out]
    if missing:
        return f"output lacks {missing}"
    if probe.matches is not None and not re.search(probe.matches, out, re.MULTILINE):
        return f"output does not match {probe.matches!r}"
    return None


@dataclass(frozen=True)
class PytestRun:
    result: CommandResult
    why: str | None  # why it did not pass; None when it did
    tampered: str | None = None  # where its stream, report and exit status disagree

    def checks(self, name: CheckName, target: str, quiet: bool = False) -> list[CheckResult]:
        """The check this run makes (`quiet`: no output when it passed), and a
        `tests_tampered` finding where its outcome was rewritten."""
        ok = self.why is None and self.tampered is None
        if ok:
            text = "" if quiet else _tail(self.result)
        else:
            text = f"{self.why or 'tampered'}\n{_tail(self.result)}"
        found = [CheckResult(name=name, target=target, ok=ok, detail=text)]
        if self.tampered is not None:
            why = f"pytest's streamed outcomes, report and exit status disagree: {self.tampered}"
            found.append(CheckResult(name="tests_tampered", target=target, ok=False, detail=why))
        return found


async def run_pytest(
    args: list[str], project: Path, env: Mapping[str, str], timeout: float, sandbox: Sandbox
) -> PytestRun:
    """pytest in `project`, its outcomes streamed to a pipe read here as it runs (stream),
    and its own report (JUnit XML, written outside the project): it passes only where the
    stream, the report and the exit status all say so. The exit status alone never passes."""
    read_end, write_end = os.pipe()
    collecting = asyncio.ensure_future(stream.collect(read_end))
    with temporary_folder("agenteval-report-") as tmp:
        report = Path(tmp) / "junit.xml"
        argv = ["python", *stream.launcher(write_end), *PYTEST_OPTIONS, f"--junitxml={report}"]
        try:
            result = await run_command(
                [*argv, *args], project, env, timeout, sandbox=sandbox, writable=[Path(tmp)],
                pass_fds=[write_end],
            )  # fmt: skip
        finally:
            os.close(write_end)
        counts = junit.counts(report)
        why = junit.failure(report, result.exit_code, result.timed_out)
    try:
        streamed = stream.parse(await asyncio.wait_for(collecting, DRAIN_S))
    except TimeoutError:  # a writer escaped the kill: the stream never ended
        streamed = stream.Streamed(0, 0, 0, None, unreadable=1)
    if why is None and (streamed.failed or not streamed.passed or streamed.finished != 0):
        why = f"the run reported {streamed.passed} passed, {streamed.failed} failed"
    tampered = None if result.timed_out else stream.disagreement(streamed, counts, result.exit_code)
    return PytestRun(result, why, tampered)


async def _tests_pass(
    spec: TestsPass,
    ws: Workspace,
    ignore: list[str],
    env: Mapping[str, str],
    timeout: float,
    sandbox: Sandbox,
) -> list[CheckResult]:
    project = ws.graded
    if spec.clean:  # in the sandbox: a link leads nowhere outside
        await run_command(["rm", "-rf", "--", *spec.clean], project, env, timeout, sandbox=sandbox)
    args = [*spec.args, *[f"--ignore={rel}" for rel in ignore]]
    run = await run_pytest(args, project, env, timeout, sandbox)
    return run.checks("tests_pass", " ".join(spec.args) or "suite")


async def _agent_tests(
    tests: list[str], ws: Workspace, env: Mapping[str, str], timeout: float, sandbox: Sandbox
) -> list[CheckResult]:
    run = await run_pytest(tests, ws.graded, env, timeout, sandbox)
    return run.checks("agent_tests", " ".join(tests))


async def _probe(
    probe: Probe, ws: Workspace, env: Mapping[str, str], timeout: float, sandbox: Sandbox
) -> CheckResult:
    env = {**env, **probe.env}
    result = await run_command(probe.command, ws.graded, env, timeout, sandbox=sandbox)
    why = probe_mismatch(probe, result)
    if why is None:  # and as a person runs it: a program may tell a pipe from a terminal
        shown = await run_on_terminal(probe.command, ws.graded, env, timeout, sandbox)
        seen = probe_mismatch(probe, shown)
        why = f"with its output on a terminal: {seen}" if seen is not None else None
    return CheckResult(name="probe", target=probe.command, ok=why is None, detail=why or "")


def _unchanged(rel: str, ws: Workspace, grading: Grading) -> CheckResult:
    """`rel` as the agent delivered it (before any test file is put back) against the
    snapshot."""
    before = ws.snapshot_bytes(rel)
    now = grading.delivered.get(rel)
    if before is None:
        return CheckResult(name="unchanged", target=rel, ok=False, detail="not in the snapshot")
    ok = now == before
    detail = "" if ok else ("deleted" if now is None else "changed")
    return CheckResult(name="unchanged", target=rel, ok=ok, detail=detail)


def _mutate(project: Path, mutant: Mutant, ws: Workspace) -> str | None:
    """Break one file of `project`; a reason when the mutant cannot be applied. (This runs
    here, outside the sandbox: a file the agent turned into a link out is not followed.)"""
    try:
        path = confine(project, mutant.path)
    except OutsideWorkspace:
        return "a link out of the project"
    if mutant.snapshot:
        original = ws.snapshot_bytes(mutant.path)
        if original is None:
            return "not in the snapshot"
        path.write_bytes(original)
        return None
    if not path.is_file():
        return "file missing"
    text = path.read_text(encoding="utf-8")
    assert mutant.replace is not None and mutant.with_ is not None
    if mutant.replace not in text:
        return "the text it replaces is gone"
    path.write_text(text.replace(mutant.replace, mutant.with_, 1), encoding="utf-8")
    return None


@dataclass(frozen=True)
class Variant:
    """The finished project with one file replaced: a mutant (the tests must fail on it) or
    the equivalent implementation (they must pass)."""

    check: CheckName  # kills_mutants or equivalent
    label: str
    rel: str
    mutant: Mutant | None = None
    source: str | None = None  # the equivalent's text


def _mutant_label(mutant: Mutant) -> str:
    if mutant.snapshot:
        return f"{mutant.path} as in the snapshot"
    return f"{mutant.path}: {mutant.replace!r} -> {mutant.with_!r}"


def _apply(variant: Variant, project: Path, ws: Workspace) -> str | None:
    if variant.mutant is not None:
        return _mutate(project, variant.mutant, ws)
    assert variant.source is not None
    (project / variant.rel).write_text(variant.source, encoding="utf-8")
    return None


def _make_variant(
    base: Path, variant: Variant, folder: Path, ws: Workspace
) -> tuple[Path, str | None]:
    """A copy of `base` (the graded tree as it was before any check ran there) in `folder`
    with `variant` applied. Every variant's copy has the same shape of name
    (VARIANT_PREFIX/project), so nothing but the replaced file tells a mutant's run from the
    equivalent's."""
    project = folder / "project"
    shutil.copytree(base, project, symlinks=True, ignore=_copy_ignore)
    return project, _apply(variant, project, ws)


async def _run_variant(
    variant: Variant,
    made: tuple[Path, str | None],
    tests: list[str],
    env: Mapping[str, str],
    timeout: float,
    sandbox: Sandbox,
) -> list[CheckResult]:
    """The selected tests on one variant's copy, run exactly alike for every variant (the
    same launcher, arguments and report as the equivalent's), so a test cannot tell a
    mutant's run from the equivalent's by its argv or folder: a mutant must be killed
    (pytest exits 1 or 2, or hangs), the equivalent must pass."""
    project, why = made
    if why is not None:
        return [CheckResult(name=variant.check, target=variant.label, ok=False, detail=why)]
    run = await run_pytest(["-x", *tests], project, env, timeout, sandbox)
    if variant.check == "equivalent":
        return run.checks("equivalent", variant.label, quiet=True)
    killed = run.result.timed_out or run.result.exit_code in KILLED_STATUSES
    detail = "killed" if killed else "the tests still pass (or select nothing) on the mutant"
    return [CheckResult(name="kills_mutants", target=variant.label, ok=killed, detail=detail)]


async def missing_toolchain(
    env: Mapping[str, str], timeout_s: float, sandbox: Sandbox = NO_SANDBOX
) -> str | None:
    """Why the tasks' toolchain cannot run here (the tool named, and how to add it), or
    None: each tool is run once, as the checks run it, in the run's sandbox."""
    with temporary_folder("agenteval-toolchain-") as tmp:
        for tool, argv in TOOLCHAIN.items():
            result = await run_command(argv, Path(tmp), env, timeout_s, sandbox=sandbox)
            if result.timed_out or result.exit_code != 0:
                python = shutil.which("python", path=env.get("PATH")) or "python"
                return (
                    f"the tasks toolchain is missing {tool}: `{' '.join(argv)}` failed with "
                    f"{_tail(result)!r} (python on PATH: {python}); install it there "
                    f"(pip install {tool}) and rerun"
                )
    return None


def _variants(expect: Expect, held: hidden.Hidden, ws: Workspace, seed: int) -> list[Variant]:
    mutants = expect.kills_mutants.mutants if expect.kills_mutants is not None else []
    found = [Variant("kills_mutants", _mutant_label(m), m.path, mutant=m) for m in mutants]
    found += [
        Variant("equivalent", rel, rel, source=text) for rel, text in held.equivalents.items()
    ]
    for rel, rewrites in held.near.items():
        original = ws.snapshot_bytes(rel)
        if original is not None:
            text = hidden.near_equivalent(original.decode("utf-8"), rewrites, seed)
            found.append(Variant("equivalent", f"{rel} (near the original)", rel, source=text))
    return found


async def _on_variants(
    variants: list[Variant],
    base: Path,
    tests: list[str],
    ws: Workspace,
    env: Mapping[str, str],
    timeout: float,
    sandbox: Sandbox,
) -> list[CheckResult]:
    """Every variant on its own copy of `base`, side by side, one per core but one (the
    graded tree's own checks run beside them); a copy is made when its run's turn comes (a
    tree near the size cap is never copied once per variant at once) and removed on every
    exit path."""
    slots = asyncio.Semaphore(max(1, (os.cpu_count() or 1) - 1))

    async def one(variant: Variant) -> list[CheckResult]:
        async with slots:
            folder = make_folder(VARIANT_PREFIX)
            try:
                made = await asyncio.to_thread(_make_variant, base, variant, folder, ws)
                return await _run_variant(variant, made, tests, env, timeout, sandbox)
            finally:
                await asyncio.to_thread(discard, folder)

    done = await asyncio.gather(*(one(v) for v in variants))
    return [result for results in done for result in results]


@contextlib.contextmanager
def _variant_base(ws: Workspace, variants: list[Variant]) -> Iterator[Path]:
    """The graded tree copied before any check runs in it (a probe may change it): what
    every variant is made from."""
    folder = make_folder(VARIANT_PREFIX)
    try:
        base = folder / "base"
        if variants:
            shutil.copytree(ws.graded, base, symlinks=True, ignore=_copy_ignore)
        yield base
    finally:
        discard(folder)


async def _check_env(env: Mapping[str, str], sandbox: Sandbox) -> tuple[dict[str, str], Sandbox]:
    """The checks' environment and sandbox: no user site, no bytecode written, and in the
    sandbox the toolchain's bytecode from the evaluator's folder (compiled once a run)."""
    env = {**env, **CHECK_ENV}
    if sandbox.kind != "none":
        prefix = await asyncio.to_thread(bytecode.toolchain_prefix, env)
        if prefix is not None:
            env[bytecode.PREFIX] = str(prefix)
            sandbox = replace(sandbox, exposed=(*sandbox.exposed, prefix))
    return env, sandbox


async def run_checks(
    expect: Expect,
    ws: Workspace,
    env: Mapping[str, str],
    timeout_s: float,
    sandbox: Sandbox = NO_SANDBOX,
    grading: Grading | None = None,
    seed: int = 0,
    github: GhRecord | None = None,
    first_failure: bool = False,
) -> list[CheckResult]:
    """Every check of `expect` on the graded tree (`ws.grade` built it), reported in a fixed
    order. The variants (mutants, the equivalent) run on copies made before anything runs
    in the graded tree, beside its own checks; those run one at a time (a probe may change
    the project, e.g. empty a cache), `tests_pass` last. A protected test file the agent
    changed is `tests_tampered`, which fails the task. `first_failure`: one check at a time,
    stopping at the first that fails (only for a tree that has to fail)."""
    env, sandbox = await _check_env(env, sandbox)
    if grading is None:
        editable = expect.tests_pass.editable if expect.tests_pass is not None else None
        grading = await asyncio.to_thread(ws.grade, editable)
    results: list[CheckResult] = []
    if grading.tampered:
        detail = "changed the task's own tests or test configuration: " + ", ".join(
            grading.tampered
        )
        results.append(CheckResult(name="tests_tampered", target="tests", ok=False, detail=detail))
    results += [_unchanged(rel, ws, grading) for rel in expect.unchanged]
    held = hidden.generate(list(expect.hidden), seed)  # made now: no one saw them
    for rel, text in held.files.items():
        (ws.graded / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws.graded / rel).write_text(text, encoding="utf-8")
    tests = list(expect.kills_mutants.tests) if expect.kills_mutants is not None else []
    variants = _variants(expect, held, ws, seed)
    with _variant_base(ws, variants) as base:
        if first_failure:
            for variant in variants:
                if not all(r.ok for r in results):
                    return results
                results += await _on_variants([variant], base, tests, ws, env, timeout_s, sandbox)
            if not all(r.ok for r in results):
                return results
            return results + await _on_graded(
                expect, held, ws, grading, env, timeout_s, sandbox, github
            )
        on_copies, on_graded = await asyncio.gather(
            _on_variants(variants, base, tests, ws, env, timeout_s, sandbox),
            _on_graded(expect, held, ws, grading, env, timeout_s, sandbox, github, stop=False),
        )
    return [*results, *on_copies, *on_graded]


async def _on_graded(
    expect: Expect,
    held: hidden.Hidden,
    ws: Workspace,
    grading: Grading,
    env: Mapping[str, str],
    timeout_s: float,
    sandbox: Sandbox,
    github: GhRecord | None,
    stop: bool = True,
) -> list[CheckResult]:
    """The checks in the graded tree itself, one at a time: the probes, the hidden calls,
    the labels, then the task's suite and the agent's own tests (`stop`: at the first
    failure)."""
    results: list[CheckResult] = []

    def settled() -> bool:
        return stop and not all(r.ok for r in results)

    for probe in [*expect.probe, *held.probes]:
        if not settled():
            results.append(await _probe(probe, ws, env, timeout_s, sandbox))
    for call in held.calls if not settled() else ():
        results.append(await run_call_probe(call, ws.graded, env, timeout_s, sandbox))
    if expect.labels:  # what the agent did through gh, from the log it could not reach
        results += label_checks(expect.labels, github)
    own = runnable(grading.agent_tests)
    if expect.tests_pass is not None and not settled():
        suite = expect.tests_pass
        results += await _tests_pass(suite, ws, own, env, timeout_s, sandbox)
        if own:
            results += await _agent_tests(own, ws, env, timeout_s, sandbox)
    return results
