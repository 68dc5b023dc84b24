"""pytest's outcome read from its own report (JUnit XML), never from its exit status alone.

A `conftest.py` can set `session.exitstatus = 0` and a module can print "16 passed"; the
report pytest writes counts every test it ran. A run passes only when it exited 0, was not
killed, and its report exists, is readable within a size cap, counts at least one test and
no failure or error.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

from agenteval.benchmarks.tasks.graded import read_regular

REPORT_BYTES = 20_000_000
COUNTS = ("tests", "failures", "errors", "skipped")


def counts(report: Path) -> dict[str, int] | None:
    """The totals of a JUnit XML report; None when it is missing, too big or unreadable."""
    data = read_regular(report, REPORT_BYTES)
    if data is None or b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        return None
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError:
        return None
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    if not suites:
        return None
    total = dict.fromkeys(COUNTS, 0)
    try:
        for suite in suites:
            for name in COUNTS:
                total[name] += int(suite.get(name, "0"))
    except ValueError:
        return None
    return total


def failure(report: Path, exit_code: int | None, timed_out: bool) -> str | None:
    """Why this pytest run did not pass; None when it did."""
    if timed_out:
        return "timed out"
    found = counts(report)
    if found is None:
        return f"pytest wrote no readable report (exit code {exit_code})"
    if found["failures"] or found["errors"]:
        return f"pytest's report: {found['failures']} failed, {found['errors']} errors"
    if found["tests"] - found["skipped"] <= 0:
        return "pytest's report: no test ran"
    if exit_code != 0:
        return f"exit code {exit_code}"
    return None
