"""Extraction speed of `agenteval sessions`: N generated Claude Code transcripts of L lines.

Each generated session is what a working day looks like in ~/.claude/projects: requests
answered over several assistant lines (thinking, narration, tool calls sharing a message id),
tool results carrying file contents and command output, hook feedback, command echoes, a
subagent's sidechain, acknowledgements and follow-ups. The script times, in one process,
reading and extracting every file (`extract`, the target: 1,000 files of 200 lines in under
10 s), and then `agenteval sessions --dataset-only` end to end in a fresh process (reading,
extracting, scrubbing and writing dataset.json). It prints figures and never asserts.

    python bench/sessions_extract.py [--files 1000] [--lines 200] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

REQUESTS = [
    "Why does the nightly export skip records created after midnight UTC?",
    "Add retries with backoff to the webhook sender.",
    "Which tests cover the invoice rounding code?",
    "Refactor the settings loader so env vars override the YAML file.",
    "What happens when two workers claim the same job?",
]
FOLLOW_UPS = ["Now add a test for that.", "Do the same for the refund path.", "Also log it."]
CODE = "\n".join(
    f"    {i:>4}\tdef handler_{i}(payload):  # returns the parsed record" for i in range(40)
)


class Writer:
    def __init__(self, session: str, cwd: str, rng: random.Random) -> None:
        self.session, self.cwd, self.rng = session, cwd, rng
        self.lines: list[str] = []
        self.parent: str | None = None
        self.clock = 1_700_000_000

    def line(self, kind: str, message: dict | None = None, **extra: object) -> None:
        self.clock += self.rng.randint(1, 30)
        uid = str(uuid.UUID(int=self.rng.getrandbits(128)))
        record = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session,
            "version": "2.0.76",
            "gitBranch": "main",
            "type": kind,
        }
        if message is not None:
            record["message"] = message
        record |= extra
        record["uuid"] = uid
        record["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(self.clock))
        if not record["isSidechain"]:
            self.parent = uid
        self.lines.append(json.dumps(record, separators=(",", ":")))

    def user(self, content: object, **extra: object) -> None:
        self.line("user", {"role": "user", "content": content}, **extra)

    def assistant(self, msg: str, blocks: list[dict], **extra: object) -> None:
        message = {
            "model": "claude-sonnet-4-5-20250929",
            "id": msg,
            "type": "message",
            "role": "assistant",
            "content": blocks,
            "stop_reason": None,
            "usage": {"input_tokens": 4, "output_tokens": 90},
        }
        self.line("assistant", message, requestId="req_" + msg[4:], **extra)

    def exchange(self, request: str) -> None:
        self.user(request)
        msg = f"msg_{self.rng.getrandbits(64):016x}"
        self.assistant(
            msg,
            [
                {
                    "type": "thinking",
                    "thinking": "Look at the code first.",
                    "signature": "Eq" + "x" * 60,
                }
            ],
        )
        self.assistant(msg, [{"type": "text", "text": "Let me look at the relevant code."}])
        for step in range(self.rng.randint(1, 3)):
            tool = f"toolu_{self.rng.getrandbits(64):016x}"
            name = ["Read", "Grep", "Bash", "Edit"][step % 4]
            self.assistant(
                msg,
                [
                    {
                        "type": "tool_use",
                        "id": tool,
                        "name": name,
                        "input": {"file_path": f"{self.cwd}/app/m{step}.py"},
                    }
                ],
            )
            self.user(
                [{"type": "tool_result", "tool_use_id": tool, "content": CODE}],
                toolUseResult={"type": "text", "numLines": 40},
            )
            msg = f"msg_{self.rng.getrandbits(64):016x}"
        answer = "The cause is the comparison in app/m0.py; I changed it and the tests pass. " * 3
        self.assistant(msg, [{"type": "text", "text": answer}])

    def noise(self) -> None:
        pick = self.rng.randrange(5)
        if pick == 0:
            self.user("Stop hook feedback:\n[ruff]: 1 error", isMeta=True)
        elif pick == 1:
            self.user("<command-name>/cost</command-name>\n<command-args></command-args>")
        elif pick == 2:
            self.user("thanks!")
        elif pick == 3:
            self.line("system", None, subtype="informational", content="hook ok", level="info")
        else:
            self.user("Warmup", isSidechain=True)


def session_file(path: Path, lines: int, rng: random.Random) -> int:
    writer = Writer(str(uuid.UUID(int=rng.getrandbits(128))), "/home/dev/work/app", rng)
    writer.line("summary", None, summary="Work on the app", leafUuid="x")
    while len(writer.lines) < lines:
        writer.exchange(rng.choice(REQUESTS))
        if rng.random() < 0.5:
            writer.exchange(rng.choice(FOLLOW_UPS))
        writer.noise()
    path.write_text("\n".join(writer.lines[:lines]) + "\n")
    return lines


def generate(root: Path, files: int, lines: int) -> int:
    rng = random.Random(20261203)
    total = 0
    for n in range(files):
        folder = root / f"-home-dev-work-app{n % 20}"
        folder.mkdir(parents=True, exist_ok=True)
        total += session_file(folder / f"{uuid.UUID(int=rng.getrandbits(128))}.jsonl", lines, rng)
    return total


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the extraction's workers)."""
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def time_extract(root: Path, repeats: int) -> tuple[list[float], list[float], int, int]:
    """Wall and CPU seconds of each extraction (CPU: this process and its workers, the
    figure a shared machine's load inflates least)."""
    from agenteval.benchmarks.sessions.extract import Options, extract

    walls, cpus = [], []
    cases = lines = 0
    for _ in range(repeats):
        start, cpu = time.perf_counter(), cpu_seconds()
        found = extract(root, Options())
        walls.append(time.perf_counter() - start)
        cpus.append(cpu_seconds() - cpu)
        cases, lines = len(found.cases), found.lines
    return walls, cpus, cases, lines


