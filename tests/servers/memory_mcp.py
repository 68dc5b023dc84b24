"""A memory server written for the tests: a plain MCP knowledge store, like the memory
servers agents are commonly given. It keeps whatever it is told, one JSON file per store,
and has its own tool and argument names (the adapter's `tools` / `arguments` mapping):

- create_memory(content, category, slot, subject, due, now): a slot holds one value;
- modify_memory(slot, content, status, due, now): replace, or close a reminder;
- delete_memories(subject, now): every memory whose text or subject shares a word with it;
- search_memories(query, now): reminders due within 14 days, then the five memories
  sharing the most words with the query;
- list_memories(): everything;
- clear(): empty the store (the reset a shared HTTP server needs between scenarios).

It has no write rules, no chat logs and no upkeep: the benchmark finds what that costs.

    python -m tests.servers.memory_mcp --store DIR                  # stdio
    python -m tests.servers.memory_mcp --store DIR --http PORT      # streamable HTTP
"""

from __future__ import annotations

import argparse
import json
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

WORD = re.compile(r"[a-z0-9]+")
SMALL = frozenset("a an the and or of to in on at for with is are my me i you it this that".split())
WINDOW = timedelta(days=14)


def _words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if w not in SMALL}


class Store:
    def __init__(self, folder: Path) -> None:
        self.path = folder / "memories.json"
        folder.mkdir(parents=True, exist_ok=True)

    def load(self) -> list[dict[str, Any]]:
        return json.loads(self.path.read_text()) if self.path.exists() else []

    def save(self, items: list[dict[str, Any]]) -> None:
        self.path.write_text(json.dumps(items, indent=1))


def build(store: Store) -> MCPServer:
    mcp: MCPServer = MCPServer(name="test-memory", log_level="WARNING")

    @mcp.tool()
    def create_memory(
        content: str,
        category: str = "fact",
        slot: str | None = None,
        subject: str | None = None,
        due: str | None = None,
        now: str | None = None,
    ) -> dict[str, Any]:
        items = store.load()
        for item in items:
            if slot and item.get("slot") == slot and item["status"] == "open":
                item.update(content=content, due=due, updated=now)
                store.save(items)
                return {"status": "updated"}
        items.append(
            {
                "id": len(items) + 1,
                "content": content,
                "category": category,
                "slot": slot,
                "subject": subject,
                "due": due,
                "status": "open",
                "updated": now,
            }
        )
        store.save(items)
        return {"status": "stored"}

    @mcp.tool()
    def modify_memory(
        slot: str | None = None,
        content: str | None = None,
        status: str | None = None,
        due: str | None = None,
        now: str | None = None,
    ) -> dict[str, Any]:
        items = store.load()
        for item in reversed(items):
            if item["status"] == "open" and (
                (slot and item.get("slot") == slot) or (content and item["content"] == content)
            ):
                for name, value in (("content", content), ("status", status), ("due", due)):
                    if value is not None:
                        item[name] = value
                item["updated"] = now
                store.save(items)
                return {"status": "updated"}
        if content and not status:
            return create_memory(content, slot=slot, due=due, now=now)
        return {"status": "missing", "reason": f"no open memory in slot {slot!r}"}

    @mcp.tool()
    def delete_memories(subject: str, now: str | None = None) -> dict[str, Any]:
        topic = _words(subject) - {"everything", "about", "forget"}
        items = store.load()
        kept = [
            i for i in items if not (_words(f"{i['content']} {i.get('subject') or ''}") & topic)
        ]
        store.save(kept)
        return {"status": "forgotten", "reason": f"{len(items) - len(kept)} deleted"}

    @mcp.tool()
    def search_memories(query: str, now: str | None = None) -> dict[str, Any]:
        items = [i for i in store.load() if i["status"] == "open"]
        moment = datetime.fromisoformat(now) if now else datetime.now()
        lines = [
            f"{i['content']} (due {i['due']})"
            for i in items
            if i.get("due") and moment <= datetime.fromisoformat(i["due"]) <= moment + WINDOW
        ]
        wanted = _words(query)
        scored = sorted(
            ((len(wanted & _words(i["content"])), -i["id"], i) for i in items),
            key=lambda s: (s[0], s[1]),
            reverse=True,
        )
        lines += [i["content"] for score, _, i in scored[:5] if score > 0]
        return {"lines": lines}

    @mcp.tool()
    def list_memories() -> dict[str, Any]:
        return {
            "items": [
                {
                    "id": i["id"],
                    "kind": i["category"],
                    "text": i["content"],
                    "key": i.get("slot"),
                    "about": i.get("subject"),
                    "status": i["status"],
                    "due": i.get("due"),
                }
                for i in store.load()
            ]
        }

    @mcp.tool()
    def clear() -> dict[str, Any]:
        store.save([])
        return {"status": "cleared"}

    return mcp


# How the adapter names this server's tools and arguments (memory.adapter in params).
TOOLS = {
    "remember": "create_memory",
    "update": "modify_memory",
    "forget": "delete_memories",
    "recall": "search_memories",
    "dump": "list_memories",
}
ARGUMENTS = {
    "text": "content",
    "kind": "category",
    "key": "slot",
    "about": "subject",
    "request": "query",
    "source": None,
    "chat": None,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", required=True, type=Path)
    parser.add_argument("--http", type=int, default=None)
    args = parser.parse_args()
    server = build(Store(args.store))
    if args.http is None:
        server.run("stdio")
        return
    import uvicorn

    app = server.streamable_http_app(host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=args.http, log_level="warning")


if __name__ == "__main__":
    main()
