"""Hidden call probes (tasks.calls): the child only reports, the evaluator judges."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from agenteval.benchmarks.tasks import hidden
from agenteval.benchmarks.tasks.calls import MARKER, CallProbe, Case, mismatch, run_call_probe
from agenteval.benchmarks.tasks.sandbox import NO_SANDBOX

PROBE = CallProbe(
    "pkg.mod",
    "f",
    [Case(["1h"], {"value": 3600}), Case(["x"], {"raises": "ValueError", "contains": "x"})],
)
GOOD = '[{"value": 3600}, {"raises": ["ValueError", "Exception"], "message": "bad x"}]'


def test_only_the_right_values_of_the_right_type_pass() -> None:
    assert mismatch(PROBE, f"noise\n{MARKER}{GOOD}\n") is None
    for output, why in (
        ("", "printed no results"),
        (f"{MARKER}[{{", "not JSON"),
        (f"{MARKER}" + '{"value": 3600}', "not a list"),
        (f"{MARKER}" + '[{"value": 3600}]', "returned 1 results for 2 inputs"),
        (f"{MARKER}" + GOOD.replace("3600", "3600.0"), "1 of 2 wrong"),  # a float is not an int
        (f"{MARKER}" + GOOD.replace("bad x", "bad"), "does not name x"),
        (f"{MARKER}" + GOOD.replace('"ValueError", ', ""), "expected ValueError"),
    ):
        found = mismatch(PROBE, output)
        assert found is not None and why in found, (output, found)
    # The last marked line counts: a forged early line changes nothing.
    assert mismatch(PROBE, f"{MARKER}{GOOD}\n{MARKER}[]") is not None


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("import os\nos._exit(0)\n", "printed no results"),
        ("def f(text):\n    return {'h': 3600}\n", "2 of 2 wrong"),
        ("def f(text):\n    return object()\n", "2 of 2 wrong"),
        ("import time\ntime.sleep(30)\n", "timed out"),
    ],
)
def test_a_child_that_dies_hangs_or_returns_junk_fails_with_a_reason(
    tmp_path: Path, body: str, why: str
) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/__init__.py").write_text("")
    (tmp_path / "pkg/mod.py").write_text(body)
    env = {"PATH": os.environ["PATH"], "PYTHONDONTWRITEBYTECODE": "1"}
    result = asyncio.run(run_call_probe(PROBE, tmp_path, env, 1.5, NO_SANDBOX))
    assert not result.ok and why in result.detail, result.detail


def test_hidden_inputs_follow_the_seed_and_are_not_the_prompts() -> None:
    first, again, other = (hidden.generate(["durations"], s).calls[0] for s in (1, 1, 2))
    assert [c.args for c in first.cases] == [c.args for c in again.cases]
    assert [c.args for c in first.cases] != [c.args for c in other.cases]
    texts = {c.args[0] for c in first.cases}
    assert len(texts) > 100 and not texts & {"1h30m", "2m5s"}
    shell = hidden.generate(["linecount"], 3)
    names = [c.args[0] for c in shell.calls[0].cases]
    assert any("`" in n for n in names) and any('" & ' in n for n in names)
    assert set(shell.files) <= set(names)  # every odd name is a real file to count
