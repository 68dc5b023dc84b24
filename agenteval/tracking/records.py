"""What one turn's trace says, as plain data: its root span, its tool spans, its tags,
metadata and assessments. `tracking.conversations` builds these from the files on disk and
`tracking.traces` hands them to MLflow's public tracing API; nothing here imports MLflow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mlflow.entities import Assessment

# Trace metadata keys MLflow documents for GenAI apps: the session a trace belongs to, the
# user who spoke, the run that produced it (what `search_traces(run_id=...)` and a run's
# Traces tab select on).
SESSION_KEY = "mlflow.trace.session"
USER_KEY = "mlflow.trace.user"
SOURCE_RUN_KEY = "mlflow.sourceRun"
# Trace metadata MLflow's comparison of two evaluation runs matches sessions on (its
# conversation simulator writes them): with both set, the sessions of two runs pair even
# though each run's session ids are its own.
SIMULATION_GOAL_KEY = "mlflow.simulation.goal"
SIMULATION_PERSONA_KEY = "mlflow.simulation.persona"
SESSION_RUN_CHARS = 12  # characters of the run id in a session id
TOKEN_USAGE_KEY = "mlflow.chat.tokenUsage"  # span attribute MLflow totals per trace
PREVIEW_CHARS = 1000  # what the trace list shows of a request or a response
METADATA_CHARS = 250  # MLflow keeps a trace metadata value up to this length


def comparison_key(scenario_id: str, iteration: int, turn: int) -> str:
    """`false_premise · turn 2`: a turn's request preview, the same in every run of the suite
    and unique within one. MLflow's comparison of two evaluation runs pairs their traces on
    the request preview (its `getTraceInfoInputs`); a preview shared by two traces of one run
    is keyed by trace id there and pairs with nothing, and the simulated user's words differ
    between runs. So the preview names the turn; what the user said is the trace's input."""
    again = f" · iteration {iteration}" if iteration else ""
    return f"{scenario_id} · turn {turn}{again}"


def scenario_label(scenario_id: str, iteration: int) -> str:
    """`false_premise`, `false_premise · iteration 2`: a conversation, named alike in every
    run of the suite (the session goal the comparison pairs on)."""
    return f"{scenario_id} · iteration {iteration}" if iteration else scenario_id


def session_id(run_id: str, scenario_id: str, iteration: int) -> str:
    """`false_premise.0.7189ff3c0721`: the scenario, its iteration and the MLflow run, so
    every run's conversation is its own session. Only characters that are safe in the path
    of the MLflow UI's session page (a `/` there is "Page Not Found")."""
    return f"{scenario_id}.{iteration}.{run_id[:SESSION_RUN_CHARS]}"


@dataclass(frozen=True)
class SpanSpec:
    """What one span says. Times are offsets from the turn's start (the trace is logged
    after the fact: MLflow stamps its start, the offsets keep every duration true)."""

    name: str
    span_type: str
    start_ns: int
    end_ns: int
    inputs: Any = None
    outputs: Any = None
    ok: bool = True
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TurnTrace:
    """One turn as one trace: the root span (the agent's turn) and its tool calls, the trace's
    tags and metadata, and the assessments attached to it (feedback, expectations)."""

    root: SpanSpec
    tools: Sequence[SpanSpec]
    tags: Mapping[str, str]
    metadata: Mapping[str, str]
    request_preview: str | None
    response_preview: str | None
    assessments: Sequence[Assessment] = ()


def cut(text: str | None, limit: int = PREVIEW_CHARS) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 3] + "..."
