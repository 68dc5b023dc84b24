"""The garbage collector and the BLAS thread pool tuned for agenteval's batch processes
(`agenteval run`, the DVC stages).

A run keeps a large heap of long-lived objects (the modules of pydantic, aiohttp, MLflow,
SQLAlchemy, pandas; the suite) and allocates millions of short-lived ones on top (messages,
transcripts, spans), almost all freed by reference counting. With CPython's default
thresholds, (700, 10, 10), every full collection walks the whole long-lived heap again.
`settle()` takes what is alive now out of the collector's sight (`gc.freeze`) and collects
less often; cycles are still collected. Measured without it (`python bench/ab_run.py`,
docs/performance.md): about 7 % more CPU for a 500-conversation run, the wall within noise.

NumPy's bundled OpenBLAS starts a thread per core when it loads, and they spin: on this
project's 2-core machines `import numpy, scipy.special` costs 0.42 s of CPU with them and
0.23 s without (`OPENBLAS_NUM_THREADS=1`), for the same wall time. agenteval does no
linear algebra that gains from them (its largest product is a bootstrap of a few hundred
values), so the threads only take CPU from the run. A claimed process therefore loads
OpenBLAS single-threaded unless the user set the variable; processes it starts inherit
that (executor workers), MCP agents do not (they get named variables only).
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

# Young generation every 10,000 net allocations (not 700); older ones after 20 (not 10)
# collections of the one below: a few full collections per 10,000 conversations.
THRESHOLDS = (10_000, 20, 20)
BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"  # read once, when NumPy loads OpenBLAS


_claimed = False


def claim() -> None:
    """This process is one of agenteval's batch processes: its entry point (the console
    script, a DVC stage) says so before any work. Without a claim,
    `settle()` and `importing()` change nothing, so a command or a stage called inside
    another program (a test's CliRunner, a notebook) leaves that program's collector alone."""
    global _claimed
    _claimed = True
    if "numpy" not in sys.modules:  # once loaded, its thread pool is already running
        os.environ.setdefault(BLAS_THREADS_ENV, "1")


def settle() -> None:
    """Everything alive now is long-lived: never scan it again; collect young objects less
    often (process-wide, so only in a claimed process)."""
    if not _claimed:
        return
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)


@contextmanager
def importing() -> Iterator[None]:
    """No collection while modules load (they allocate much and free little), then
    `settle()` what they built (in a claimed process)."""
    if not _claimed:
        yield
        return
    with paused():
        try:
            yield
        finally:
            settle()


@contextmanager
def paused() -> Iterator[None]:
    """No collection inside, then the collector as it was (so in any process, claimed or
    not): for work that allocates a great many objects holding no reference cycle, which
    reference counting frees and the collector would only walk again and again. Reading
    Claude Code transcripts (parsed lines, their models, the cases) spent a sixth of its
    CPU in the collector, and the parent merging its workers' cases two thirds."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
