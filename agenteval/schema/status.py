"""The status vocabulary shared by transcripts, verdicts and scorecards."""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    # Judged: the agent was measured.
    PASS = "PASS"
    FAIL = "FAIL"
    BLOCKED_BY_ARCHITECTURE = "BLOCKED_BY_ARCHITECTURE"
    # Unmeasured: the environment, the budget or the judge could not produce a measurement.
    TIMEOUT = "TIMEOUT"
    BUDGET_EXCEEDED = "BUDGET_EXCEEDED"
    INFRA_ERROR = "INFRA_ERROR"
    SETUP_ERROR = "SETUP_ERROR"
    SKIPPED_NO_DOCUMENT = "SKIPPED_NO_DOCUMENT"
    # A turn has no scripted user_message and no simulator that can write one is configured:
    # sending the objective instead would score the agent on words no user said.
    NO_USER_MESSAGE = "NO_USER_MESSAGE"
    # The simulated user, not the agent, got a turn wrong (simulators.checks: it leaked the
    # expected answer, stopped before the last step, left its persona or asked something
    # else): the conversation is not the scenario its author wrote, so nothing was measured.
    SIMULATOR_ERROR = "SIMULATOR_ERROR"
    ERRORED = "ERRORED"
    NOT_RUN = "NOT_RUN"
    NOT_JUDGED = "NOT_JUDGED"


JUDGED_STATUSES = frozenset({Status.PASS, Status.FAIL, Status.BLOCKED_BY_ARCHITECTURE})
UNMEASURED_STATUSES = frozenset(set(Status) - JUDGED_STATUSES)

# What inference can end with: either the conversation completed, or an unmeasured status.
COMPLETED = "COMPLETED"

# A verdict status meaning "scores given, no opinion on PASS/FAIL": scoring decides alone.
NO_OPINION = "JUDGED"
