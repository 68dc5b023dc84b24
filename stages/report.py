"""Stage `report`: reports/summary.md, DVC plot data and offline SVG charts under reports/plots/."""

from __future__ import annotations

from agenteval.pipeline import step_report
from stages.common import layout, run_stage


def main() -> int:
    step_report(layout())
    print("report: reports/summary.md, reports/plots/")
    return 0


if __name__ == "__main__":
    run_stage(main)
