"""QA metrics from judged attempts: native@1, avg@k, pass@k and pass^k with their counts.

Every series carries its own Evaluated / Error / Unavailable / Total counts (in tasks, or in
attempts for native@1) and a 95% interval clustered by task. A task enters a @j series only
with at least j evaluated attempts - the unbiased estimators need n >= j - and is otherwise
counted as Error (some attempt errored) or Unavailable. pass@j = 1 - C(n-c, j)/C(n, j) and
pass^j = C(c, j)/C(n, j) (agenteval.stats); pass^j is 0 as soon as fewer than j attempts
passed, so one observed failure at n = j gives 0, never (c/n)^j.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agenteval.stats import mean_ci, pass_at_k, pass_hat_k, wilson_interval


@dataclass(frozen=True)
class Observation:
    task: str
    level: int
    attempt: int
    status: str  # evaluated | error | unavailable
    correct: int | None


@dataclass(frozen=True)
class TaskTally:
    task: str
    n: int  # evaluated attempts
    c: int  # correct attempts
    errored: bool
    values: tuple[int, ...]


def tallies(observations: Sequence[Observation]) -> list[TaskTally]:
    grouped: dict[str, list[Observation]] = defaultdict(list)
    for obs in observations:
        grouped[obs.task].append(obs)
    out = []
    for task in sorted(grouped):
        rows = sorted(grouped[task], key=lambda o: o.attempt)
        values = tuple(int(o.correct) for o in rows if o.correct is not None)
        errored = any(o.status == "error" for o in rows)
        out.append(TaskTally(task, len(values), sum(values), errored, values))
    return out


def interval(values: Sequence[float], clusters: Sequence[str], conf: float) -> dict[str, Any]:
    """Mean with a t interval clustered by task; Wilson when binary values have no spread."""
    if not values:
        return {"value": None, "low": None, "high": None, "method": None}
    mean = sum(values) / len(values)
    binary = all(v in (0, 1) for v in values)
    if len(set(clusters)) >= 2 and len(set(values)) > 1:
        ci = mean_ci(list(values), clusters=list(clusters), conf=conf)
        low, high, method = max(0.0, ci.low), min(1.0, ci.high), "clustered t"
    elif binary:
        # No spread to estimate from (all correct or all wrong): a t interval would have zero
        # width, claiming a certainty the sample does not have.
        low, high = wilson_interval(int(sum(values)), len(values), conf)
        method = "wilson"
    else:
        return {"value": round(mean, 6), "low": None, "high": None, "method": None}
    return {"value": round(mean, 6), "low": round(low, 6), "high": round(high, 6), "method": method}


def _counts(tasks: Sequence[TaskTally], need: int) -> dict[str, int]:
    evaluated = sum(t.n >= need for t in tasks)
    error = sum(t.n < need and t.errored for t in tasks)
    return {
        "evaluated": evaluated,
        "error": error,
        "unavailable": len(tasks) - evaluated - error,
        "total": len(tasks),
    }


def native_at_1(observations: Sequence[Observation], conf: float) -> dict[str, Any]:
    """Accuracy of the first attempt over the tasks whose first attempt was evaluated."""
    first = [o for o in observations if o.attempt == 0]
    judged = [o for o in first if o.correct is not None]
    counts = {
        "evaluated": len(judged),
        "error": sum(o.status == "error" for o in first),
        "unavailable": sum(o.status == "unavailable" for o in first),
        "total": len(first),
    }
    values = [float(o.correct or 0) for o in judged]
    return interval(values, [o.task for o in judged], conf) | counts


def avg_at_k(tasks: Sequence[TaskTally], k: int, conf: float) -> dict[str, Any]:
    """Mean correctness over the k attempts of every task with k evaluated attempts."""
    kept = [t for t in tasks if t.n >= k]
    values = [float(v) for t in kept for v in t.values]
    clusters = [t.task for t in kept for _ in t.values]
    return interval(values, clusters, conf) | _counts(tasks, k)


def _estimator(
    tasks: Sequence[TaskTally],
    j: int,
    attempts: int,
    conf: float,
    estimate: Callable[[int, int, int], float],
) -> dict[str, Any]:
    if not 1 <= j <= attempts:
        raise ValueError(f"@{j} needs 1 <= {j} <= attempts per task ({attempts})")
    kept = [t for t in tasks if t.n >= j]
    values = [estimate(t.n, t.c, j) for t in kept]
    return interval(values, [t.task for t in kept], conf) | _counts(tasks, j)


def pass_series(tasks: Sequence[TaskTally], j: int, attempts: int, conf: float) -> dict[str, Any]:
    return _estimator(tasks, j, attempts, conf, pass_at_k)


def pass_hat_series(
    tasks: Sequence[TaskTally], j: int, attempts: int, conf: float
) -> dict[str, Any]:
    return _estimator(tasks, j, attempts, conf, pass_hat_k)


def headline(observations: Sequence[Observation], attempts: int, conf: float) -> dict[str, Any]:
    """The metrics of one group of tasks: native@1, and at k > 1 avg@k, pass@k, pass^k."""
    tasks = tallies(observations)
    out = {"correct.native@1": native_at_1(observations, conf)}
    if attempts > 1:
        k = attempts
        out[f"correct.avg@{k}"] = avg_at_k(tasks, k, conf)
        out[f"correct.pass@{k}"] = pass_series(tasks, k, attempts, conf)
        out[f"correct.pass^{k}"] = pass_hat_series(tasks, k, attempts, conf)
    return out


def qa_metrics(
    observations: Sequence[Observation],
    attempts: int,
    conf: float = 0.95,
    verdicts: Counter[str] | None = None,
    rules: Counter[str] | None = None,
) -> dict[str, Any]:
    """metrics.json of a QA run: the headline, the pass@j / pass^j series, per-level views."""
    tasks = tallies(observations)
    series: dict[str, Any] = {}
    for j in range(1, attempts + 1):
        series[f"correct.pass@{j}"] = pass_series(tasks, j, attempts, conf)
        series[f"correct.pass^{j}"] = pass_hat_series(tasks, j, attempts, conf)
    levels = sorted({o.level for o in observations})
    return {
        "kind": "qa",
        "k": attempts,
        **headline(observations, attempts, conf),
        "series": series,
        "by_level": {
            str(level): headline([o for o in observations if o.level == level], attempts, conf)
            for level in levels
        },
        "verdicts": dict(sorted((verdicts or Counter()).items())),
        "rules": dict(sorted((rules or Counter()).items())),
    }
