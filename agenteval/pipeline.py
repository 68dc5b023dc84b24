"""The evaluation as a chain of steps over files; `agenteval run` and the DVC stages share it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.engine import Inference
from agenteval.fileio import read_json, write_json
from agenteval.judging import make_judge, run_judging
from agenteval.schema.scorecard import Scorecard
from agenteval.schema.suite import Suite
from agenteval.schema.transcript import Transcript
from agenteval.scorecard import build_scorecard, metrics_of
from agenteval.simulate import make_simulator
from agenteval.suite import build_suite
from agenteval.targets.base import make_target


@dataclass(frozen=True)
class Layout:
    """Where a run's files live: DVC uses data/ and reports/ at the repository root."""

    root: Path
    data: Path
    reports: Path

    @classmethod
    def repository(cls, root: Path) -> Layout:
        return cls(root, root / "data", root / "reports")

    @classmethod
    def run_dir(cls, root: Path, out: Path) -> Layout:
        return cls(root, out / "data", out)

    @property
    def suite(self) -> Path:
        return self.data / "suite.json"

    @property
    def transcripts(self) -> Path:
        return self.data / "transcripts"

    @property
    def verdicts(self) -> Path:
        return self.data / "verdicts"

    @property
    def scorecard(self) -> Path:
        return self.reports / "scorecard.json"

    @property
    def metrics(self) -> Path:
        return self.reports / "metrics.json"


@contextmanager
def progress_bar(label: str, total: int, enabled: bool) -> Iterator[Callable[[Any], None]]:
    """A rich progress bar on stderr; a no-op callback when disabled (tests, CI logs)."""
    if not enabled:
        yield lambda _item: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    columns = (BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(
        "[progress.description]{task.description}", *columns, console=Console(stderr=True)
    ) as bar:
        task = bar.add_task(label, total=total)
        yield lambda _item: bar.advance(task)


def load_suite(layout: Layout) -> Suite:
    return Suite.model_validate(read_json(layout.suite))


def step_suite(params: dict[str, Any], layout: Layout) -> Suite:
    suite = build_suite(params, layout.root)
    write_json(layout.suite, suite)
    return suite


def step_infer(params: dict[str, Any], layout: Layout, progress: bool = False) -> list[Transcript]:
    suite = load_suite(layout)
    target = make_target(params, layout.root)
    simulator = make_simulator(params, layout.root)
    run = params["run"]
    total = len(suite.items) * suite.iterations
    with progress_bar("agent", total, progress) as tick:
        engine = Inference(
            suite,
            target,
            simulator,
            layout.transcripts,
            layout.root,
            concurrency=int(run.get("concurrency", 4)),
            timeout_s=float(run.get("timeout_s", 900)),
            on_done=tick,
        )
        return asyncio.run(engine.run())


def step_judge(params: dict[str, Any], layout: Layout, progress: bool = False) -> int:
    suite = load_suite(layout)
    judge = make_judge(params, layout.root)
    total = len(suite.items) * suite.iterations
    with progress_bar("judge", total, progress) as tick:
        verdicts = asyncio.run(
            run_judging(
                suite,
                layout.transcripts,
                layout.verdicts,
                judge,
                concurrency=int(params["run"].get("concurrency", 4)),
                on_done=tick,
            )
        )
    return len(verdicts)


def step_score(params: dict[str, Any], layout: Layout) -> Scorecard:
    card = build_scorecard(load_suite(layout), layout.transcripts, layout.verdicts, params)
    write_json(layout.scorecard, card)
    write_json(layout.metrics, metrics_of(card))
    return card


def step_report(layout: Layout, pngs: bool = True) -> None:
    from agenteval.report import write_report

    write_report(Scorecard.model_validate(read_json(layout.scorecard)), layout.reports, pngs)


def run_all(params: dict[str, Any], layout: Layout, progress: bool = False) -> Scorecard:
    step_suite(params, layout)
    step_infer(params, layout, progress)
    step_judge(params, layout, progress)
    card = step_score(params, layout)
    step_report(layout)
    return card
