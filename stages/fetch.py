"""Stage `fetch`: download and verify the pinned external corpora into data/corpora/.

An unreachable host does not stop the pipeline: the file is listed as missing and the
scenarios that need it are reported SKIPPED_NO_DOCUMENT. A wrong digest always stops it.
"""

from __future__ import annotations

import sys

from agenteval.corpus.errors import FetchError
from agenteval.corpus.fetch import fetch_sources
from stages.common import root, run_stage, show_progress


def main() -> int:
    base = root()
    try:
        report = fetch_sources(
            base / "eval/sources.yaml",
            base / "data/corpora",
            allow_missing=True,
            progress=show_progress(),
        )
    except FetchError as exc:
        print(f"fetch: error: {exc}", file=sys.stderr)
        return 2
    print(f"fetch: {report.summary()}")
    for item in report.missing:
        print(f"fetch: missing (scenarios using it will be skipped): {item}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    run_stage(main)
