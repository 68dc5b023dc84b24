"""The judge registry keyed by `kind`, and building the configured judge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agenteval.judges.protocol import Judge
from agenteval.registry import build

__all__ = ["REGISTRY", "Judge", "make_judge"]

# kind -> "module:factory"; adding a judge is adding a module and a line here.
REGISTRY = {
    "code": "agenteval.judges.code:CodeJudge",
    "llm": "agenteval.judges.llm:LLMJudge",
    "hybrid": "agenteval.judges.hybrid:HybridJudge",
    "mlflow": "agenteval.judges.mlflow_judge:MlflowJudge",
}

# Judges that call no endpoint: `agenteval run` grades with them while inference is still
# running (judging.StreamJudging), their CPU overlapping the agent's requests in flight.
# A judge on an endpoint waits for inference to finish, so it never competes with the agent
# for the same server or rate limit.
OVERLAPS_INFERENCE = frozenset({"code"})


def make_judge(params: dict[str, Any], root: Path) -> Judge:
    """The configured judge; with judge.repeats >= 2 every transcript is judged K times."""
    from agenteval.judges.repeats import repeated

    judge: Judge = build(REGISTRY, "judge", params, root)
    return repeated(judge, params)
