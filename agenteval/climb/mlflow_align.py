"""MLflow's own `judge.align()` beside `agenteval judge align`, on the same controls.

The dev controls (the written ones and the reviewers') are logged as MLflow traces (the
turn's question as the root span's inputs, the reply as its outputs, the ground truth as
expectations) each with the control's label as HUMAN feedback named after the judge, which
is what MLflow's optimizers learn from. The MLflow judge (`judge.kind: mlflow`: make_judge
on the same endpoint) is aligned by MLflow's SIMBA optimizer (DSPy), and then it and its
unaligned self are measured on the same dev and held controls as agenteval's aligned judge:
the report puts the figures side by side. MLflow's judge is held to nothing: its held
figures are reported, never used to keep anything, and it may well buy dev agreement with a
held false pass (the column says).

MLflow's optimizer reaches the model through litellm and remakes the judge without its
base_url, so both read the OpenAI variables: OPENAI_API_BASE / OPENAI_BASE_URL and
OPENAI_API_KEY are pointed at the judge endpoint for the call only and restored after
(the key is never written). litellm's price list and MLflow's model catalog stay local
(both fetch from GitHub otherwise) and DSPy's cache is off, so nothing goes to a host the
user did not name and no reply is kept outside the run.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

from agenteval.climb.align import Controls, Measured, measure
from agenteval.scratch import temporary_folder

OPTIMIZER = "SIMBA"
MIN_TRACES = 10  # MLflow's DSPy optimizers refuse fewer labelled traces
JUDGE_NAME = "agenteval_correctness"
# Else litellm fetches its price list, MLflow its model catalog, from GitHub.
LOCAL_ONLY = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "MLFLOW_MODEL_CATALOG_URI": ""}
ENDPOINT_VARIABLES = ("OPENAI_API_BASE", "OPENAI_BASE_URL", "OPENAI_API_KEY")


def unavailable(params: dict[str, Any], dev_controls: int) -> str | None:
    """Why MLflow's align() cannot run on these controls here, or None when it can."""
    from mlflow.genai.judges import Judge, make_judge

    if not hasattr(Judge, "align"):
        return f"MLflow {version('mlflow')} has no judge.align()"
    if "base_url" not in inspect.signature(make_judge).parameters:
        return f"MLflow {version('mlflow')}'s make_judge takes no base_url"
    if importlib.util.find_spec("dspy") is None:
        return "MLflow's SIMBA optimizer needs dspy (pip install 'agenteval[align]')"
    protocol = params["judge"].get("protocol")
    if protocol not in (None, "openai"):
        return f"judge.protocol: MLflow's judge speaks openai, not {protocol}"
    if dev_controls < MIN_TRACES:
        return f"MLflow's optimizer needs {MIN_TRACES} labelled traces; dev has {dev_controls}"
    return None


@contextmanager
def endpoint_env(base_url: str, key: str | None) -> Iterator[None]:
    """The OpenAI variables MLflow's optimizer and litellm read, for one call only."""
    names = (*ENDPOINT_VARIABLES, *LOCAL_ONLY)
    saved = {name: os.environ.get(name) for name in names}
    os.environ.update(LOCAL_ONLY)
    os.environ["OPENAI_API_BASE"] = os.environ["OPENAI_BASE_URL"] = base_url
    os.environ["OPENAI_API_KEY"] = key or "none"  # a keyless local server: any value
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def log_dev_traces(params: dict[str, Any], root: Path, controls: Controls) -> list[Any]:
    """Each dev control as an MLflow trace with its label as HUMAN feedback; the traces."""
    import mlflow
    from mlflow.entities import AssessmentSource, SpanType

    from agenteval.controls.people import pair_of
    from agenteval.judges.mlflow_judge import turn_cases
    from agenteval.tracking.store import ensure_experiment, mlflow_client, tracking_target

    uri, name = tracking_target(params, root, "-align-traces")
    # (control id, who labelled it, the judged pair, the label): written controls, then people
    labelled = [
        (c.control.id, f"controls:{c.path}", pair, c.control.label.verdict)
        for c, pair in zip(controls.by_split["dev"], controls.pairs["dev"], strict=True)
    ]
    labelled += [(p.control.id, ",".join(sorted({r.reviewer for r in p.control.reviews})),
                  pair_of(p.control), p.control.label.verdict)
                 for p in controls.people.get("dev", [])]  # fmt: skip
    ids = []
    with mlflow_client(uri, synchronous_traces=True) as client:
        experiment = ensure_experiment(client, name, uri)
        for control_id, who, pair, verdict in labelled:
            case = turn_cases(*pair)[-1]  # a control's judged turn is its last
            span = client.start_trace("control", SpanType.AGENT, inputs=case.inputs,
                                      tags={"agenteval.control": control_id},
                                      experiment_id=experiment)  # fmt: skip
            client.end_trace(span.trace_id, outputs=case.outputs)
            for key, value in case.expectations.items():
                mlflow.log_expectation(trace_id=span.trace_id, name=key, value=value)
            human = AssessmentSource(source_type="HUMAN", source_id=who)
            mlflow.log_feedback(trace_id=span.trace_id, name=JUDGE_NAME, source=human,
                                value=verdict == "pass")  # fmt: skip
            ids.append(span.trace_id)
        return [client.get_trace(i) for i in ids]


