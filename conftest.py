"""Repository-wide pytest settings.

The toybox under eval/tasks/ is the project the coding tasks copy: its own suite runs inside
each task's copy (where a setup may make it red or hang on purpose), never as part of this
project's tests, whatever path pytest is given.
"""

collect_ignore_glob = ["eval/*"]
