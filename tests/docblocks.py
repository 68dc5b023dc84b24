"""The fenced blocks of README.md and docs/*.md that show commands, and how their output is read.

A block that shows commands says what the doc test does with it in its info string, after the
language (GitHub renders only the language, so readers see a plain shell block):

    ```console runnable            `$ ` lines are run in order; the lines after each are what it
                                   prints (`...` stands for any text, a line of `...` for any
                                   lines); `# exit N` after a command expects that exit status
    ```bash runnable               the whole block is one script that must exit 0
    ```console runnable serve=agent:8000,judge:8001
                                   loopback servers the test starts (tests/servers), their real
                                   ports put where the block says 127.0.0.1:8000 / :8001
    ```console runnable background the one command is a server: started, asked over HTTP at its
                                   --port (a free one is put there), then stopped
    ```console runnable needs=ray  an optional extra's module: without it the block is left out
                                   with a warning (failed under AGENTEVAL_REQUIRE_SERVICES=1)
    ```console runnable in=docs/x.md  that page runs these commands too (each must be a
                                   command of one of its runnable blocks): README shows them,
                                   the page says more
    ```bash setup                  README's two set-up commands (checked against .ci/run; run
                                   in README's order, the environment steps checked, not
                                   redone; the main job's `dvc repro` is what every page
                                   starts from)
    ```bash not-runnable: REASON   shown, not run; the reason is listed by the test

Any other language (text, yaml, json) shows data, not commands.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

COMMAND_LANGUAGES = {"bash", "sh", "shell", "console"}
MARKERS = {"runnable", "setup", "not-runnable"}
FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*(.*)$")
EXIT = re.compile(r"#\s*exit\s+(\d+)\s*$")
# What a block without a language looks like when it is a command someone could copy.
COMMAND_START = re.compile(r"^\s*(\$ |agenteval |dvc |python3? |mlflow |pip |git |pytest )")


@dataclass(frozen=True)
class Command:
    text: str
    expected: tuple[str, ...]  # the lines shown after it
    exit_code: int = 0


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository root
    line: int  # of the opening fence, 1-based
    language: str
    marker: str  # runnable | setup | not-runnable | "" (not a command block)
    reason: str
    options: dict[str, str] = field(default_factory=dict)
    body: str = ""

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def is_command_block(self) -> bool:
        return self.language in COMMAND_LANGUAGES

    def commands(self) -> list[Command]:
        """`$ ` lines (with `\\` continuations) and the output shown after each; a bash block
        is one command, the whole script."""
        if self.language != "console":
            return [Command(self.body, ())]
        found: list[Command] = []
        lines = self.body.splitlines()
        i = 0
        while i < len(lines):
            if not lines[i].startswith("$ "):
                i += 1
                continue
            text = lines[i][2:]
            while text.endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text[:-1].rstrip() + " " + lines[i].strip()
            i += 1
            shown: list[str] = []
            while i < len(lines) and not lines[i].startswith("$ "):
                shown.append(lines[i])
                i += 1
            code = EXIT.search(text)
            found.append(Command(text, tuple(shown), int(code.group(1)) if code else 0))
        return found

    def servers(self) -> dict[int, str]:
        """serve=role:port,role:port -> {port: role}"""
        pairs = [item.split(":", 1) for item in self.options.get("serve", "").split(",") if item]
        return {int(port): role for role, port in pairs}


def parse(root: Path, page: Path) -> list[Block]:
    rel = page.relative_to(root).as_posix()
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        indent, fence, info = opened.groups()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines):
            closing = FENCE.match(lines[i])
            if closing and _closes(closing, fence):
                break
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        blocks.append(_block(rel, start + 1, info.strip(), "\n".join(body)))
    return blocks


def _closes(closing: re.Match[str], fence: str) -> bool:
    run, info = closing.group(2), closing.group(3)
    return run[0] == fence[0] and len(run) >= len(fence) and not info.strip()


def _block(page: str, line: int, info: str, body: str) -> Block:
    language, _, rest = info.partition(" ")
    rest = rest.strip()
    marker, reason, options = "", "", {}
    if rest.startswith("not-runnable"):
        marker, reason = "not-runnable", rest[len("not-runnable") :].lstrip(":").strip()
    elif rest:
        words = rest.split()
        marker = words[0] if words[0] in MARKERS else ""
        for word in words[1:]:
            key, _, value = word.partition("=")
            options[key] = value
    return Block(page, line, language.lower(), marker, reason, options, body)


def problems(block: Block) -> list[str]:
    """Why a block breaks the rules above (empty when it keeps them)."""
    if block.is_command_block:
        if not block.marker:
            return [f"{block.where}: a {block.language} block must say `runnable`, `setup` "
                    "or `not-runnable: REASON` after the language"]  # fmt: skip
        if block.marker == "not-runnable" and not block.reason:
            return [f"{block.where}: not-runnable without a reason"]
        if block.marker == "runnable" and block.language == "console" and not block.commands():
            return [f"{block.where}: a runnable console block without a `$ ` line"]
        return []
    if not block.language and any(COMMAND_START.match(x) for x in block.body.splitlines()):
        return [f"{block.where}: commands in a block without a language: mark it "
                "```console runnable (or bash, or not-runnable: REASON)"]  # fmt: skip
    return []


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def missing_lines(expected: tuple[str, ...], output: str) -> list[str]:
    """The shown lines the output lacks, in order. Each shown line must match a later line of
    the output than the one before it; `...` inside a line matches any text, and a line of
    only `...` (or a blank line) matches nothing in particular."""
    actual = [ANSI.sub("", line).strip() for line in output.splitlines()]
    at = 0
    missing: list[str] = []
    for shown in expected:
        want = shown.strip()
        if not want or want == "...":
            continue
        for i in range(at, len(actual)):
            if line_matches(want, actual[i]):
                at = i + 1
                break
        else:
            missing.append(shown)
    return missing


def line_matches(want: str, actual: str) -> bool:
    parts = want.split("...")
    if len(parts) == 1:
        return want == actual
    if not (actual.startswith(parts[0]) and actual.endswith(parts[-1])):
        return False
    at = len(parts[0])
    end = len(actual) - len(parts[-1])
    for part in parts[1:-1]:
        found = actual.find(part, at, end)
        if found < 0:
            return False
        at = found + len(part)
    return at <= end
