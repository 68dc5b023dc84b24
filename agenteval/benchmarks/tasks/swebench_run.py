"""Running a harness on SWE-bench instances: checkout, attempt, predictions, grading.

Each instance is attempted in its own isolated checkout (agenteval.benchmarks.tasks.swebench)
with the same confined tools, agent environment and time cap as the toybox tasks
(`attempt_checkout`, which the therock suite shares); its diff
becomes the prediction. Grading (Docker) is a separate step over `predictions.jsonl`, so a
run can capture predictions and be graded later: `agenteval tasks swebench RUN`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from agenteval import scratch
from agenteval.benchmarks.tasks import swebench
from agenteval.benchmarks.tasks.boundary import agent_env
from agenteval.benchmarks.tasks.harness import AttemptContext, Harness, UsageMeter
from agenteval.benchmarks.tasks.recorder import recording
from agenteval.benchmarks.tasks.sandbox import NO_SANDBOX, Sandbox
from agenteval.benchmarks.tasks.secrets import SecretGuard
from agenteval.benchmarks.tasks.tools import ToolRecord, WorkspaceTools
from agenteval.schema.tasks import Reference, Task


def instance_task(instance: Mapping[str, Any]) -> Task:
    """The instance as a task a harness can take (no checks: the official harness grades)."""
    return Task.model_construct(
        id=str(instance["instance_id"]),
        kind="coding",
        title=str(instance["instance_id"]),
        prompt=swebench.prompt_for(instance),
        setup=None,
        expect=None,
        must_establish=[],
        reference=Reference(steps=[], answer="(graded by the official harness)"),
        wrong_answers=[],
    )


async def attempt_instance(
    harness: Harness,
    instance: Mapping[str, Any],
    cache_root: Path,
    *,
    repo_url: str | None = None,
    **options: Any,
) -> tuple[ToolRecord, str, bool]:
    """(tool record, diff against the base commit, cut off at the cap)."""
    url = repo_url or f"https://github.com/{instance['repo']}.git"
    base_commit = str(instance["base_commit"])

    def make(dest: Path) -> Path:
        return swebench.checkout(cache_root, url, base_commit, dest)

    return await attempt_checkout(harness, instance_task(instance), make, **options)


async def attempt_checkout(
    harness: Harness,
    task: Task,
    make_checkout: Callable[[Path], Path],
    *,
    run_timeout_s: float = 1800,
    command_timeout_s: float = 120,
    max_steps: int = 40,
    key_names: Iterable[str] = (),
    work_root: Path | None = None,
    sandbox: Sandbox = NO_SANDBOX,
) -> tuple[ToolRecord, str, bool]:
    """`task` attempted in the checkout `make_checkout(dest)` builds (SWE-bench, TheRock):
    the same confined tools, agent environment and cap as the toybox tasks; (tool record,
    diff against the base commit, cut off at the cap)."""
    base = scratch.make_folder("agenteval-checkout-", work_root)
    try:
        dest = await asyncio.to_thread(make_checkout, base / "repo")
        record = ToolRecord()
        env = agent_env([*harness.key_env_names(), *key_names])
        capped = False
        with recording(dest, env, sandbox, command_timeout_s, work_root) as observed:
            recorder, env, shown = observed
            ctx = AttemptContext(
                workdir=dest,
                env=env,
                tools=WorkspaceTools(dest, env, command_timeout_s, record, shown, recorder),
                record=record,
                meter=UsageMeter(),
                repeat=0,
                seed=0,
                command_timeout_s=command_timeout_s,
                max_steps=max_steps,
                sandbox=shown,
                recorder=recorder,
            )
            try:
                await asyncio.wait_for(harness.attempt(task, ctx), run_timeout_s)
            except TimeoutError:
                capped = True
        patch = await asyncio.to_thread(swebench.diff_of, dest, sandbox)
        return record, patch, capped
    finally:
        scratch.discard(base)


async def capture(
    harness: Harness,
    instances: Sequence[Mapping[str, Any]],
    out: Path,
    cache_root: Path,
    guard: SecretGuard,
    **options: Any,
) -> list[dict[str, Any]]:
    """Attempt every instance; write predictions.jsonl and each tool record; the rows."""
    rows, records = [], {}
    model = harness.participant.model or harness.participant.kind
    for instance in instances:
        record, patch, capped = await attempt_instance(harness, instance, cache_root, **options)
        rows.append(swebench.prediction(str(instance["instance_id"]), model, patch))
        records[str(instance["instance_id"])] = {
            "calls": [c.model_dump(mode="json") for c in record.calls],
            "answers": [a.model_dump(mode="json") for a in record.answers],
            "empty_patch": not patch.strip(),
            "capped": capped,
        }
    guard.write_text(out / "predictions.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    guard.write_json(out / "swebench_records.json", records)
    return rows


def grade_predictions(out: Path, run_id: str) -> list[dict[str, Any]]:
    """Grade `out/predictions.jsonl` one instance at a time; an empty patch fails at once."""
    predictions = out / "predictions.jsonl"
    rows = [
        json.loads(line)
        for line in predictions.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    swebench.preflight([], out, grading=True)
    verdicts = []
    for row in rows:
        if not str(row.get("model_patch") or "").strip():
            verdicts.append(
                {"instance_id": row["instance_id"], "resolved": False, "reason": "empty patch"}
            )
            continue
        found = swebench.grade(
            predictions, run_id, row["instance_id"], row["model_name_or_path"], out
        )
        verdicts.append(asdict(found))
    (out / "swebench.json").write_text(json.dumps(verdicts, indent=2) + "\n", encoding="utf-8")
    return verdicts
