"""Target `builtin`: an offline, deterministic extractive agent — an honest baseline.

It only ever acts through the shared document tools, so its transcript looks like any other
agent's: it lists and indexes documents, queries them with BM25, answers with the sentence(s)
that best support the question, and abstains when support is below a threshold.
"""

from __future__ import annotations

import math
import random
import re
from pathlib import Path
from typing import Any

import yaml

from agenteval.corpus.retrieval import Index, split_sentences, tokenize
from agenteval.fileio import code_of, digest_of
from agenteval.schema.scenario import IndexDocument, Scenario
from agenteval.schema.status import Status
from agenteval.schema.transcript import Participant, ToolCall
from agenteval.targets.base import (
    AGENT_FILES_BY_KIND,
    DEFAULT_KNOBS,
    AgentReply,
    SessionContext,
    SetupFailed,
    agent_files_digest,
    check_agent_files,
)
from agenteval.targets.fence import DEFAULT_LIBRARY, corpus_fence
from agenteval.targets.tools import DocumentTools

AGENT_FILES = AGENT_FILES_BY_KIND["builtin"]  # its phrasings; nothing else it reads
LIST_INTENT = re.compile(
    r"\b(which|what) (documents|docs|files)\b|\blist (the |all |your )?(documents|docs|files)\b"
    r"|\b(documents|files) (do you have|are (available|indexed|loaded))",
    re.IGNORECASE,
)
CONTENT_INTENT = re.compile(r"\b(contain|contents?|summari[sz]e|what is in|what's in)\b", re.I)
PATH_TOKEN = re.compile(
    r"[\w./-]+\.(?:md|txt|csv|html?|py|json|ya?ml|pdf|docx?|xlsx?|pptx?)\b", re.IGNORECASE
)
# How much a follow-up's earlier question counts when choosing the answer sentence.
CONTEXT_WEIGHT = 0.25
FOLLOW_UP = re.compile(r"\b(it|its|that|this|those|these|they|them|he|she|his|her|one)\b", re.I)


class BuiltinTarget:
    def __init__(self, params: dict[str, Any], root: Path) -> None:
        section = params["target"]
        self.root = root
        self.knobs = {**DEFAULT_KNOBS, **(section.get("params") or {})}
        self.agent_dir = check_agent_files(params, root)
        replies_file = self.agent_dir / AGENT_FILES[0]
        self.replies: dict[str, str] = yaml.safe_load(replies_file.read_text(encoding="utf-8"))
        self.library = list(section.get("library") or DEFAULT_LIBRARY)
        self.fence = corpus_fence(params, root)
        identity = {
            "knobs": self.knobs,
            "files": agent_files_digest(self.agent_dir, AGENT_FILES),
            "corpus": self.fence.shown(),
            "code": code_of(__name__),
        }
        self.participant = Participant(
            kind="builtin",
            model=section.get("model", "builtin-bm25"),
            protocol="in-process",
            config_digest=digest_of(identity),
            details=identity,
        )

    async def open_session(self, scenario: Scenario, ctx: SessionContext) -> BuiltinSession:
        chunk_size, top_k = int(self.knobs["chunk_size"]), int(self.knobs["top_k"])
        tools = DocumentTools(ctx.root, self.library, chunk_size, top_k, self.fence)
        rng = random.Random(f"{ctx.seed}:{scenario.id}:{ctx.iteration}")
        session = BuiltinSession(tools, self.knobs, self.replies, rng)
        session.model = self.participant.model
        return session


