"""The reference memory's SQLite store: items, chat logs, tombstones and secret hashes.

One file per person. Each chat opens its own connection (a fresh agent) and commits when
it ends, so nothing a chat learnt lives anywhere but in the file. Times are the simulated
clock's, stored as ISO text; vectors are float32 blobs.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
  id INTEGER PRIMARY KEY, kind TEXT NOT NULL, key TEXT, text TEXT NOT NULL,
  about TEXT, source TEXT, status TEXT NOT NULL DEFAULT 'open', due TEXT,
  created TEXT NOT NULL, updated TEXT NOT NULL, observed TEXT NOT NULL, chat TEXT,
  vector BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS items_key ON items(key);
CREATE TABLE IF NOT EXISTS chats (
  id INTEGER PRIMARY KEY, chat TEXT NOT NULL, at TEXT NOT NULL, text TEXT NOT NULL,
  consolidated INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS tombstones (
  id INTEGER PRIMARY KEY, words TEXT NOT NULL, at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS secrets (hash TEXT PRIMARY KEY);
"""


@dataclass
class Item:
    id: int
    kind: str
    key: str | None
    text: str
    about: str | None
    source: str | None
    status: str
    due: datetime | None
    updated: datetime
    observed: datetime
    vector: np.ndarray


def _time(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _item(r: tuple[Any, ...]) -> Item:
    updated, observed = datetime.fromisoformat(r[8]), datetime.fromisoformat(r[9])
    vector = np.frombuffer(r[10], dtype=np.float32)
    return Item(r[0], r[1], r[2], r[3], r[4], r[5], r[6], _time(r[7]), updated, observed, vector)


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


class Store:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.db: sqlite3.Connection | None = None

    def connect(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path)
        self.db.executescript(SCHEMA)

    def commit_and_close(self) -> None:
        if self.db is not None:
            self.db.commit()
            self.db.close()
            self.db = None

    def _q(self, sql: str, args: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        if self.db is None:
            raise RuntimeError("the memory store is not open: start_chat first")
        return self.db.execute(sql, tuple(args)).fetchall()

    # -- items ---------------------------------------------------------------------------
    def items(self, where: str = "1", args: Iterable[Any] = ()) -> list[Item]:
        rows = self._q(
            "SELECT id, kind, key, text, about, source, status, due, updated, observed, vector "
            f"FROM items WHERE {where} ORDER BY id",
            args,
        )
        return [_item(r) for r in rows]

    def open_items(self) -> list[Item]:
        return self.items("status = 'open'")

    def by_key(self, key: str) -> Item | None:
        found = self.items("key = ? AND status = 'open'", [key])
        return found[-1] if found else None

    def insert(self, fields: dict[str, Any], vector: np.ndarray, now: datetime) -> int:
        row = {
            **fields,
            "created": _iso(now),
            "updated": _iso(now),
            "observed": _iso(fields.get("observed") or now),
            "due": _iso(fields.get("due")),
            "vector": vector.astype(np.float32).tobytes(),
        }
        names = ", ".join(row)
        self._q(f"INSERT INTO items ({names}) VALUES ({', '.join('?' * len(row))})", row.values())
        return int(self._q("SELECT last_insert_rowid()")[0][0])

    def change(self, item_id: int, fields: dict[str, Any], now: datetime) -> None:
        row = dict(fields, updated=_iso(now))
        if "due" in row:
            row["due"] = _iso(row["due"])
        if "observed" in row:
            row["observed"] = _iso(row["observed"])
        if "vector" in row:
            row["vector"] = row["vector"].astype(np.float32).tobytes()
        sets = ", ".join(f"{k} = ?" for k in row)
        self._q(f"UPDATE items SET {sets} WHERE id = ?", [*row.values(), item_id])

    def delete_items(self, ids: Iterable[int]) -> int:
        ids = list(ids)
        for item_id in ids:
            self._q("DELETE FROM items WHERE id = ?", [item_id])
        return len(ids)

    # -- chat logs -----------------------------------------------------------------------
    def add_chat_log(self, chat: str, at: datetime, text: str) -> None:
        self._q("INSERT INTO chats (chat, at, text) VALUES (?, ?, ?)", [chat, _iso(at), text])

    def chat_logs(
        self, where: str = "1", args: Iterable[Any] = ()
    ) -> list[tuple[int, str, datetime, str, bool]]:
        rows = self._q(
            f"SELECT id, chat, at, text, consolidated FROM chats WHERE {where} ORDER BY id", args
        )
        return [(r[0], r[1], datetime.fromisoformat(r[2]), r[3], bool(r[4])) for r in rows]

    def mark_consolidated(self, ids: Iterable[int]) -> None:
        for log_id in ids:
            self._q("UPDATE chats SET consolidated = 1 WHERE id = ?", [log_id])

    def delete_chat_logs(self, ids: Iterable[int]) -> int:
        ids = list(ids)
        for log_id in ids:
            self._q("DELETE FROM chats WHERE id = ?", [log_id])
        return len(ids)

    # -- tombstones and secrets ----------------------------------------------------------
    def add_tombstone(self, words: Iterable[str], at: datetime) -> None:
        self._q(
            "INSERT INTO tombstones (words, at) VALUES (?, ?)", [" ".join(sorted(words)), _iso(at)]
        )

    def tombstones(self) -> list[tuple[frozenset[str], datetime]]:
        rows = self._q("SELECT words, at FROM tombstones ORDER BY id")
        return [(frozenset(r[0].split()), datetime.fromisoformat(r[1])) for r in rows]

    def secret_hashes(self) -> set[str]:
        return {r[0] for r in self._q("SELECT hash FROM secrets")}

    def add_secret_hashes(self, hashes: Iterable[str]) -> None:
        for value in hashes:
            self._q("INSERT OR IGNORE INTO secrets (hash) VALUES (?)", [value])
