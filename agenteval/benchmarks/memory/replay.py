"""One scenario through one memory, on the simulated clock.

Chats and probes run in time order (a probe at the same moment as a chat runs after it).
Each chat is a fresh agent on the shared store: connect, upkeep (consolidate, prune), then
for every turn: what memory shows for the user's message, the turn recorded, the explicit
memory calls the agent made, then the model's extraction, each proposal written through the
memory. Only the agent loop is stood in for (replies and tool calls come from the
scenario), because what is measured is memory.

A probe observes without changing anything: a fresh connection, what is shown for its
request, what the store holds, and in `full` the model's answer from what was shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from agenteval.benchmarks.memory.checks import probe_checks, shares, standing
from agenteval.benchmarks.memory.model import MemoryModel
from agenteval.benchmarks.memory.records import (
    Chat,
    ChatLog,
    MemoryScenario,
    Probe,
    ProbeResult,
    WriteRecord,
)
from agenteval.memory.base import Memory, TurnContext, Written
from agenteval.schema.memory_items import Candidate, StoredItem

BACKEND_FAILED = "unmeasured: model backend failed"


@dataclass
class Replayed:
    chats: list[ChatLog]
    probes: list[ProbeResult]
    store: list[StoredItem]


def _record(
    written: Written, via: str, turn: int | None, candidate: Candidate | None, op: str | None = None
) -> WriteRecord:
    return WriteRecord(
        turn=turn,
        via=via,
        op=op or (candidate.op if candidate else "?"),
        kind=candidate.kind if candidate else None,
        key=candidate.key if candidate else None,
        text=candidate.text if candidate else None,
        outcome=written.outcome,
        reason=written.reason,
    )


async def _write(
    memory: Memory, candidate: Candidate, now: datetime, context: TurnContext | None
) -> Written:
    if candidate.op == "remember":
        return await memory.remember(candidate, now, context)
    return await memory.update(candidate, now, context)


async def run_chat(memory: Memory, model: MemoryModel, chat: Chat) -> ChatLog:
    log = ChatLog(id=chat.id, at=chat.at, turns=len(chat.turns))
    errors_before = len(model.errors)
    await memory.start_chat(chat.id, chat.at)
    try:
        upkeep = await memory.upkeep(chat.id, chat.at, model)
        log.upkeep = dict(upkeep.counts)
        log.writes += [
            _record(written, "consolidate", None, candidate) for candidate, written in upkeep.writes
        ]
        for index, turn in enumerate(chat.turns):
            now = chat.at + timedelta(minutes=turn.minutes)
            context = TurnContext(
                chat.id, now, turn.user, tuple(turn.tools), tuple(turn.documents), turn.answer
            )
            shown = await memory.recall(turn.user, now)
            await memory.record_turn(context)
            for call in turn.calls:
                if call.op == "forget":
                    written = await memory.forget(str(call.about), now)
                    log.writes.append(
                        _record(written, "call", index, None, "forget").model_copy(
                            update={"text": call.about}
                        )
                    )
                    continue
                candidate = call.candidate()
                log.writes.append(
                    _record(await _write(memory, candidate, now, context), "call", index, candidate)
                )
            for candidate in await model.extract(chat, index, shown, now):
                log.writes.append(
                    _record(
                        await _write(memory, candidate, now, context), "extract", index, candidate
                    )
                )
    finally:
        await memory.end_chat()
    log.model_errors = model.errors[errors_before:]
    return log


async def run_probe(memory: Memory, model: MemoryModel, scenario: str, probe: Probe) -> ProbeResult:
    await memory.start_chat(f"probe-{probe.id}", probe.at)
    try:
        shown = await memory.recall(probe.request, probe.at)
        store = await memory.dump(probe.at)
    finally:
        await memory.end_chat()
    answer = await model.answer(probe, shown) if probe.answer is not None else None
    checks = probe_checks(scenario, probe, shown, store, answer)
    if model.backend_errors:  # measured on a store the model never got to build
        why = f"{BACKEND_FAILED} ({model.backend_errors[0]})"
        checks = [c.model_copy(update={"ok": None, "why": why}) for c in checks]
    return ProbeResult(
        id=probe.id,
        at=probe.at,
        request=probe.request,
        why=probe.why,
        metrics=shares(checks),
        checks=checks,
        shown=shown.text(),
        answer=answer,
    )


async def replay(
    scenario: MemoryScenario, memory: Memory, model: MemoryModel, store: Path
) -> Replayed:
    events: list[tuple[datetime, int, Chat | Probe]] = [(c.at, 0, c) for c in scenario.chats]
    events += [(p.at, 1, p) for p in scenario.probes]
    events.sort(key=lambda e: (e[0], e[1]))
    chats: list[ChatLog] = []
    probes: list[ProbeResult] = []
    await memory.open(store)
    try:
        for _, _, event in events:
            if isinstance(event, Chat):
                chats.append(await run_chat(memory, model, event))
            else:
                probes.append(await run_probe(memory, model, scenario.id, event))
        last = events[-1][0]
        await memory.start_chat("final", last)
        try:
            final = await memory.dump(last)
        finally:
            await memory.end_chat()
    finally:
        await memory.close()
    probes.sort(key=lambda p: standing(p.checks))
    return Replayed(chats, probes, final)
