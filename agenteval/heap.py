"""The garbage collector tuned for agenteval's batch processes (`agenteval run`, its MLflow
child, the DVC stages).

A run keeps a large heap of long-lived objects (the modules of pydantic, aiohttp, MLflow,
SQLAlchemy, pandas; the suite) and allocates millions of short-lived ones on top (messages,
transcripts, trace rows), almost all freed by reference counting. With CPython's default
thresholds, (700, 10, 10), every full collection walks the whole long-lived heap again:
measured on `python bench/peer_inspect.py` (500 conversations), 0.44 s of the parent's CPU
and 0.83 s of the MLflow child's went to the collector, most of it in full collections
during imports and trace building. `settle()` takes what is alive now out of the
collector's sight (`gc.freeze`) and collects less often; cycles are still collected.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Young generation every 10,000 net allocations (not 700); older ones after 20 (not 10)
# collections of the one below: a few full collections per 10,000 conversations.
THRESHOLDS = (10_000, 20, 20)


def settle() -> None:
    """Everything alive now is long-lived: never scan it again; collect young objects less
    often. For a process's entry point, not for a library call (it is process-wide)."""
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)


@contextmanager
def importing() -> Iterator[None]:
    """No collection while modules load (they allocate much and free little), then
    `settle()` what they built."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        settle()
        if was_enabled:
            gc.enable()
