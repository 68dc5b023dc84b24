"""Memory `reference`: the project's own memory, a simple design the benchmark can measure.

SQLite (agenteval.memory.store) holds the items (facts, preferences, lessons, reminders),
the chat logs, forget tombstones and the hashes of redacted secrets. Writes go through the
rules of agenteval.memory.policy. A keyed item has one value: remembering a key again
replaces it; an unkeyed item that says nearly the same as one already kept replaces that.

What the agent is shown for a request:
- About the user: the `profile_limit` keyed facts and preferences updated most recently;
- Coming up: open reminders due within `reminder_window_days` (overdue ones for
  `reminder_grace_days`);
- Related: the `top_k` other items most similar to the request (cosine >= `min_score`).

Upkeep, at the first message of each chat: chat logs older than `consolidate_after_days`
go to the model to be distilled into memories (through the same rules, as material from
the time of the newest log), then done, cancelled and long-overdue reminders are pruned and
consolidated logs older than `chat_log_days` deleted.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from agenteval.fileio import code_of, digest_of
from agenteval.memory import policy
from agenteval.memory.base import Consolidator, Shown, TurnContext, Upkeep, Written
from agenteval.memory.store import Item, Store
from agenteval.memory.vectors import make_embedder, words
from agenteval.schema.memory_items import Candidate, StoredItem
from agenteval.schema.transcript import Participant

DEFAULTS: dict[str, Any] = {
    "vectors": "hashed",
    "dimensions": 1024,
    "top_k": 4,
    "min_score": 0.2,
    "profile_limit": 8,
    "reminder_window_days": 14,
    "reminder_grace_days": 2,
    "consolidate_after_days": 7,
    "chat_log_days": 30,
    "duplicate_similarity": 0.9,
}
STATUS = {"complete": "done", "cancel": "cancelled"}
SCORE_EPSILON = 1e-6  # float32 cosines: a score of exactly min_score counts


def _when(moment: datetime) -> str:
    return f"{moment:%a} {moment.day} {moment:%b %Y %H:%M}"


class ReferenceMemory:
    def __init__(self, params: dict[str, Any], root: Path) -> None:
        section = dict(params.get("adapter") or {})
        unknown = sorted(set(section) - set(DEFAULTS) - {"kind"})
        if unknown:
            raise ValueError(f"memory.adapter: unknown key(s) for kind reference: {unknown}")
        self.settings = {
            k: section.get(k, v) if section.get(k) is not None else v for k, v in DEFAULTS.items()
        }
        self.embedder = make_embedder(
            str(self.settings["vectors"]), int(self.settings["dimensions"])
        )
        described = {**self.settings, **self.embedder.describe()}
        self.participant = Participant(
            kind="reference",
            config_digest=digest_of({"settings": described, "code": code_of(__name__)}),
            details={"settings": described},
        )
        self.store: Store | None = None

    # -- lifecycle -----------------------------------------------------------------------
    async def open(self, store: Path) -> None:
        self.store = Store(store / "memory.sqlite")

    def _db(self) -> Store:
        if self.store is None:
            raise RuntimeError("the memory is not open")
        return self.store

    async def start_chat(self, chat: str, now: datetime) -> None:
        self._db().connect()

    async def end_chat(self) -> None:
        self._db().commit_and_close()

    async def close(self) -> None:
        if self.store is not None:
            self.store.commit_and_close()

    def _vector(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embedder.embed([text])[0]
        return vector

    def _secrets(self) -> policy.Secrets:
        return policy.Secrets(self._db().secret_hashes())

    def _tombstones(self) -> list[policy.Tombstone]:
        return [policy.Tombstone(w, at) for w, at in self._db().tombstones()]

    # -- writes --------------------------------------------------------------------------
    async def remember(
        self, candidate: Candidate, now: datetime, context: TurnContext | None
    ) -> Written:
        return self._write(candidate, now, context, context.at if context else now)

    async def update(
        self, candidate: Candidate, now: datetime, context: TurnContext | None
    ) -> Written:
        return self._write(candidate, now, context, context.at if context else now)

    def _write(
        self, candidate: Candidate, now: datetime, context: TurnContext | None, observed: datetime
    ) -> Written:
        target = self._target(candidate)
        known = target.text if target is not None and candidate.op != "remember" else ""
        why = policy.refusal(candidate, context, self._secrets(), known)
        if why is not None:
            return Written("refused", why)
        text = candidate.text or ""
        stone = policy.forgotten(text, observed, self._tombstones()) if text else None
        if stone is not None:
            return Written(
                "refused", f"forgotten on {stone.at:%Y-%m-%d} ({', '.join(sorted(stone.words))})"
            )
        if candidate.op in STATUS:
            if target is None:
                return Written("missing", "no open item matches")
            self._db().change(target.id, {"status": STATUS[candidate.op]}, now)
            return Written("updated", STATUS[candidate.op])
        fields: dict[str, Any] = {
            "text": text,
            "kind": candidate.kind,
            "about": candidate.about,
            "source": candidate.source,
            "observed": observed,
        }
        if candidate.due is not None:
            fields["due"] = candidate.due
        if target is not None:
            if observed < target.observed:
                return Written(
                    "refused", f"older than what is stored (seen {target.observed:%Y-%m-%d})"
                )
            if candidate.op == "update" and not candidate.text:
                fields = {"due": candidate.due} if candidate.due else {}
            else:
                fields["vector"] = self._vector(text)
            self._db().change(target.id, fields, now)
            return Written("updated")
        if not text:
            return Written("missing", "no open item matches and no text to remember")
        if candidate.kind == "reminder" and candidate.due is None:
            return Written("refused", "a reminder without a due time")
        fields |= {"key": candidate.key, "chat": context.chat if context else None}
        self._db().insert(fields, self._vector(text), now)
        return Written("stored")

    def _target(self, candidate: Candidate) -> Item | None:
        """The open item a write replaces: same key, else (unkeyed) a near-identical text."""
        db = self._db()
        if candidate.key:
            return db.by_key(candidate.key)
        if not candidate.text:
            return None
        kind = [i for i in db.open_items() if i.kind == candidate.kind]
        if not kind:
            return None
        vector = self._vector(candidate.text)
        scores = np.stack([i.vector for i in kind]) @ vector
        best = int(np.argmax(scores))
        threshold = float(self.settings["duplicate_similarity"])
        if candidate.op != "remember":
            threshold = float(self.settings["min_score"]) * 2
        return kind[best] if scores[best] >= threshold else None

    async def forget(self, about: str, now: datetime) -> Written:
        topic = policy.topic_words(about)
        if not topic:
            return Written("missing", f"nothing to forget in {about!r}")
        db = self._db()
        items = [i.id for i in db.items() if policy.mentions(f"{i.text} {i.about or ''}", topic)]
        logs = [log[0] for log in db.chat_logs() if policy.mentions(log[3], topic)]
        db.delete_items(items)
        db.delete_chat_logs(logs)
        db.add_tombstone(topic, now)
        return Written(
            "forgotten", f"{len(items)} item(s), {len(logs)} chat log(s)", len(items) + len(logs)
        )

    async def record_turn(self, context: TurnContext) -> None:
        secrets = self._secrets()
        parts = [f"User: {context.user}"]
        if context.tools:
            parts.append("Tools: " + ", ".join(t.name for t in context.tools))
        if context.documents:
            parts.append("Documents: " + ", ".join(d.title for d in context.documents))
        redacted = secrets.redact("\n".join(parts))
        self._db().add_secret_hashes(redacted.hashes)
        self._db().add_chat_log(context.chat, context.at, redacted.text)

    # -- reads ---------------------------------------------------------------------------
    async def recall(self, request: str, now: datetime) -> Shown:
        items = self._db().open_items()
        keyed = sorted(
            (i for i in items if i.key and i.kind in ("fact", "preference")),
            key=lambda i: (i.updated, i.id),
            reverse=True,
        )
        profile = keyed[: int(self.settings["profile_limit"])]
        window = timedelta(days=float(self.settings["reminder_window_days"]))
        grace = timedelta(days=float(self.settings["reminder_grace_days"]))
        coming = sorted(
            (
                i
                for i in items
                if i.kind == "reminder"
                and i.due is not None
                and now - grace <= i.due <= now + window
            ),
            key=lambda i: (i.due, i.id),
        )
        shown_ids = {i.id for i in profile} | {i.id for i in coming}
        rest = [i for i in items if i.id not in shown_ids]
        related: list[Item] = []
        if rest:
            scores = np.stack([i.vector for i in rest]) @ self._vector(request)
            order = sorted(range(len(rest)), key=lambda k: (-float(scores[k]), rest[k].id))
            related = [
                rest[k]
                for k in order[: int(self.settings["top_k"])]
                if scores[k] >= float(self.settings["min_score"]) - SCORE_EPSILON
            ]
        return Shown(
            {
                "About the user": [i.text for i in profile],
                "Coming up": [self._reminder_line(i, now) for i in coming],
                "Related": [self._line(i, now) for i in related],
            }
        )

    def _reminder_line(self, item: Item, now: datetime) -> str:
        assert item.due is not None
        late = " (overdue)" if item.due < now else ""
        return f"{item.text} - due {_when(item.due)}{late}"

    def _line(self, item: Item, now: datetime) -> str:
        if item.kind == "reminder" and item.due is not None:
            return self._reminder_line(item, now)
        return f"[{item.kind}] {item.text}" if item.kind == "lesson" else item.text

    async def dump(self, now: datetime) -> list[StoredItem]:
        db = self._db()
        found = [
            StoredItem(
                id=f"item-{i.id}",
                kind=i.kind,
                text=i.text,
                key=i.key,
                about=i.about,
                status=i.status,
                due=i.due,
                updated=i.updated,
            )
            for i in db.items()
        ]
        found += [
            StoredItem(id=f"chat-{log_id}", kind="chat", text=text, updated=at)
            for log_id, _, at, text, _ in db.chat_logs()
        ]
        return found

    # -- upkeep --------------------------------------------------------------------------
    async def upkeep(self, chat: str, now: datetime, model: Consolidator) -> Upkeep:
        done = await self._consolidate(chat, now, model)
        done.counts |= self._prune(now)
        return done

    async def _consolidate(self, chat: str, now: datetime, model: Consolidator) -> Upkeep:
        db = self._db()
        cutoff = now - timedelta(days=float(self.settings["consolidate_after_days"]))
        logs = db.chat_logs("consolidated = 0 AND at <= ?", [cutoff.isoformat()])
        if not logs:
            return Upkeep()
        notes = [f"{at:%Y-%m-%d}: {text}" for _, _, at, text, _ in logs]
        known = [i.text for i in db.open_items()]
        proposed = await model.consolidate(chat, notes, known, now)
        newest = max(at for _, _, at, _, _ in logs)
        evidence = "\n".join(text for _, _, _, text, _ in logs)
        done = Upkeep({"consolidated_logs": len(logs)})
        for candidate in proposed:
            done.writes.append((candidate, self._consolidated(candidate, now, newest, evidence)))
        db.mark_consolidated(log_id for log_id, *_ in logs)
        return done

    def _consolidated(
        self, candidate: Candidate, now: datetime, observed: datetime, evidence: str
    ) -> Written:
        """A consolidation proposal: its names and numbers must be in the logs it came from."""
        missing = policy.names_missing(candidate.text or "", set(words(evidence)))
        if missing:
            return Written("refused", f"not in the chat logs: {', '.join(sorted(missing))}")
        return self._write(candidate.model_copy(update={"source": "agent"}), now, None, observed)

    def _prune(self, now: datetime) -> dict[str, int]:
        db = self._db()
        grace = timedelta(days=float(self.settings["reminder_grace_days"]))
        closed = [i.id for i in db.items("status != 'open'")]
        expired = [
            i.id for i in db.open_items() if i.kind == "reminder" and i.due and i.due < now - grace
        ]
        cutoff = now - timedelta(days=float(self.settings["chat_log_days"]))
        old = [log[0] for log in db.chat_logs("consolidated = 1 AND at < ?", [cutoff.isoformat()])]
        found = {
            "pruned_closed": db.delete_items(closed),
            "pruned_expired": db.delete_items(expired),
            "pruned_chat_logs": db.delete_chat_logs(old),
        }
        return {k: v for k, v in found.items() if v}
