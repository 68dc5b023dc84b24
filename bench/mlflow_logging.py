"""Benchmark: MLflow logging time on a local sqlite store, with synthetic evaluations.

Run from the repository root with the venv active:  python bench/mlflow_logging.py
Options: --scenarios N (metrics, params and artifacts, and the records of a new evaluation
dataset; default 1000), --turns N (traces, each turn one trace with one tool call, three
feedback scores, two expectations and, on a scenario's first turn, its session feedback;
default 200). Everything happens in a temporary folder; nothing reaches the network. Every
write goes through MLflow's public API, as `log_evaluation` does (traces: every turn,
`tracking.traces: all`). SQL statements per traced turn are counted by a SQLAlchemy listener
on every engine of this process (in this benchmark only, never in the project).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"  # before anything imports mlflow

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agenteval.fileio import write_json  # noqa: E402
from agenteval.params import load_params  # noqa: E402
from agenteval.pipeline import Layout  # noqa: E402
from agenteval.schema.scenario import Scenario  # noqa: E402
from agenteval.schema.scorecard import ScenarioResult, Scorecard, TurnResult  # noqa: E402
from agenteval.schema.suite import Suite, SuiteItem  # noqa: E402
from agenteval.schema.transcript import Participant, ToolCall, Transcript, TranscriptTurn  # noqa: E402
from agenteval.schema.verdict import TurnVerdict, Verdict  # noqa: E402
from agenteval.scorecard import metrics_of  # noqa: E402
from agenteval.scoring import ScoringRules, dimension_means, summarize  # noqa: E402

DIMS = ("correctness", "tool_selection", "efficiency")
TURNS_PER_SCENARIO = 2
JUDGE = Participant(kind="code", config_digest="0" * 64)


def scenario_result(i: int) -> ScenarioResult:
    turns = [
        TurnResult(turn=t, scores=dict.fromkeys(DIMS, float((i + t) % 11)), score=6.0, passed=True)
        for t in range(1, TURNS_PER_SCENARIO + 1)
    ]
    status = "PASS" if i % 3 else "FAIL"
    return ScenarioResult(
        id=f"s{i:05d}", category=f"c{i % 6}", status=status, score=5 + i % 50 / 10, turns=turns
    )


def write_scorecard(layout: Layout, results: list[ScenarioResult]) -> None:
    rules = ScoringRules.from_params(load_params(None)["judge"])
    card = Scorecard(
        summary=summarize(results, rules),
        config={"target": {"kind": "builtin", "model": "bench"}, "judge": JUDGE.model_dump()},
        scenarios=results,
        dimension_means=dimension_means(results),
    )
    write_json(layout.scorecard, card)
    write_json(layout.metrics, metrics_of(card))
    (layout.reports / "summary.md").write_text("# bench\n", encoding="utf-8")


def suite_item(r: ScenarioResult) -> SuiteItem:
    scenario = Scenario.model_validate(
        {
            "id": r.id,
            "category": r.category,
            "persona": "bench",
            "setup": {"index_documents": []},
            "turns": [
                {
                    "turn": t.turn,
                    "objective": "ask",
                    "ground_truth": {"expected_answer": "42"},
                    "success_criteria": "says 42",
                }
                for t in r.turns
            ],
        }
    )
    return SuiteItem(path=f"bench/{r.id}.yaml", digest="0" * 64, scenario=scenario)


def write_conversations(layout: Layout, results: list[ScenarioResult]) -> None:
    """Suite, transcripts and verdicts matching the scorecard, for the trace benchmark."""
    items = [suite_item(r) for r in results]
    for r in results:
        transcript = Transcript(
            scenario_id=r.id,
            scenario_digest="0" * 64,
            status="COMPLETED",
            target=Participant(kind="builtin"),
            simulator=Participant(kind="scripted"),
            turns=[
                TranscriptTurn(
                    turn=t.turn,
                    user_message=f"question {t.turn} of {r.id}",
                    response="The answer is 42.",
                    tool_calls=[
                        ToolCall(
                            name="query_documents",
                            arguments={"query": "q"},
                            result={"results": ["42"]},
                            latency_ms=2.0,
                        )
                    ],
                    latency_ms=5.0,
                )
                for t in r.turns
            ],
        )
        write_json(layout.transcripts / r.id / "0.json", transcript)
        verdict = Verdict(
            scenario_id=r.id,
            scenario_digest="0" * 64,
            transcript_digest="0" * 64,
            judge=JUDGE,
            status="JUDGED",
            turns=[
                TurnVerdict(turn=t.turn, scores=t.scores, reasons={"correctness": "ok"})
                for t in r.turns
            ],
        )
        write_json(layout.verdicts / r.id / "0.json", verdict)
    suite = Suite(scenario_set_digest="0" * 64, corpus_digest="0" * 64, items=items)
    write_json(layout.suite, suite)


def timed_log(layout: Layout, uri: str, experiment: str, traces: bool) -> tuple[float, float, int]:
    """(wall, CPU of the process's threads, traces logged) of one log_evaluation."""
    from agenteval.tracking.run import log_evaluation

    start, cpu = time.perf_counter(), time.process_time()
    result = log_evaluation(
        layout, load_params(ROOT / "params.yaml"), uri=uri, experiment=experiment, traces=traces
    )
    assert result is not None and result.created
    return time.perf_counter() - start, time.process_time() - cpu, result.traces_logged


class SqlCounter:
    """Statements and rollbacks every SQLAlchemy engine of this process runs (MLflow's sqlite
    store among them): a listener on the Engine class, in this benchmark only."""

    def __init__(self) -> None:
        from sqlalchemy import event
        from sqlalchemy.engine import Engine

        self.statements = self.selects = self.rollbacks = 0
        event.listen(Engine, "before_cursor_execute", self._statement)
        event.listen(Engine, "rollback", self._rollback)

    def _statement(self, conn: object, cursor: object, statement: str, *rest: object) -> None:
        self.statements += 1
        self.selects += statement.lstrip()[:6].upper() == "SELECT"

    def _rollback(self, conn: object) -> None:
        self.rollbacks += 1

    def snapshot(self) -> tuple[int, int, int]:
        return self.statements, self.selects, self.rollbacks


def dataset_upsert(uri: str, items: list[SuiteItem]) -> float:
    """Seconds to put these scenarios into a new evaluation dataset (`merge_records`)."""
    from mlflow.genai import datasets

    from agenteval.llm.scrub import Scrubber
    from agenteval.tracking.models import scenario_record
    from agenteval.tracking.store import mlflow_client

    with mlflow_client(uri) as client:
        experiment = client.create_experiment("datasets")
        records = [scenario_record(item, Scrubber()) for item in items]
        dataset = datasets.create_dataset(name="scenarios", experiment_id=experiment)
        start = time.perf_counter()
        dataset.merge_records(records)
        return time.perf_counter() - start


def per_value_log_metric(uri: str, n: int) -> float:
    """Seconds per value when each metric is its own log_metric call (what batching avoids)."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("per-value")
    run_id = client.create_run(experiment).info.run_id
    start = time.perf_counter()
    for i in range(n):
        client.log_metric(run_id, f"scenario.s{i:05d}.0.score", float(i))
    return (time.perf_counter() - start) / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    command = f"python bench/mlflow_logging.py --scenarios {args.scenarios} --turns {args.turns}"
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="agenteval-bench-") as tmp:
        uri = f"sqlite:///{Path(tmp).as_posix()}/mlflow.db"
        layout = Layout.run_dir(ROOT, Path(tmp) / "metrics")
        write_scorecard(layout, [scenario_result(i) for i in range(args.scenarios)])
        start = time.perf_counter()
        cold, _, _ = timed_log(layout, uri, "cold", traces=False)
        rows.append((f"{args.scenarios} scenarios, new store (import + schema)", f"{cold:.2f} s"))
        write_scorecard(layout, [scenario_result(i + 1) for i in range(args.scenarios)])
        warm, _, _ = timed_log(layout, uri, "warm", traces=False)
        rows.append((f"{args.scenarios} scenarios, existing store", f"{warm:.2f} s"))
        per_value = per_value_log_metric(uri, 300)
        rows.append(("unbatched log_metric, per value", f"{per_value * 1000:.1f} ms"))
        items = [suite_item(scenario_result(i)) for i in range(args.scenarios)]
        upsert = dataset_upsert(uri, items)
        rows.append((f"{args.scenarios} scenarios into a new dataset", f"{upsert:.2f} s"))
        n_scenarios = max(1, args.turns // TURNS_PER_SCENARIO)
        results = [scenario_result(i) for i in range(n_scenarios)]
        convo = Layout.run_dir(ROOT, Path(tmp) / "traces")
        write_scorecard(convo, results)
        write_conversations(convo, results)
        sql = SqlCounter()
        before = sql.snapshot()
        with_traces, cpu_traces, sent = timed_log(convo, uri, "traces", traces=True)
        middle = sql.snapshot()
        without, cpu_without, _ = timed_log(convo, uri, "no-traces", traces=False)
        after = sql.snapshot()
        seconds, cpu = with_traces - without, cpu_traces - cpu_without
        # Statements of the traced log minus the untraced one: what the traces themselves cost.
        traced = [(m - b) - (a - m) for b, m, a in zip(before, middle, after, strict=True)]
        rows.append((f"{sent} turns as traces (+ feedback, expectations)", f"{seconds:.2f} s"))
        rows.append(("per turn, wall", f"{seconds / max(sent, 1) * 1000:.0f} ms"))
        rows.append(("per turn, CPU (every thread)", f"{cpu / max(sent, 1) * 1000:.0f} ms"))
        per = [n / max(sent, 1) for n in traced]
        rows.append(("per turn, SQL statements (SELECTs, ROLLBACKs)",
                     f"{per[0]:.1f} ({per[1]:.1f}, {per[2]:.2f})"))  # fmt: skip
        total = time.perf_counter() - start
    for name, value in rows:
        print(f"{name:52s} {value:>10s}")
    print(f"total {total:.1f} s; rerun: {command}   (python {sys.version.split()[0]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
