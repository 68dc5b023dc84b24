"""Hidden call probes: the agent's function called in a child that never judges itself.

A probe that runs its property test in the process that imports the agent's code can be
beaten from inside that process (a module that replaces `hypothesis.given`, or the probe's
comparison, on import). Here the evaluator (trusted) holds the inputs and what each must give;
the child (sandboxed like every check) only imports the function, calls it on each input and
prints what came back as JSON. The comparison happens in the evaluator, strictly by type
(5400.0 is not 5400, True is not 1), and a child that dies, hangs, prints no result or
returns something unreadable gets no credit: a FAIL with the reason, never a crash.

The child is an ordinary `python -c "from pkg.mod import f as target; ..."` in the project
folder, as the agent's own runs are; the driver and the inputs come on its stdin after the
import, so nothing at import time tells it from any other one-line use, and the expected
results never leave the evaluator: only the hidden inputs decide.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenteval.benchmarks.tasks.commands import run_command
from agenteval.benchmarks.tasks.sandbox import Sandbox
from agenteval.schema.task_records import CheckResult

MARKER = "agenteval-call-results:"
RESULT_CHARS = 200_000  # the child's whole output is read up to this
SHOWN = 3  # mismatches named in the detail

# The child's command line is an ordinary one-line import of the function, then whatever
# comes on stdin: the driver and the inputs arrive only after the import, so at import time
# the agent's code sees a normal `python -c` (argv, cwd, environment, stack) with nothing in
# `__main__` but `target`; only the hidden inputs decide.
IMPORT = "from {module} import {function} as target; import sys; exec(sys.stdin.read())"
DRIVER = """import dataclasses, json, os
cases = json.loads({cases!r})
out = []
for args, env in cases:
    for key, value in env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    try:
        got = target(*args)
    except Exception as exc:
        names = [c.__name__ for c in type(exc).__mro__]
        out.append({{"raises": names, "message": str(exc)[:300]}})
        continue
    if dataclasses.is_dataclass(got) and not isinstance(got, type):
        got = {{"fields": {{f.name: getattr(got, f.name) for f in dataclasses.fields(got)}}}}
    else:
        got = {{"value": got}}
    try:
        out.append(json.loads(json.dumps(got)))
    except (TypeError, ValueError):
        out.append({{"unreadable": type(got).__name__}})
sys.stdout.write("\\n{marker}" + json.dumps(out) + "\\n")
sys.stdout.flush()
"""


@dataclass
class Case:
    """One call: its arguments, the environment it runs under (None unsets a variable), and
    what it must give: `{"value": v}`, `{"fields": {...}}` (a dataclass), `{"raises": "Name",
    "contains": "text"}`, or `{}` (anything, e.g. only its side effects matter)."""

    args: list[Any]
    expect: dict[str, Any]
    env: dict[str, str | None] = field(default_factory=dict)


@dataclass
class CallProbe:
    module: str
    function: str
    cases: list[Case]
    absent: list[str] = field(default_factory=list)  # paths no call may create

    @property
    def target(self) -> str:
        return f"{self.module}.{self.function} on {len(self.cases)} hidden inputs"

    def command(self) -> list[str]:
        return ["python", "-c", IMPORT.format(module=self.module, function=self.function)]

    def script(self) -> str:
        """What the child reads on stdin once the function is imported."""
        cases = json.dumps([[c.args, c.env] for c in self.cases])
        return DRIVER.format(cases=cases, marker=MARKER)


def same(got: Any, want: Any) -> bool:
    """Equal and of the same JSON type all the way down (bool is not int, float not int)."""
    if type(got) is not type(want):
        return False
    if isinstance(want, dict):
        return got.keys() == want.keys() and all(same(got[k], want[k]) for k in want)
    if isinstance(want, list):
        return len(got) == len(want) and all(map(same, got, want))
    return bool(got == want)


def _shown(got: Any) -> str:
    if isinstance(got, dict) and isinstance(got.get("raises"), list) and got["raises"]:
        return f"raised {got['raises'][0]}: {str(got.get('message'))[:80]!r}"
    return f"gave {json.dumps(got)[:120]}"


def _outcome_mismatch(got: Any, want: dict[str, Any]) -> str | None:
    if not want:
        return None
    if not isinstance(got, dict):
        return f"unreadable result {str(got)[:80]!r}"
    if "raises" in want:
        names, message = got.get("raises"), got.get("message")
        if not isinstance(names, list) or want["raises"] not in names:
            return f"{_shown(got)}, expected {want['raises']}"
        contains = want.get("contains")
        if contains and (not isinstance(message, str) or contains not in message):
            return f"{_shown(got)}, whose message does not name {contains}"
        return None
    return None if same(got, want) else f"{_shown(got)}, expected {json.dumps(want)}"


def results_of(output: str) -> list[Any] | str:
    """The child's results (its last marked line), or why there are none."""
    lines = [line for line in output.splitlines() if line.startswith(MARKER)]
    if not lines:
        return "printed no results (it died, exited early or printed something else)"
    try:
        found = json.loads(lines[-1][len(MARKER) :])
    except ValueError:
        return "printed results that are not JSON"
    return found if isinstance(found, list) else "printed results that are not a list"


def mismatch(probe: CallProbe, output: str) -> str | None:
    """Why the child's output does not satisfy `probe`; None when it does."""
    found = results_of(output)
    if isinstance(found, str):
        return found
    if len(found) != len(probe.cases):
        return f"returned {len(found)} results for {len(probe.cases)} inputs"
    wrong = []
    for case, got in zip(probe.cases, found, strict=True):
        why = _outcome_mismatch(got, case.expect)
        if why is not None:
            wrong.append(f"{probe.function}{tuple(case.args)!r} env {case.env}: {why}")
    if not wrong:
        return None
    return f"{len(wrong)} of {len(probe.cases)} wrong; " + "; ".join(wrong[:SHOWN])


async def run_call_probe(
    probe: CallProbe, project: Path, env: Mapping[str, str], timeout: float, sandbox: Sandbox
) -> CheckResult:
    """`probe` run in a child in `project`, judged here."""
    result = await run_command(
        probe.command(), project, env, timeout, limit=RESULT_CHARS, sandbox=sandbox,
        stdin=probe.script().encode(),
    )  # fmt: skip
    if result.timed_out:
        why: str | None = f"timed out after {result.seconds:.0f} s"
    else:
        why = mismatch(probe, result.output)
    created = [rel for rel in probe.absent if os.path.lexists(project / rel)]
    if created:
        why = f"a call ran a command: it created {created}" + (f"; {why}" if why else "")
    return CheckResult(name="probe", target=probe.target, ok=why is None, detail=why or "")
