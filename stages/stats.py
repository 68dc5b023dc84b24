"""Stage `stats`: every headline number with its uncertainty -> reports/noise.json."""

from __future__ import annotations

from agenteval.pipeline import step_stats
from stages.common import layout, params, run_stage


def main() -> int:
    report = step_stats(params(), layout())
    rate = report["overall"]["judged_pass_rate"]
    shown = "n/a" if rate["value"] is None else f"{rate['value']:.3f}"
    if rate.get("low") is not None:
        shown += f" [{rate['low']:.3f}, {rate['high']:.3f}]"
    elif rate.get("note"):
        shown += f" ({rate['note']})"
    print(f"stats: judged pass rate {shown} -> noise.json")
    return 0


if __name__ == "__main__":
    run_stage(main)