class BuiltinSession:
    def __init__(
        self,
        tools: DocumentTools,
        knobs: dict[str, Any],
        replies: dict[str, str],
        rng: random.Random,
    ) -> None:
        self.tools = tools
        self.knobs = knobs
        self.replies = replies
        self.rng = rng
        self.previous_query = ""
        self.model: str | None = None  # the agent reports itself: it is its own model

    async def setup(self, documents: list[IndexDocument]) -> list[ToolCall]:
        for doc in documents:
            self.tools.call("index_document", path=doc.path)
        calls, self.tools.calls = self.tools.calls, []
        fenced = [c.error or "" for c in calls if c.fenced]
        if fenced:  # a scenario may not hand the agent a file outside the corpus
            raise SetupFailed(Status.SETUP_ERROR, "; ".join(fenced), calls)
        return calls

    async def send(self, message: str) -> AgentReply:
        start = len(self.tools.calls)
        response = self._respond(message)
        return AgentReply(response, self.tools.calls[start:], models=[self.model])

    async def close(self) -> None:
        return None

    # -- behaviour ----------------------------------------------------------------------
    def _respond(self, message: str) -> str:
        if LIST_INTENT.search(message):
            return self._list()
        for path in PATH_TOKEN.findall(message):
            reply = self._index_named(path, message)
            if reply:
                return reply
        if not self.tools.indexed and not self._discover(message):
            return self.replies["no_documents"]
        return self._answer(message)

    def _list(self) -> str:
        listing = self.tools.call("list_documents").result or {}
        indexed = [item["path"] for item in listing.get("indexed", [])]
        names = indexed or listing.get("available", [])
        if not names:
            return self.replies["no_documents"]
        prefix = self.replies["indexed_prefix"] if indexed else self.replies["listing_prefix"]
        return prefix + " " + ", ".join(Path(n).name for n in names) + "."

    def _index_named(self, path: str, message: str) -> str | None:
        call = self.tools.call("index_document", path=path)
        if not call.ok:
            return self.replies["missing_file"].format(path=path)
        result = call.result or {}
        if result.get("chunk_count", 0) == 0:
            return self.replies["empty_file"].format(path=path)
        if CONTENT_INTENT.search(message):
            return self._opening(result["path"])
        return None

    def _opening(self, doc: str) -> str:
        chunks = [c.text for c in self.tools.index.chunks if c.doc == doc]
        sentences = split_sentences(" ".join(chunks[:2]))
        return " ".join(sentences[:2])

    def _discover(self, message: str) -> bool:
        """With nothing indexed, index library files whose names share words with the question."""
        listing = self.tools.call("list_documents").result or {}
        available: list[str] = listing.get("available", [])
        wanted = set(tokenize(message))
        chosen = [p for p in available if wanted & set(tokenize(Path(p).stem.replace("_", " ")))]
        for path in chosen or available:
            self.tools.call("index_document", path=path)
        return bool(self.tools.indexed)

    def _answer(self, message: str) -> str:
        context = _entities(self.previous_query) if _is_follow_up(message) else ""
        query = f"{message} {context}".strip()
        self.previous_query = query
        call = self.tools.call("query_documents", query=query, top_k=int(self.knobs["top_k"]))
        results = (call.result or {}).get("results", [])
        terms = tokenize(message) or tokenize(context)
        candidates = self._rank_sentences(terms, tokenize(context), [r["text"] for r in results])
        if not candidates or candidates[0][0] < float(self.knobs["abstain_threshold"]):
            return self.replies["abstain"]
        return self._compose(candidates, terms)

    def _rank_sentences(
        self, terms: list[str], context: list[str], passages: list[str]
    ) -> list[tuple[float, str]]:
        """Sentences scored by how much of the question they support; earlier context counts
        a little, so a follow-up stays on topic without being answered by the old question."""
        index: Index = self.tools.index
        seen: set[str] = set()
        ranked = []
        for rank, passage in enumerate(passages):
            for sentence in split_sentences(passage):
                if sentence in seen:
                    continue
                seen.add(sentence)
                words = tokenize(sentence)
                support = index.support(terms, words)
                if context:
                    support += CONTEXT_WEIGHT * index.support(context, words)
                # Earlier passages ranked higher by BM25; a small bonus breaks ties their way.
                ranked.append((round(support + 0.01 / (rank + 1), 6), sentence))
        ranked.sort(key=lambda item: -item[0])
        return ranked

    def _compose(self, candidates: list[tuple[float, str]], terms: list[str]) -> str:
        best = self._pick(candidates)
        covered = set(tokenize(best))
        missing = [t for t in terms if t not in covered]
        for score, sentence in candidates:
            if sentence != best and score > 0 and set(tokenize(sentence)) & set(missing):
                return f"{best} {sentence}"
        return best

    def _pick(self, candidates: list[tuple[float, str]]) -> str:
        """Greedy at temperature 0; above it, sample among the top three like a sampled model."""
        temperature = float(self.knobs.get("temperature") or 0.0)
        top = candidates[:3]
        if temperature <= 0 or len(top) == 1:
            return top[0][1]
        weights = [math.exp((score - top[0][0]) / temperature) for score, _ in top]
        return self.rng.choices([s for _, s in top], weights=weights, k=1)[0]


def _entities(text: str) -> str:
    """Names and numbers of an earlier question: what a pronoun most likely points at."""
    words = text.split()[1:]
    return " ".join(w for w in words if w[:1].isupper() or w[:1].isdigit())


def _is_follow_up(message: str) -> bool:
    """Short messages or ones leaning on pronouns continue the previous question."""
    return len(tokenize(message)) <= 3 or bool(FOLLOW_UP.search(message))
