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
