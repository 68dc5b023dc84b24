"""End to end: `agenteval run` on the shipped suite, offline, and the scorecard re-derived."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agenteval.schema.scorecard import Scorecard
from agenteval.scoring import ScoringRules, capped, summarize, turn_score

ROOT = Path(__file__).resolve().parents[1]


def agenteval(
    *args: str, cwd: Path = ROOT, track: bool = False, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONUTF8="1", **(env_extra or {}))
    if args[:1] == ("run",) and "--resume" not in args and not track:
        args = (*args, "--set", "tracking.enabled=false")  # MLflow has its own tests
    return subprocess.run(
        [sys.executable, "-m", "agenteval", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run")
    done = agenteval("run", "--out", str(out), "--no-progress")
    assert done.returncode == 0, done.stderr
    return out


def test_run_writes_reports(full_run: Path) -> None:
    for name in ("scorecard.json", "summary.md", "metrics.json", "params.json"):
        assert (full_run / name).is_file(), name
    card = Scorecard.model_validate_json((full_run / "scorecard.json").read_text())
    assert card.summary.total >= 24
    assert 0 < card.summary.passed < card.summary.total  # a baseline: passes some, fails some
    assert card.config["judge"]["kind"] == "code" and card.config["target"]["kind"] == "builtin"
    for key in ("scenario_set_digest", "corpus_digest", "params_digest"):
        assert len(card.config[key]) == 64
    transcripts = list((full_run / "data/transcripts").glob("*/0.json"))
    verdicts = list((full_run / "data/verdicts").glob("*/0.json"))
    assert len(transcripts) == len(verdicts) == card.summary.total
    summary = (full_run / "summary.md").read_text()
    assert "## By category" in summary and "Root cause:" in summary


def test_scorecard_recomputes_from_its_own_dimension_scores(full_run: Path) -> None:
    card = Scorecard.model_validate_json((full_run / "scorecard.json").read_text())
    rules = ScoringRules.from_params(json.loads((full_run / "params.json").read_text())["judge"])
    for result in card.scenarios:
        if result.score is None:
            continue
        turn_scores = [turn_score(t.scores, rules) for t in result.turns]
        assert [t.score for t in result.turns] == turn_scores
        mean = round(sum(s for s in turn_scores if s is not None) / len(turn_scores), 4)
        assert result.score == pytest.approx(mean, abs=1e-4)
        passes = mean >= 6.0 and all((t.scores["correctness"] or 0) >= 4 for t in result.turns)
        assert (result.status == "PASS") == passes, result.id
    again = summarize(card.scenarios, rules)
    assert again.model_dump() == card.summary.model_dump()
    judged = [capped(r.status, r.score, rules) for r in card.scenarios]
    scores = [s for s in judged if s is not None]
    assert card.summary.avg_score == pytest.approx(sum(scores) / len(scores), abs=1e-4)


def test_metrics_are_flat_finite_numbers(full_run: Path) -> None:
    metrics = json.loads((full_run / "metrics.json").read_text())
    assert metrics["total"] >= 24 and "category.rag_quality.pass_rate" in metrics
    assert all(isinstance(v, (int, float)) and v == v for v in metrics.values())


def test_filters_set_and_determinism(tmp_path: Path, full_run: Path) -> None:
    out = tmp_path / "one"
    done = agenteval(
        "run", "--out", str(out), "--no-progress", "--category", "rag_quality",
        "--set", "target.params.top_k=8",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    card = Scorecard.model_validate_json((out / "scorecard.json").read_text())
    assert {r.category for r in card.scenarios} == {"rag_quality"}
    assert card.config["target"]["details"]["knobs"]["top_k"] == 8
    # Same configuration twice -> byte-identical scorecard (no timestamps inside).
    twice = tmp_path / "two"
    agenteval("run", "--out", str(twice), "--no-progress", "--category", "rag_quality",
              "--set", "target.params.top_k=8")  # fmt: skip
    assert (out / "scorecard.json").read_bytes() == (twice / "scorecard.json").read_bytes()


def test_resume_runs_only_what_is_missing(tmp_path: Path) -> None:
    out = tmp_path / "r"
    assert (
        agenteval("run", "--out", str(out), "--no-progress", "--category", "personality").returncode
        == 0
    )
    transcripts = sorted((out / "data/transcripts").glob("*/0.json"))
    victim, kept = transcripts[0], transcripts[1]
    victim.unlink()
    kept_mtime = kept.stat().st_mtime_ns
    done = agenteval("run", "--resume", str(out), "--no-progress")
    assert done.returncode == 0, done.stderr
    assert victim.is_file() and kept.stat().st_mtime_ns == kept_mtime


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--set", "nonsense"], "key=value"),
        (["--set", "bogus.x=1"], "unknown section"),
        (["--scenario", "no_such_scenario"], "--scenario no_such_scenario: no scenario file"),
        (["--set", "target.kind=warp"], "unknown target kind"),
    ],
)
def test_bad_configuration_exits_2_without_traceback(
    tmp_path: Path, args: list[str], fragment: str
) -> None:
    done = agenteval("run", "--out", str(tmp_path / "x"), "--no-progress", *args)
    assert done.returncode == 2 and fragment in done.stderr and "Traceback" not in done.stderr


def test_version_and_help() -> None:
    assert agenteval("--version").stdout.startswith("agenteval ")
    assert "validate" in agenteval("--help").stdout


def test_run_logs_to_mlflow(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    done = agenteval(
        "run", "--out", str(tmp_path / "t"), "--no-progress", "--scenario", "honest_about_limits",
        track=True, env_extra={"MLFLOW_TRACKING_URI": f"sqlite:///{store}"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "MLflow: logged run" in done.stdout and store.is_file()
    again = agenteval(
        "run", "--resume", str(tmp_path / "t"), "--no-progress",
        env_extra={"MLFLOW_TRACKING_URI": f"sqlite:///{store}"},
    )  # fmt: skip
    assert "already logged as" in again.stdout, again.stdout + again.stderr


def test_missing_pinned_documents_are_skipped_and_the_run_goes_on(tmp_path: Path) -> None:
    import shutil

    from agenteval.layout import Layout
    from agenteval.params import load_params
    from agenteval.pipeline import run_all

    shutil.copytree(ROOT / "eval", tmp_path / "eval")  # no data/corpora: nothing fetched here
    params = load_params(ROOT / "params.yaml", ["suite.categories=[real_world, personality]"])
    card = run_all(params, Layout.run_dir(tmp_path, tmp_path / "out"))
    by_category: dict[str, set[str]] = {}
    for result in card.scenarios:
        by_category.setdefault(result.category, set()).add(result.status)
    assert by_category["real_world"] == {"SKIPPED_NO_DOCUMENT"}
    assert by_category["personality"] & {"PASS", "FAIL"}
    assert card.summary.skipped_no_document == len(
        [r for r in card.scenarios if r.category == "real_world"]
    )


def test_stored_results_are_not_reused_across_code_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resume and persisted DVC outputs reuse a transcript or verdict only when the code that
    produced it is the same; otherwise a fixed agent or judge would leave stale grades."""
    from agenteval.judges import code as code_judge
    from agenteval.layout import Layout
    from agenteval.params import load_params
    from agenteval.pipeline import run_all
    from agenteval.targets import builtin

    params = load_params(ROOT / "params.yaml", ["suite.ids=[honest_about_limits]"])
    layout = Layout.run_dir(ROOT, tmp_path)
    run_all(params, layout)
    transcript = tmp_path / "data/transcripts/honest_about_limits/0.json"
    verdict = tmp_path / "data/verdicts/honest_about_limits/0.json"
    before = (transcript.stat().st_mtime_ns, verdict.stat().st_mtime_ns)
    run_all(params, layout)  # same code: both reused
    assert (transcript.stat().st_mtime_ns, verdict.stat().st_mtime_ns) == before
    monkeypatch.setattr(builtin, "code_of", lambda _module: {"targets/builtin.py": "other"})
    monkeypatch.setattr(code_judge, "code_of", lambda _module: {"judges/code.py": "other"})
    run_all(params, layout)
    assert transcript.stat().st_mtime_ns != before[0] and verdict.stat().st_mtime_ns != before[1]


def test_offline_transcripts_and_verdicts_are_byte_identical_across_runs(tmp_path: Path) -> None:
    """The builtin agent's wall-clock times measure this machine, not an agent: they are not
    recorded, so two offline runs (and a fresh clone's dvc repro) write the same bytes."""
    from agenteval.layout import Layout
    from agenteval.params import load_params
    from agenteval.pipeline import run_all

    params = load_params(ROOT / "params.yaml", ["suite.ids=[quarterly_revenue_lookup, empty_file]"])
    run_all(params, Layout.run_dir(ROOT, tmp_path / "a"))
    run_all(params, Layout.run_dir(ROOT, tmp_path / "b"))
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a/data").rglob("*.json"))
    # suite.json, two transcripts, two verdicts, the (empty) index of mixed-in controls
    assert len(files) == 6 and Path("data/controls/mixed.json") in files
    for rel in files:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel
    transcript = json.loads((tmp_path / "a/data/transcripts/empty_file/0.json").read_text())
    assert transcript["started_at"] is None and transcript["turns"][0]["latency_ms"] is None
