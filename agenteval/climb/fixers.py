"""Fixers: external coding agents as climb proposers (`agenteval fix`).

A fixer reads the failing TRAIN conversations — held and test are evaluated outside the
repository and never reach it (agenteval.climb.sealed) — with every reference answer removed
by the guard's reader (agenteval.climb.failures.redact), and patches one of the agent's
editable files. Each patch is one climb round: guarded, judged by the keep rule, committed or
reverted byte for byte by agenteval.climb.session; nothing here decides what is kept.

* `llm` — the climb's LLM proposer through any endpoint (`climb.llm`), with the fixer prompt
  (eval/prompts/fixer.md) and the failing conversations in it.
* `claude-code` — Claude Code (`claude -p`) patching the scratch worktree itself; refused with
  the reason when the `claude` command is not installed.
"""

from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path
from typing import Any

from agenteval.climb import git
from agenteval.climb.artifacts import ClimbError, Edit
from agenteval.climb.keep import Delta
from agenteval.climb.proposers import Context, LLMProposer, render_prompt
from agenteval.layout import load_transcript

FIXER_PROMPT = "eval/prompts/fixer.md"
FIXERS = ("llm", "claude-code")
MAX_CONVERSATIONS = 12  # failing train conversations shown to a fixer, one per scenario
MAX_TEXT = 600  # characters of one message or tool result
CLAUDE_TIMEOUT_S = 1800


def conversations(ctx: Context) -> str:
    """The failing train conversations, each message and tool call redacted."""
    if ctx.transcripts is None:
        return "(not available)"
    blocks = []
    for failure in ctx.failures[:MAX_CONVERSATIONS]:
        said = load_transcript(ctx.transcripts, failure.scenario, failure.iteration)
        if said is None:
            continue
        lines = [f"### a {failure.category} conversation ({failure.failure_class})"]
        for turn in said.turns:
            lines.append(f"user: {ctx.redact(turn.user_message)[:MAX_TEXT]}")
            for call in turn.tool_calls:
                shown = ctx.redact(str(call.error or call.result))[:MAX_TEXT]
                lines.append(f"  tool {call.name}({ctx.redact(str(call.arguments))}): {shown}")
            lines.append(f"agent: {ctx.redact(turn.response)[:MAX_TEXT]}")
        if said.error:
            lines.append(f"(ended {said.status}: {ctx.redact(said.error)[:MAX_TEXT]})")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) or "(no failing train conversations)"


def fixer_prompt(template: str, ctx: Context) -> str:
    """The climb's prompt fields plus {transcripts}: the failing train conversations."""
    escaped = template.replace("{transcripts}", "\0")
    return render_prompt(escaped, ctx).replace("\0", conversations(ctx))


class LLMFixer(LLMProposer):
    """The climb's LLM proposer, asked for one patch from the failing conversations."""

    name = "llm-fixer"

    def __init__(self, params: dict[str, Any], root: Path, prompt: str = FIXER_PROMPT) -> None:
        params = copy.deepcopy(params)
        params["climb"].setdefault("llm", {})["prompt"] = prompt
        super().__init__(params, root)

    def propose(self, ctx: Context) -> Edit | None:
        import asyncio

        self.last_prompt = fixer_prompt(self.template, ctx)
        return asyncio.run(self._ask(self.last_prompt, ctx.round))


class ClaudeCodeFixer:
    """Claude Code in print mode, run in the scratch worktree: the one editable file it
    changed is the round's patch (the tree is restored first, so the session applies it)."""

    name = "claude-code"

    def __init__(self, root: Path, command: str = "claude", template: str = "") -> None:
        found = shutil.which(command)
        if found is None:
            raise ClimbError(
                f"--fixer claude-code needs Claude Code's `{command}` command, which is not "
                "installed here (npm install -g @anthropic-ai/claude-code); --fixer llm asks "
                "any endpoint instead (climb.llm)"
            )
        self.command, self.root = found, root
        self.template = template or (root / FIXER_PROMPT).read_text(encoding="utf-8")
        self.last_prompt = ""

    def propose(self, ctx: Context) -> Edit | None:
        self.last_prompt = fixer_prompt(self.template, ctx).replace(
            "Answer with one JSON object", "Edit the file in place instead; do not answer with"
        )
        before = {p: (self.root / p).read_bytes() for p in ctx.spec.files}
        argv = [self.command, "-p", self.last_prompt, "--output-format", "json",
                "--permission-mode", "acceptEdits", "--no-session-persistence"]  # fmt: skip
        subprocess.run(argv, cwd=self.root, capture_output=True, timeout=CLAUDE_TIMEOUT_S)
        changed = {p: (self.root / p).read_bytes() for p in ctx.spec.files}
        edited = [p for p in ctx.spec.files if changed[p] != before[p]]
        for path, data in before.items():  # the session writes (and reverts) the patch itself
            (self.root / path).write_bytes(data)
        if git.changed_paths(self.root):
            raise ClimbError("claude-code changed files it may not: " +
                             ", ".join(git.changed_paths(self.root)))  # fmt: skip
        if not edited:
            return None
        why = "claude-code patch"
        if len(edited) > 1:  # a round is one edit: the first file is this round's patch
            why += f" (it changed {len(edited)} files; {edited[0]} is this round's)"
        return Edit(file=edited[0], text=changed[edited[0]].decode("utf-8"), why=why)

    def observe(self, edit: Edit, outcome: str, train: Delta | None) -> None:
        return None


def make_fixer(kind: str, params: dict[str, Any], root: Path) -> LLMFixer | ClaudeCodeFixer:
    if kind == "llm":
        return LLMFixer(params, root)
    if kind == "claude-code":
        return ClaudeCodeFixer(root)
    raise ClimbError(f"--fixer: {kind!r} is not one of {', '.join(FIXERS)}")
