"""Replay: each case sent to the agent under test, in the case's own repository.

A case becomes a scenario the inference engine runs like any other: one turn per earlier
exchange (the follow-up's context, which the agent answers itself), then the request. The
cases of one repository run together with that repository as the working directory (the
chat target's document tools, an MCP agent's process and Claude Code all start there); a
case whose repository is not on this machine is written as skipped with the reason, never
run elsewhere. Transcripts are the engine's: resumable, reused while nothing changed.
"""

from __future__ import annotations

import asyncio
import copy
import os
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.engine import Inference
from agenteval.fileio import digest_of
from agenteval.schema.scenario import Scenario, Setup, Turn
from agenteval.schema.sessions import SessionCase, SessionDataset
from agenteval.schema.suite import Suite, SuiteItem
from agenteval.schema.transcript import Transcript
from agenteval.simulators.scripted import ScriptedSimulator
from agenteval.targets.base import Target, make_target

CATEGORY = "session_replay"
PERSONA = "the developer who made the request"
OBJECTIVE_CONTEXT = "Replay an earlier request of the same conversation."
OBJECTIVE_REQUEST = "Replay the recorded request."
GONE = "repository gone"


def repository(case: SessionCase) -> Path | None:
    """The case's repository on this machine (~ is this user's home), if it is there."""
    if not case.cwd:
        return None
    path = Path(os.path.expanduser(case.cwd))
    return path if path.is_absolute() and path.is_dir() else None


def as_scenario(case: SessionCase) -> Scenario:
    turns = [
        Turn(turn=n, objective=OBJECTIVE_CONTEXT, user_message=exchange.request)
        for n, exchange in enumerate(case.context, 1)
    ]
    turns.append(Turn(turn=len(turns) + 1, objective=OBJECTIVE_REQUEST, user_message=case.request))
    return Scenario(
        id=case.id,
        category=CATEGORY,
        persona=PERSONA,
        setup=Setup(index_documents=[]),
        turns=turns,
        captured_from=case.session_id,
        source="session",
    )


def suite_item(case: SessionCase) -> SuiteItem:
    scenario = as_scenario(case)
    missing = [] if repository(case) is not None else [f"{GONE}: {case.cwd or 'no cwd recorded'}"]
    return SuiteItem(
        path=case.id,
        digest=digest_of({"request": case.request, "context": case.context, "cwd": case.cwd}),
        scenario=scenario,
        missing_documents=missing,
    )


def groups(dataset: SessionDataset, fallback: Path) -> dict[Path, list[SuiteItem]]:
    """Suite items by the folder they run in; skipped cases run (as skips) in `fallback`."""
    found: dict[Path, list[SuiteItem]] = defaultdict(list)
    for case in dataset.cases:
        found[repository(case) or fallback].append(suite_item(case))
    return dict(found)


def suite_of(items: list[SuiteItem], dataset_digest: str) -> Suite:
    return Suite(
        iterations=1,
        seed=0,
        scenario_set_digest=digest_of(sorted((i.scenario.id, i.digest) for i in items)),
        corpus_digest=dataset_digest,
        items=items,
    )


def target_in(params: dict[str, Any], root: Path, folder: Path) -> Target:
    """The agent under test for one repository: an MCP agent's process starts there. The
    response cache is off: it would keep the agent's replies (the user's code) outside the
    private folder; a rerun reuses the stored transcripts instead."""
    scoped = copy.deepcopy(params)
    scoped.setdefault("run", {})["cache"] = False
    if scoped["target"].get("kind") == "mcp" and scoped["target"].get("command"):
        scoped["target"]["cwd"] = str(folder)
    return make_target(scoped, root)


@dataclass
class Replayed:
    transcripts: list[Transcript]
    stop_reason: str | None


def replay(
    params: dict[str, Any],
    root: Path,
    dataset: SessionDataset,
    transcripts: Path,
    on_done: Callable[[Transcript], None] | None = None,
) -> Replayed:
    """Every case through the agent (or as a skip); each transcript written once."""
    run = params.get("run") or {}
    found: list[Transcript] = []
    stop: str | None = None
    simulator = ScriptedSimulator()
    dataset_digest = digest_of(dataset)
    for folder, items in sorted(groups(dataset, root).items()):
        engine = Inference(
            suite_of(items, dataset_digest),
            target_in(params, root, folder),
            simulator,
            transcripts,
            folder,
            concurrency=int(run.get("concurrency", 4)),
            timeout_s=float(run.get("timeout_s", 900)),
            retry_statuses=frozenset(run.get("retry_statuses") or ()),
            on_done=on_done,
        )
        engine.stop_reason = stop
        found += asyncio.run(engine.run())
        stop = stop or engine.stop_reason
    return Replayed(found, stop)
