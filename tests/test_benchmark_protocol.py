"""A new benchmark is one folder, one pipeline and one registry line
(agenteval.benchmarks.base): a toy one, written here into tmp_path, runs through
`python -m stages.benchmark NAME STEP`, is refused on bad params as every stage is, is gated
by its own rule through benchmarks.gate and has its section in the exported params schema,
with no other file of the project changed."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from agenteval.benchmarks import base
from agenteval.layout import Layout
from stages.common import exit_status

TOY = """
from types import MappingProxyType

from pydantic import BaseModel, ConfigDict, Field

from agenteval.benchmarks.base import Failure, Outcome, Step
from agenteval.benchmarks.verdict import GateResult
from agenteval.fileio import read_json, write_json
from agenteval.measured import Coverage


class ToySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    words: list[str] = Field(default_factory=lambda: ["a"], min_length=1)
    floor: int = Field(1, ge=0, description="Fewest long words the gate accepts.")


class Refused(ValueError):
    pass


def count(settings, ctx, layout):
    if "stop" in settings.words:
        raise Refused("a word the toy refuses")
    long = [w for w in settings.words if len(w) > 3]
    layout.reports.mkdir(parents=True, exist_ok=True)
    metrics = {"kind": "toy", "long": len(long), "concurrency": ctx.concurrency}
    write_json(layout.reports / "results.json", metrics)
    write_json(layout.metrics, metrics)
    coverage = Coverage(0 if long else len(settings.words), len(settings.words), "no long word")
    return Outcome((f"{len(long)} long of {len(settings.words)}",), coverage)


class Toy:
    name = "toy"
    Settings = ToySettings
    schemas = MappingProxyType({"toy_words": ToySettings})
    steps = (Step("count", count, (Failure(Refused, 2, "refused"),)),)

    def metrics(self, layout):
        return read_json(layout.metrics)

    def gate(self, current, baseline, tolerance):
        passed = current["long"] >= baseline["long"]
        return GateResult(passed, 0.0, [{"name": "long", "ok": passed}])


BENCHMARK = Toy()
"""


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The toy's folder, its pipeline and its registry line; the working directory its root."""
    (tmp_path / "toybench").mkdir()
    (tmp_path / "toybench/__init__.py").write_text("")
    (tmp_path / "toybench/benchmark.py").write_text(TOY)
    pipeline = tmp_path / "pipelines/toy"
    pipeline.mkdir(parents=True)
    (pipeline / "dvc.yaml").write_text(
        "stages:\n  count:\n    wdir: ../..\n    cmd: python -m stages.benchmark toy count\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(base.REGISTRY, "toy", "toybench.benchmark:BENCHMARK")
    monkeypatch.chdir(tmp_path)
    return pipeline


def stage(params: str, pipeline: Path, argv: list[str]) -> int:
    from stages.benchmark import main

    (pipeline / "params.yaml").write_text(textwrap.dedent(params))
    return exit_status(lambda: main(argv))


def test_a_toy_benchmark_runs_through_the_one_stage_runner(
    toy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cmd = (toy / "dvc.yaml").read_text().split("cmd: python -m stages.benchmark ")[1].split()
    params = "suite:\n  kind: toy\nrun:\n  concurrency: 3\ntoy:\n  words: [tiny, enormous, ox]\n"
    assert stage(params, toy, cmd) == 0
    said = capsys.readouterr()
    assert said.out.splitlines() == ["count: 2 long of 3"], said
    layout = Layout(toy.parent.parent, toy / "data", toy / "reports")
    metrics = base.benchmark("toy").metrics(layout)
    assert metrics == {"kind": "toy", "long": 2, "concurrency": 3}  # the RunContext's fact
    # the gate of benchmarks.gate reaches the toy's own rule through the registry
    from agenteval.benchmarks.gate import gate

    assert gate(metrics, {**metrics, "long": 2}).passed
    assert not gate(metrics, {**metrics, "long": 5}).passed
    # its section and its input file's schema are exported from the registry
    assert "toy" in base.params_model().model_fields and "toy_words" in base.schemas()


@pytest.mark.parametrize(
    ("params", "argv", "status", "said"),
    [
        (
            "suite:\n  kind: toy\ntoy:\n  words: []\n",
            ["toy", "count"],
            2,
            "params.yaml:4: toy.words",
        ),
        (
            "suite:\n  kind: toy\ntoy:\n  nosuch: 1\n",
            ["toy", "count"],
            2,
            "toy.nosuch: unknown key",
        ),
        ("suite:\n  kind: qa\n", ["toy", "count"], 2, "suite.kind is 'qa'; this runs 'toy'"),
        ("suite:\n  kind: toy\n", ["toy", "nosuch"], 2, "has no step 'nosuch' (steps: count)"),
        ("suite:\n  kind: toy\n", ["nosuch", "count"], 2, "unknown benchmark 'nosuch'"),
        ("suite:\n  kind: toy\n", ["toy"], 2, "usage: python -m stages.benchmark NAME STEP"),
        ("suite:\n  kind: toy\ntoy:\n  words: [stop]\n", ["toy", "count"], 2, "refused: a word"),
        ("suite:\n  kind: toy\ntoy:\n  words: [ox]\n", ["toy", "count"], 3, "no long word"),
    ],
    ids=[
        "empty",
        "unknown-key",
        "other-kind",
        "no-step",
        "no-benchmark",
        "usage",
        "refused",
        "nothing-measured",
    ],
)
def test_a_toy_benchmark_fails_with_the_one_mapping_of_statuses(
    toy: Path, capsys: pytest.CaptureFixture[str], params: str, argv: list[str], status: int,
    said: str,
) -> None:  # fmt: skip
    assert stage(params, toy, argv) == status
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err, err
