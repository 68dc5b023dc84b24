"""Judge-control measurements in MLflow: one run per (judge digest, controls, split, repeats).

Runs are found again by their key, so logging the same measurement twice creates nothing;
the judge's configuration digest is a tag, which lets the MLflow UI line up every
measurement of one instrument.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agenteval.fileio import digest_of
from agenteval.scratch import temporary_folder

CONTROLS_EXPERIMENT_SUFFIX = "-controls"
JUDGE_DIGEST_TAG = "agenteval.judge.config_digest"


def _metrics(report: Mapping[str, Any]) -> dict[str, float]:
    flat = _split_metrics(report, "")
    if report.get("people"):  # agreement with people, beside the written controls'
        flat |= _split_metrics(report["people"], "people.")
    return flat | _other_metrics(report)


def _split_metrics(report: Mapping[str, Any], prefix: str) -> dict[str, float]:
    flat: dict[str, float] = {}
    named = {**report["splits"], "all": report["overall"]}
    for name, s in named.items():
        split = prefix + name
        for key in ("coverage", "false_pass_rate", "false_fail_rate"):
            if s[key] is not None:
                flat[f"{split}.{key}"] = float(s[key])
        for key in ("false_passes", "false_fails", "judged", "controls"):
            flat[f"{split}.{key}"] = float(s[key])
        for key in ("agreement", "kappa", "ac1"):
            for part in ("value", "low", "high"):
                value = s[key][part]
                if value is not None:
                    flat[f"{split}.{key}" + ("" if part == "value" else f".{part}")] = value
        certain = s.get("code_certain") or {}
        for key in ("controls", "false_passes"):
            if key in certain:
                flat[f"{split}.code_certain.{key}"] = float(certain[key])
    return flat


def _other_metrics(report: Mapping[str, Any]) -> dict[str, float]:
    flat: dict[str, float] = {}
    flat.update(_loco_metrics(report.get("leave_one_class_out") or {}))
    consistency = report.get("self_consistency") or {}
    for key in ("identical_verdicts", "flip_rate", "flip_rate_low", "flip_rate_high",
                "score_sem", "icc_scores"):  # fmt: skip
        if consistency.get(key) is not None:
            flat[f"self_consistency.{key}"] = float(consistency[key])
    for probe, p in (report.get("probes") or {}).items():
        shift = p["mean_shift"]
        for part in ("value", "low", "high"):
            if shift[part] is not None:
                flat[f"probe.{probe}.mean_shift" + ("" if part == "value" else f".{part}")] = shift[
                    part
                ]
        for key in ("flip_rate", "flip_rate_low", "flip_rate_high", "flips_to_pass"):
            if p.get(key) is not None:
                flat[f"probe.{probe}.{key}"] = float(p[key])
    return flat


def _loco_metrics(loco: Mapping[str, Any]) -> dict[str, float]:
    """unseen.*: the pooled never-tuned classes; loco.<class>.*: every class, with
    loco.<class>.held_out 1 when no rule was tuned on it (its figure is then held out)."""
    flat: dict[str, float] = {}
    unseen = loco.get("unseen") or {}
    for key in ("controls", "judged", "false_passes", "false_fails", "coverage"):
        if unseen.get(key) is not None:
            flat[f"unseen.{key}"] = float(unseen[key])
    if unseen and unseen["agreement"]["value"] is not None:
        flat["unseen.agreement"] = float(unseen["agreement"]["value"])
    for name, row in (loco.get("classes") or {}).items():
        flat[f"loco.{name}.held_out"] = float(row["held_out"])
        for key in ("controls", "false_passes", "false_fails", "agreement", "coverage"):
            if row.get(key) is not None:
                flat[f"loco.{name}.{key}"] = float(row[key])
    return flat


def log_controls(
    report: Mapping[str, Any], params: Mapping[str, Any], root: Path
) -> tuple[str, bool]:
    """(run id, created) of the MLflow run holding this controls report."""
    from agenteval.tracking.store import (
        RUN_KEY_TAG,
        ensure_experiment,
        find_run,
        mlflow_client,
        tracking_target,
    )

    uri, experiment = tracking_target(params, root, CONTROLS_EXPERIMENT_SUFFIX)
    judge = report["judge"]
    repeats = (report.get("self_consistency") or {}).get("repeats", 1)
    probed = sorted(report.get("probes") or {})
    parts = [judge, report["controls_digest"], report["split"], repeats]
    key = digest_of([*parts, probed] if probed else parts)  # probes: another measurement
    if report.get("people"):  # other reviews: another measurement
        key = digest_of([key, report["people"]["digest"]])
    with mlflow_client(uri) as client:
        experiment_id = ensure_experiment(client, experiment, uri)
        found = find_run(client, experiment_id, key)
        if found is not None:
            return found, False
        tags = {
            RUN_KEY_TAG: key,
            JUDGE_DIGEST_TAG: judge.get("config_digest") or "",
            "agenteval.judge.kind": judge["kind"],
            "agenteval.judge.model": judge.get("model") or "",
            "agenteval.controls.digest": report["controls_digest"],
            "agenteval.controls.split": report["split"],
            "agenteval.controls.passed": str(report["passed"]).lower(),
        }
        name = f"controls-{judge['kind']}-{(judge.get('config_digest') or 'none')[:8]}"
        run = client.create_run(experiment_id, run_name=name, tags=tags)
        run_id = str(run.info.run_id)
        try:
            for metric, value in _metrics(report).items():
                client.log_metric(run_id, metric, value)
            with temporary_folder("agenteval-") as tmp:
                path = Path(tmp) / "controls.json"
                path.write_text(json.dumps(report, indent=2, ensure_ascii=False), "utf-8")
                client.log_artifact(run_id, str(path))
        except BaseException:
            client.set_terminated(run_id, status="FAILED")
            raise
        client.set_terminated(run_id, status="FINISHED")
    return run_id, True
