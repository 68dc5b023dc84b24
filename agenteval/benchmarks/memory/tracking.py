"""One MLflow run per memory benchmark run, through MLflow's public APIs only.

Each scenario is an MLflow session (trace metadata `mlflow.trace.session` = the scenario
id), each of its chats a trace (a span per turn with what the user said, the agent's reply
and what memory kept or refused; a span for the chat's upkeep), and each probe's metrics
are feedback (`mlflow.log_feedback`) on the trace of the last chat before it: name = the
metric, value = the probe's share of checks passed, rationale = the failed checks and why,
metadata = the probe id and its simulated time. The run also carries the headline metrics,
results.json and report.md. Logging the same results again finds the run already logged.
Scenario texts are synthetic, so they are logged as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.benchmarks.memory.records import ChatLog, MemoryResults, MemoryScenario, ProbeResult
from agenteval.benchmarks.memory.run import Paths, load_results, metrics_of
from agenteval.benchmarks.memory.scenarios import load_scenarios
from agenteval.benchmarks.tracking import benchmark_run, tracking_enabled
from agenteval.fileio import digest_of, sha256_file, write_json

DEFAULT_EXPERIMENT = "agenteval-memory"
SESSION_KEY = "mlflow.trace.session"


@dataclass(frozen=True)
class Tracked:
    run_id: str
    created: bool
    traces: int
    feedback: int
    tracking_uri: str


def _params(results: MemoryResults) -> dict[str, str]:
    return {
        "suite": results.suite,
        "memory.kind": results.memory.kind,
        "memory.config_digest": str(results.memory.config_digest),
        "model.kind": results.model.kind,
        "model.model": str(results.model.model),
        "scenarios": ",".join(sorted(results.scenarios_digest)),
        "scenarios_digest": digest_of(results.scenarios_digest),
    }


def _trace_chat(scenario: MemoryScenario, log: ChatLog) -> str:
    """One chat as a trace of its scenario's session; the trace id."""
    import mlflow
    from mlflow.entities import SpanType

    chat = next(c for c in scenario.chats if c.id == log.id)
    with mlflow.start_span(name=f"chat {chat.id}", span_type=SpanType.AGENT) as root:
        root.set_inputs(
            {
                "scenario": scenario.id,
                "chat": chat.id,
                "at": chat.at.isoformat(),
                "first_message": chat.turns[0].user,
            }
        )
        with mlflow.start_span(name="upkeep", span_type=SpanType.MEMORY) as span:
            span.set_outputs(
                {
                    "changes": log.upkeep,
                    "writes": [w.model_dump(mode="json") for w in log.writes if w.turn is None],
                }
            )
        for index, turn in enumerate(chat.turns):
            with mlflow.start_span(name=f"turn {index}", span_type=SpanType.CHAIN) as span:
                span.set_inputs(
                    {
                        "user": turn.user,
                        "minutes": turn.minutes,
                        "tools": [t.name for t in turn.tools],
                    }
                )
                written = [w.model_dump(mode="json") for w in log.writes if w.turn == index]
                span.set_outputs({"answer": turn.answer, "memory_writes": written})
        root.set_outputs({"writes": len(log.writes), "model_errors": log.model_errors})
        mlflow.update_current_trace(
            metadata={SESSION_KEY: scenario.id},
            tags={"agenteval.scenario": scenario.id, "agenteval.chat": chat.id},
        )
        return str(root.trace_id)


def _feedback(trace_id: str, probe: ProbeResult) -> int:
    import mlflow
    from mlflow.entities import AssessmentSource

    source = AssessmentSource(source_type="CODE", source_id="agenteval.benchmarks.memory.checks")
    logged = 0
    for metric, value in probe.metrics.items():
        if value is None:
            continue
        failed = [
            f"{c.expect}: {c.why}" for c in probe.checks if c.metric == metric and c.ok is False
        ]
        mlflow.log_feedback(
            trace_id=trace_id,
            name=metric,
            value=value,
            source=source,
            rationale="; ".join(failed) or "all checks passed",
            metadata={"probe": probe.id, "at": probe.at.isoformat(), "request": probe.request},
        )
        logged += 1
    return logged


def _log_scenarios(results: MemoryResults, scenarios: dict[str, MemoryScenario]) -> tuple[int, int]:
    traces = feedback = 0
    for result in sorted(results.scenarios, key=lambda s: s.id):
        scenario = scenarios[result.id]
        chat_traces = [(log.at, _trace_chat(scenario, log)) for log in result.chats]
        traces += len(chat_traces)
        for probe in sorted(result.probes, key=lambda p: (p.at, p.id)):
            before = [trace for at, trace in chat_traces if at <= probe.at]
            feedback += _feedback(before[-1] if before else chat_traces[0][1], probe)
    return traces, feedback


def log_memory(
    scenarios_folder: str, params: Mapping[str, Any], root: Path, paths: Paths
) -> Tracked | None:
    """Log the run in `paths` as one MLflow run; None when tracking is off. `params`: as
    loaded, for the shared tracking section (agenteval.benchmarks.tracking)."""
    if not tracking_enabled(params):
        return None
    results = load_results(paths.results)
    loaded = load_scenarios(root / scenarios_folder, root, list(results.scenarios_digest))
    edited = [i.scenario.id for i in loaded if results.scenarios_digest[i.scenario.id] != i.digest]
    if edited:
        raise ValueError(
            f"{paths.results}: scenarios edited since this run: {', '.join(edited)}; "
            "run the benchmark again before logging it"
        )
    scenarios = {item.scenario.id: item.scenario for item in loaded}
    key = digest_of({"kind": "memory", "results": sha256_file(paths.results)})
    name = f"memory-{results.suite}-{results.memory.kind}-{key[:8]}"
    traces = feedback = 0
    with benchmark_run(params, root, key, name=name, experiment=DEFAULT_EXPERIMENT) as run:
        if run.created:
            import mlflow

            mlflow.log_params(_params(results))
            mlflow.log_metrics({k: float(v) for k, v in metrics_of(results).items()})
            mlflow.log_artifact(str(paths.results))
            mlflow.log_artifact(str(paths.report))
            traces, feedback = _log_scenarios(results, scenarios)
    tracked = Tracked(run.run_id, run.created, traces, feedback, run.tracking_uri)
    write_json(
        paths.out / "mlflow_run.json",
        {
            "run_id": tracked.run_id,
            "created": tracked.created,
            "traces": traces,
            "feedback": feedback,
            "uri": tracked.tracking_uri,
        },
    )
    return tracked
