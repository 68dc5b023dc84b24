"""Stage `stats`: every headline number with its uncertainty -> reports/noise.json."""

from __future__ import annotations

import sys

from agenteval.pipeline import step_stats
from stages.common import layout, params


def main() -> int:
    report = step_stats(params(), layout())
    rate = report["overall"]["judged_pass_rate"]
    half = rate.get("half_width")
    shown = "n/a" if rate["value"] is None else f"{rate['value']:.3f}"
    print(f"stats: judged pass rate {shown} ± {half if half is not None else 'n/a'} -> noise.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
