"""Stage `fetch`: download and verify the pinned external corpora into data/corpora/.

DVC reruns this stage when eval/sources.yaml, the `fetch` params or the laid-out files
change (data/corpora is its output: a file edited there is a changed output). A wrong digest
always stops it. A file the network keeps away stops it too, naming the file, so the next
`dvc repro` tries again; with `fetch.allow_missing: true` the rest is laid out and the
scenarios needing the file are SKIPPED_NO_DOCUMENT until that param is set back to false.
"""

from __future__ import annotations

import sys

from agenteval.corpus.errors import FetchError, NetworkError, OfflineError
from agenteval.corpus.fetch import fetch_sources
from stages.common import params, root, run_stage, show_progress

GO_ON_WITHOUT = (
    "fetch: to go on without it now, set fetch.allow_missing: true in params.yaml "
    "(scenarios that need it are then SKIPPED_NO_DOCUMENT)"
)


def main() -> int:
    base = root()
    allow_missing = bool(params()["fetch"]["allow_missing"])
    try:
        report = fetch_sources(
            base / "eval/sources.yaml",
            base / "data/corpora",
            allow_missing=allow_missing,
            progress=show_progress(),
        )
    except FetchError as exc:
        print(f"fetch: error: {exc}", file=sys.stderr)
        if unreachable(exc):
            print("fetch: the next `dvc repro` tries again", file=sys.stderr)
            print(GO_ON_WITHOUT, file=sys.stderr)
        return 2
    print(f"fetch: {report.summary()}")
    for item in report.missing:
        print(f"fetch: missing (fetch.allow_missing is true): {item}", file=sys.stderr)
    if report.missing:
        print(
            "fetch: scenarios that need these are SKIPPED_NO_DOCUMENT; set "
            "fetch.allow_missing: false to fetch them again (`agenteval fetch --verify` lists "
            "what is missing)",
            file=sys.stderr,
        )
    return 0


def unreachable(exc: FetchError) -> bool:
    """Whether the failure is the network's (the file may arrive later), not the pin's."""
    errors = getattr(exc, "errors", [exc])
    return all(isinstance(e, NetworkError | OfflineError) for e in errors)


if __name__ == "__main__":
    run_stage(main)
