"""The collector policy of agenteval's batch processes (agenteval/heap.py)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from agenteval import heap


@pytest.fixture(autouse=True)
def restore_collector(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    thresholds, enabled = gc.get_threshold(), gc.isenabled()
    monkeypatch.setattr(heap, "_claimed", True)  # as the entry points do
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)
    (gc.enable if enabled else gc.disable)()


def test_settle_freezes_the_live_heap_and_collects_less_often() -> None:
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    heap.settle()
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == heap.THRESHOLDS


def test_cycles_made_after_settling_are_still_collected() -> None:
    heap.settle()

    class Node:
        other: Node

    a, b = Node(), Node()
    a.other, b.other = b, a
    alive = weakref.ref(a)
    del a, b
    assert alive() is not None  # a cycle: reference counting alone cannot free it
    gc.collect()
    assert alive() is None


def test_importing_pauses_collection_and_restores_it_even_on_error() -> None:
    gc.enable()
    with pytest.raises(RuntimeError), heap.importing():
        assert not gc.isenabled()
        raise RuntimeError("an import failed")
    assert gc.isenabled()
    assert gc.get_threshold() == heap.THRESHOLDS
    gc.disable()
    with heap.importing():
        pass
    assert not gc.isenabled()  # a caller that had it off keeps it off


def test_paused_holds_collection_in_any_process_and_sets_it_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(heap, "_claimed", False)  # a temporary pause: unclaimed too
    gc.enable()
    with pytest.raises(RuntimeError), heap.paused():
        assert not gc.isenabled()
        raise RuntimeError("a file failed to read")
    assert gc.isenabled()
    gc.disable()
    with heap.paused():
        pass
    assert not gc.isenabled()  # a caller that had it off keeps it off


def test_an_unclaimed_process_keeps_its_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    """A command run inside another program (a test's CliRunner) changes nothing."""
    monkeypatch.setattr(heap, "_claimed", False)
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    gc.enable()
    heap.settle()
    with heap.importing():
        assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == (700, 10, 10)


BLAS_PROBE = """
import os, sys
from agenteval import heap
if sys.argv[1] == "claim":
    heap.claim()
import numpy  # noqa: F401  (loads OpenBLAS)
from threadpoolctl import threadpool_info
pools = [p["num_threads"] for p in threadpool_info() if p["internal_api"] == "openblas"]
print(os.environ.get("OPENBLAS_NUM_THREADS"), pools[0] if pools else None)
"""


def _blas_threads(mode: str, env: dict[str, str]) -> list[str]:
    import os
    import subprocess
    import sys

    clean = {k: v for k, v in os.environ.items() if k != heap.BLAS_THREADS_ENV} | env
    done = subprocess.run(
        [sys.executable, "-c", BLAS_PROBE, mode], env=clean, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_a_claimed_process_loads_openblas_single_threaded() -> None:
    variable, threads = _blas_threads("claim", {})
    assert variable == "1"
    if threads != "None":  # a NumPy built without OpenBLAS has no pool to check
        assert threads == "1"


def test_the_users_blas_setting_and_unclaimed_processes_are_left_alone() -> None:
    assert _blas_threads("claim", {heap.BLAS_THREADS_ENV: "2"})[0] == "2"
    assert _blas_threads("none", {})[0] == "None"