def time_cli(root: Path, out: Path) -> tuple[float, float]:
    """Wall and CPU seconds of the command in a fresh process (CPU: the figure the scrubber
    moves, and the one a shared machine's load inflates least)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    argv = [
        sys.executable,
        "-m",
        "agenteval",
        "sessions",
        "--dataset-only",
        "--transcripts",
        str(root),
        "--limit",
        "1000000",
        "--out",
        str(out),
        "--no-track",
    ]
    start, cpu = time.perf_counter(), cpu_seconds()
    subprocess.run(argv, cwd=ROOT, env=env, check=True, capture_output=True)
    return time.perf_counter() - start, cpu_seconds() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--lines", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "projects"
        start = time.perf_counter()
        total = generate(root, args.files, args.lines)
        size = sum(p.stat().st_size for p in root.rglob("*.jsonl")) / 1e6
        print(
            f"generated {args.files} files x {args.lines} lines = {total} lines, "
            f"{size:.1f} MB in {time.perf_counter() - start:.1f} s"
        )
        walls, cpus, cases, lines = time_extract(root, args.repeats)
        best, median = min(walls), statistics.median(walls)
        print(
            f"extract: wall median {median:.2f} s, best {best:.2f} s over {args.repeats} "
            f"run(s) ({lines / median:,.0f} lines/s; {cases} cases) - target < 10 s"
        )
        print(
            f"extract: CPU (all processes) median {statistics.median(cpus):.2f} s, "
            f"best {min(cpus):.2f} s; {os.cpu_count()} cores"
        )
        cli, cli_cpu = time_cli(root, Path(tmp) / "out")
        print(
            f"agenteval sessions --dataset-only (fresh process, all {cases} cases scrubbed "
            f"and written): {cli:.2f} s wall, {cli_cpu:.2f} s CPU"
        )
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"load average {load:.1f} on {os.cpu_count()} cores (a shared machine)")
    print(f"rerun: python bench/sessions_extract.py --files {args.files} --lines {args.lines}")


if __name__ == "__main__":
    main()
