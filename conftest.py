"""Repository-wide pytest settings.

The toybox under eval/tasks/ is the project the coding tasks copy: its own suite runs inside
each task's copy (where a setup may make it red or hang on purpose), never as part of this
project's tests, whatever path pytest is given.
"""

import pytest

collect_ignore_glob = ["eval/*"]


@pytest.fixture(autouse=True)
def _no_scrubber_left_installed():
    """A run in-process installs its scrubber for every file the process writes
    (fileio.install_scrubber); one test's must not rewrite what a later test writes."""
    yield
    from agenteval import fileio

    fileio.install_scrubber(None)


# The files whose tests take longest (CI's --durations, seconds of one worker), started first:
# under `-n 3 --dist loadfile --no-loadscope-reorder` a file runs on one worker in the order
# collected, and a long file started last decides when the whole run ends (xdist's default
# order, most tests first, started the 600-second README test near the end). Order only.
LONGEST_FIRST = (
    "test_docs_readme.py", "test_docs.py", "test_pipeline_dvc.py", "test_docs_pages.py",
    "test_local_model.py", "test_bench_pipelines.py", "test_climb.py", "test_local_judge.py",
    "test_benchmark_pipelines.py", "test_retrieval_benchmark.py", "test_mlflow_ui.py",
    "test_retry.py", "test_tracking_server.py", "test_ci.py", "test_memory_local.py",
    "test_concurrent_tracking.py", "test_track.py", "test_executor_ray.py",
    "test_tasks_pipeline.py", "test_sessions_pipeline.py", "test_hybrid_judge.py",
    "test_memory_pipeline.py", "test_dvc_remote.py", "test_flagship_tasks.py",
)  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: n for n, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
