"""The scrubber measured on a labelled corpus: recall on planted secrets, look-alikes kept.

`eval/scrub/{dev,held}.jsonl` hold one record a line: either `secrets` (texts with planted
secret values of a named kind, each value must be gone after scrubbing) or `keep` (look-alikes
that must come out byte for byte: git SHAs, UUIDs, content hashes, inline images, versions,
timestamps, prose and code that say "key", "token" or "password"). Rules are tuned on dev;
held is what docs/privacy.md reports and tests/test_scrub_corpus.py holds to a bar.

    python -m agenteval.llm.scrub_corpus eval/scrub/held.jsonl
    python -m agenteval.llm.scrub_corpus --private eval/scrub/held.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from agenteval.llm.scrub import Scrubber


@dataclass
class CorpusScore:
    secrets: int = 0
    caught: int = 0
    lookalikes: int = 0
    scrubbed: int = 0
    kinds: set[str] = field(default_factory=set)
    missed: list[str] = field(default_factory=list)  # record ids, never values
    false_scrubs: list[str] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return self.caught / self.secrets if self.secrets else 0.0

    @property
    def false_scrub_rate(self) -> float:
        return self.scrubbed / self.lookalikes if self.lookalikes else 0.0

    def line(self) -> str:
        return (
            f"recall {self.caught}/{self.secrets} = {self.recall:.3f} over {len(self.kinds)} "
            f"kinds; false scrubs {self.scrubbed}/{self.lookalikes} = {self.false_scrub_rate:.3f}"
        )


class CorpusError(ValueError):
    """A corpus file that cannot be read as records: `path:line: message`."""


def measure(path: Path, scrubber: Scrubber | None = None) -> CorpusScore:
    """Scrub every record of `path` (personal data on, as for a person's own text)."""
    scrubber = scrubber or Scrubber(personal=True)
    score = CorpusScore()
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
            text = record["text"]
            record["secrets" if not record.get("keep") else "keep"]
        except (ValueError, KeyError, TypeError) as err:
            raise CorpusError(f"{path}:{number}: not a corpus record ({err!r})") from err
        out = scrubber.scrub_text(text)
        if record.get("keep"):
            score.lookalikes += 1
            if out != record["text"]:
                score.scrubbed += 1
                score.false_scrubs.append(f"{path.name}:{number}: {record['id']}")
            continue
        score.kinds.add(record["kind"])
        for value in record["secrets"]:
            score.secrets += 1
            if value in out:
                score.missed.append(f"{path.name}:{number}: {record['id']}")
            else:
                score.caught += 1
    return score


def main(argv: list[str]) -> int:
    """`--private`: measure the private scrubber instead (`llm.private`, what sessions and
    the response cache use: e-mails become fixtures, what still looks private and has a
    sure extent is redacted too), so its own false scrubs are counted. A file that is
    missing or holds no records: `path[:line]: message`, exit 2."""
    parser = argparse.ArgumentParser(
        prog="python -m agenteval.llm.scrub_corpus",
        description="Recall on planted secrets and look-alikes kept, per labelled corpus file.",
    )
    parser.add_argument(
        "files", nargs="*", type=Path, help="JSONL corpus files (default: eval/scrub dev, held)"
    )
    parser.add_argument(
        "--private", action="store_true", help="measure llm.private's scrubber (sessions, cache)"
    )
    args = parser.parse_args(argv)
    files = args.files or [Path("eval/scrub/dev.jsonl"), Path("eval/scrub/held.jsonl")]
    for path in files:
        if not path.is_file():
            print(f"{path}: no such corpus file", file=sys.stderr)
            return 2
    for path in files:
        try:
            score = measure(path, _private() if args.private else None)
        except CorpusError as err:
            print(err, file=sys.stderr)
            return 2
        print(f"{path}: {score.line()}")
        for where in score.missed:
            print(f"  missed {where}")
        for where in score.false_scrubs:
            print(f"  false scrub {where}")
    return 0


def _private() -> Scrubber:
    from agenteval.llm.private import PrivateScrubber

    return PrivateScrubber(env={})  # type: ignore[return-value]  # scrub_text alike


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
