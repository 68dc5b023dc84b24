"""The agent under test as an MLflow LoggedModel, the scenario set as an evaluation dataset.

MLflow compares models, not tags: each agent configuration (kind, model, configuration
digest) is one LoggedModel of type `agent` in the experiment ("Agent versions" in the UI),
found again by its digest, so every run of the same agent adds its evaluation metrics to the
same model and the model comparison lines agents up. The scenario set is an evaluation
dataset (the "Datasets" tab: one record per scenario, its turns and ground truth) found
again by its digest; each run names it as its input, and the model-linked metrics carry its
name and digest, so numbers measured on different scenario sets are never compared as one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agenteval.llm.scrub import Scrubber
from agenteval.params import flatten
from agenteval.schema.suite import SuiteItem
from agenteval.tracking.provenance import SHORT, agent_version_name, file_tags

if TYPE_CHECKING:
    from mlflow import MlflowClient

MODEL_TYPE = "agent"
AGENT_DIGEST_TAG = "agent.config_digest"  # the full digest: how a model is found again
DATASET_DIGEST_TAG = "suite.digest"


@dataclass(frozen=True)
class EvaluationLinks:
    """What a run's metrics and traces are linked to (None where nothing is)."""

    model_id: str | None = None
    dataset_name: str | None = None
    dataset_digest: str | None = None


def agent_version(
    client: MlflowClient,
    experiment_id: str,
    run_id: str,
    agent: Mapping[str, Any],
    target_params: Mapping[str, Any],
    scrub: Scrubber,
) -> str | None:
    """The LoggedModel of this agent configuration (created by the first run that evaluates
    it), named as this run's input; None when the agent has no configuration digest."""
    from mlflow.entities import LoggedModelInput

    model_id = agent_model(client, experiment_id, run_id, agent, target_params, scrub)
    if model_id is not None:
        client.log_inputs(run_id, models=[LoggedModelInput(model_id)])
    return model_id


def agent_model(
    client: MlflowClient,
    experiment_id: str,
    run_id: str,
    agent: Mapping[str, Any],
    target_params: Mapping[str, Any],
    scrub: Scrubber,
) -> str | None:
    """The LoggedModel of this agent configuration, found or created (by `run_id`); None
    when the agent has no configuration digest."""
    from mlflow.entities import LoggedModelStatus

    digest = agent.get("config_digest")
    if not digest:
        return None
    found = client.search_logged_models(
        experiment_ids=[experiment_id],
        filter_string=f"tags.`{AGENT_DIGEST_TAG}` = '{digest}'",
        max_results=1,
    )
    if found:
        model_id = str(found[0].model_id)
    else:
        model = client.create_logged_model(
            experiment_id,
            name=agent_version_name(agent),
            source_run_id=run_id,
            tags=_model_tags(agent),
            params=_model_params(agent, target_params, scrub),
            model_type=MODEL_TYPE,
        )
        model_id = str(model.model_id)
        client.finalize_logged_model(model_id, LoggedModelStatus.READY)
    return model_id


def _model_tags(agent: Mapping[str, Any]) -> dict[str, str]:
    tags = {
        AGENT_DIGEST_TAG: agent.get("config_digest"),
        "agent.kind": agent.get("kind"),
        "agent.model": agent.get("model"),
        "agent.protocol": agent.get("protocol"),
        "agent.code.digest": str(agent.get("code_digest") or "")[:SHORT] or None,
    }
    files = (agent.get("details") or {}).get("files") or {}
    tags |= file_tags({f"eval/agents/_/{name}": digest for name, digest in files.items()})
    return {key: str(value) for key, value in tags.items() if value is not None}


def _model_params(
    agent: Mapping[str, Any], target_params: Mapping[str, Any], scrub: Scrubber
) -> dict[str, str]:
    """The `target` section as configured, the knobs the agent reported, the code digest."""
    from agenteval.tracking.provenance import mlflow_key
    from agenteval.tracking.store import MAX_PARAM_CHARS

    values: dict[str, Any] = dict(flatten(dict(target_params)))
    knobs = (agent.get("details") or {}).get("knobs") or {}
    values |= {f"knobs.{k}": v for k, v in flatten(dict(knobs)).items()}
    values["config_digest"] = agent.get("config_digest")
    values["code_digest"] = agent.get("code_digest")
    params = {}
    for key, value in values.items():
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        params[mlflow_key(key)] = scrub.scrub_text(text)[:MAX_PARAM_CHARS]
    return params


def dataset_name(scenario_count: int, digest: str) -> str:
    return f"scenarios-{scenario_count}-{digest[:8]}"


def scenario_dataset(
    client: MlflowClient,
    experiment_id: str,
    run_id: str,
    items: Sequence[SuiteItem],
    digest: str | None,
    scrub: Scrubber,
) -> tuple[str, str] | None:
    """(name, digest) of the evaluation dataset holding these scenarios, created (with
    `mlflow.genai.datasets`) the first time this scenario set is evaluated in the experiment,
    and named as the run's input. The fluent tracking URI must be the client's."""
    from mlflow.entities import Dataset, DatasetInput, InputTag
    from mlflow.genai import datasets

    if not digest or not items:
        return None
    name, short = dataset_name(len(items), digest), digest[:SHORT]
    found = datasets.search_datasets(
        experiment_ids=[experiment_id], filter_string=f"name = '{name}'", max_results=1
    )
    if not found:
        dataset = datasets.create_dataset(
            name=name, experiment_id=experiment_id, tags={DATASET_DIGEST_TAG: digest}
        )
        dataset.merge_records([scenario_record(item, scrub) for item in items])
    source = json.dumps({"scenario_set_digest": digest, "scenarios": len(items)})
    entity = Dataset(name=name, digest=short, source_type="code", source=source)
    context = InputTag(key="mlflow.data.context", value="evaluation")
    client.log_inputs(run_id, datasets=[DatasetInput(entity, tags=[context])])
    return name, short


def scenario_record(item: SuiteItem, scrub: Scrubber) -> dict[str, Any]:
    """One scenario as a multi-turn test case: who the user is, what they want, each turn's
    scripted message, and the ground truth of each turn as expectations."""
    scenario = item.scenario
    turns = []
    truths: dict[str, Any] = {}
    for turn in scenario.turns:
        turns.append({"turn": turn.turn, "objective": turn.objective,
                      "user_message": turn.user_message})  # fmt: skip
        truth = turn.ground_truth
        truths[f"turn_{turn.turn}"] = {
            "success_criteria": turn.success_criteria,
            "expected_answer": truth.expected_answer if truth else None,
            "expected_tools": turn.expected_tools or None,
        }
    record = {
        "inputs": {
            "scenario_id": scenario.id,
            "category": scenario.category,
            "persona": scenario.persona,
            "turns": turns,
        },
        "expectations": truths,
        "source": {"source_type": "HUMAN", "source_data": {"path": item.path,
                                                           "digest": item.digest}},
    }  # fmt: skip
    return dict(scrub.scrub(record))