def _figures(measured: dict[str, Measured]) -> dict[str, Any]:
    return {
        split: {"agreement": m.agreement, "false_passes": m.false_passes, "n": len(m.agree)}
        for split, m in measured.items()
    }


def _aligned_instructions(judge: Any, traces: list[Any], params: dict[str, Any],
                          steps: int, candidates: int) -> str:  # fmt: skip
    config = judge.config
    endpoint = config.endpoint
    with endpoint_env(endpoint.effective_base_url, endpoint.read_api_key()):
        import dspy
        from mlflow.genai.judges.optimizers import SIMBAAlignmentOptimizer

        with temporary_folder("agenteval-dspy-") as cache:
            dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False,
                                 disk_cache_dir=cache)  # fmt: skip
            optimizer = SIMBAAlignmentOptimizer(
                model=f"openai:/{endpoint.model}",
                seed=int(params["climb"].get("seed") or 0) or None,
                simba_kwargs={"max_steps": steps, "num_candidates": candidates,
                              "num_threads": int(params["run"].get("concurrency", 4))},
            )  # fmt: skip
            aligned = judge.mlflow_judge.align(traces, optimizer=optimizer)
    return str(aligned.instructions)


def side_by_side(
    params: dict[str, Any],
    root: Path,
    controls: Controls,
    ours: dict[str, Any],
    steps: int,
    candidates: int,
    echo: Callable[[str], None] = print,
) -> dict[str, Any]:
    """MLflow's SIMBA-aligned judge and agenteval's aligned judge on the same controls."""
    why = unavailable(params, controls.count("dev"))
    if why is not None:
        return {"ran": False, "why": why}
    from mlflow.exceptions import MlflowException

    from agenteval.judges.mlflow_judge import MlflowJudge

    as_mlflow = {**params, "judge": {**params["judge"], "kind": "mlflow"}}
    before = MlflowJudge(as_mlflow, root)
    traces = log_dev_traces(params, root, controls)
    echo(f"MLflow align(): {len(traces)} dev traces with HUMAN feedback; {OPTIMIZER} running")
    try:
        instructions = _aligned_instructions(before, traces, params, steps, candidates)
    except (MlflowException, ImportError) as exc:  # endpoint, optimizer: unmeasured, not 0
        return {"ran": False, "why": f"MLflow's align() failed: {exc}"}
    after = MlflowJudge(as_mlflow, root, instructions=instructions)
    splits = ("dev", "held")
    return {
        "ran": True,
        "why": f"MLflow {version('mlflow')} judge.align() with {OPTIMIZER} on the dev controls",
        "optimizer": {"name": OPTIMIZER, "max_steps": steps, "num_candidates": candidates},
        "dev_traces": len(traces),
        "mlflow_before": _figures(
            {s: measure(as_mlflow, root, controls, s, before) for s in splits}
        ),
        "mlflow_aligned": _figures(
            {s: measure(as_mlflow, root, controls, s, after) for s in splits}
        ),
        "agenteval_aligned": {
            "dev": {
                "agreement": ours["dev"],
                "false_passes": ours["dev_false_passes"],
                "n": controls.count("dev"),
            },
            "held": {
                "agreement": ours["held"],
                "false_passes": ours["held_false_passes"],
                "n": controls.count("held"),
            },
        },
        "instructions": instructions,
    }
