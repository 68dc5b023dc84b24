"""`agenteval health`: classes from real multi-run histories and from scorecards with known
classes, headroom, tier proposals, review transcripts, MLflow logging and refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gate_cards import make_card, with_config
from lifecycle_runs import HEALTH_IDS, MAIN, ROOT, STRONG, WEAK, run_builtin
from typer.testing import CliRunner

from agenteval.cli import app
from agenteval.fileio import write_json
from agenteval.health.classify import HealthRules, min_stable_iterations, source_share
from agenteval.health.history import NotComparable, load_history
from agenteval.health.report import build_report


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """Three builtin models, 12 judged iterations each: enough for stable classes."""
    base = tmp_path_factory.mktemp("health")
    return {
        "main": [run_builtin(base / f"main{s}", HEALTH_IDS, 6, MAIN, seed=s) for s in (0, 1)],
        "weak": [run_builtin(base / "weak", HEALTH_IDS, 12, WEAK)],
        "strong": [run_builtin(base / "strong", HEALTH_IDS, 12, STRONG)],
    }


def _health(history: dict[str, list[Path]], out: Path, *extra: str) -> tuple[int, str]:
    args = ["health", *map(str, history["main"]), "--out", str(out), "--no-track"]
    for run in history["strong"]:
        args += ["--strong", str(run)]
    for run in history["weak"]:
        args += ["--weak", str(run)]
    result = CliRunner().invoke(app, [*args, *extra])
    return result.exit_code, result.output


def test_real_runs_get_their_known_classes(history: dict[str, list[Path]], tmp_path: Path) -> None:
    code, output = _health(history, tmp_path)
    assert code == 0, output
    report = json.loads((tmp_path / "health.json").read_text())
    flags = {sid: row["flags"] for sid, row in report["scenarios"].items()}
    assert flags["admit_missing_benefit"] == ["saturated"]
    assert flags["html_prose_lookup"] == ["saturated"]
    assert flags["csv_aggregation"] == ["always_fail"]
    assert flags["hallucination_resistance"] == ["always_fail", "inverted"]
    assert flags["minutes_pronoun_chain"] == ["flaky"]
    assert flags["no_reindex_followup"] == ["flaky"]
    inverted = report["scenarios"]["hallucination_resistance"]["inverted"]
    pairs = {(x["weaker"], x["stronger"]) for x in inverted}
    assert pairs == {("weak", "main"), ("weak", "strong")}
    assert all(x["p_holm"] < 0.05 for x in inverted)
    flaky = report["scenarios"]["minutes_pronoun_chain"]
    k, n = flaky["models"]["main"]["k"], flaky["models"]["main"]["n"]
    # n counts judged iterations: the code judge defers a reply it cannot settle
    assert 6 <= n <= 12 and 0 < k < n
    assert flaky["flip_rate"] == pytest.approx(2 * k * (n - k) / (n * (n - 1)), abs=1e-4)
    assert flaky["snr"] is not None and flaky["snr"] > 0  # weak fails, strong passes
    assert report["counts"] == {
        "scenarios": 6, "always_fail": 2, "inverted": 1, "flaky": 2, "saturated": 2,
    }  # fmt: skip


def test_headroom_mde_sources_and_review(history: dict[str, list[Path]], tmp_path: Path) -> None:
    assert _health(history, tmp_path)[0] == 0
    report = json.loads((tmp_path / "health.json").read_text())
    rag = report["categories"]["rag_quality"]  # html_prose passes, the other two fail
    assert rag["model"] == "strong" and rag["scenarios"] == 3
    assert rag["judged_pass_rate"]["value"] == pytest.approx(1 / 3, abs=1e-4)
    assert rag["headroom"] == pytest.approx(2 / 3, abs=1e-4) and not rag["no_headroom"]
    assert report["categories"]["personality"]["no_headroom"]  # 12/12 on the strongest
    assert report["mde"]["judged_pass_rate"]["mde"] is not None
    assert report["sources"]["scenarios"] >= 56 and report["sources"]["share"] is not None
    review = {item["id"]: item for item in report["review"]}
    assert set(review) == {"csv_aggregation", "hallucination_resistance"}
    reads = review["hallucination_resistance"]["read"]
    assert {(r["model"], r["status"]) for r in reads} >= {("strong", "FAIL"), ("weak", "PASS")}
    for read in reads:
        assert Path(read["transcript"]).is_file()
        assert read["turn"]["user"] and "query_documents" in read["turn"]["tools"]
    markdown = (tmp_path / "health.md").read_text()
    assert "## For review: always-fail and inverted" in markdown
    assert str(reads[0]["transcript"]) in markdown


def test_tier_moves_are_proposed_never_applied(
    history: dict[str, list[Path]], tmp_path: Path
) -> None:
    tiers = tmp_path / "tiers.yaml"
    tiers.write_text(
        "smoke:\n  minutes_pronoun_chain: was stable once\n"
        "full:\n  admit_missing_benefit: a reason\n  csv_aggregation: a reason\n",
        encoding="utf-8",
    )
    before = tiers.read_bytes()
    code, output = _health(history, tmp_path, "--tiers", str(tiers))
    assert code == 0, output
    report = json.loads((tmp_path / "health.json").read_text())
    moves = {m["id"]: (m["from"], m["to"]) for m in report["tier_moves"]}
    assert moves["admit_missing_benefit"] == ("full", "smoke")  # saturated: cheaper lane
    assert moves["html_prose_lookup"] == ("unassigned", "smoke")
    assert moves["csv_aggregation"] == ("full", "backlog")  # always-fail
    assert moves["minutes_pronoun_chain"] == ("smoke", "full")  # flaky leaves smoke
    assert "no_reindex_followup" not in moves  # flaky, but not in smoke
    assert tiers.read_bytes() == before
    assert "propose csv_aggregation: full -> backlog" in output


def test_health_is_logged_to_mlflow_once(
    history: dict[str, list[Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    args = ["health", str(history["main"][0]), "--out", str(tmp_path)]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "MLflow: logged run" in first.output
    again = CliRunner().invoke(app, args)
    assert "already logged as" in again.output
    client = MlflowClient(uri)
    runs = client.search_runs(
        [client.get_experiment_by_name("agenteval").experiment_id],
        filter_string="tags.`agenteval.report` = 'health'",
    )
    assert len(runs) == 1
    assert runs[0].data.metrics["health.scenarios"] == 6.0
    names = {a.path for a in client.list_artifacts(runs[0].info.run_id)}
    assert names == {"health.json", "health.md"}


# ----------------------------------------------------------------- scorecards with known classes


def _cards(tmp_path: Path, name: str, rows: dict[str, str], **kw: object) -> str:
    path = tmp_path / f"{name}.json"
    write_json(path, make_card(rows, **kw))  # type: ignore[arg-type]
    return str(path)


def _report(main: list[str], strong: list[str] = (), weak: list[str] = ()) -> dict:  # type: ignore[assignment,type-arg]
    return build_report(load_history(main, strong, weak), HealthRules())


def test_stable_classes_need_enough_iterations(tmp_path: Path) -> None:
    assert min_stable_iterations(0.2) == 11
    ten = _report([_cards(tmp_path, "ten", {"a": "P" * 10, "b": "F" * 10})])
    eleven = _report([_cards(tmp_path, "eleven", {"a": "P" * 11, "b": "F" * 11})])
    assert ten["scenarios"]["a"]["flags"] == [] and ten["scenarios"]["b"]["flags"] == []
    assert ten["scenarios"]["a"]["models"]["main"]["stability"] == "uncertain"
    assert eleven["scenarios"]["a"]["flags"] == ["saturated"]
    assert eleven["scenarios"]["b"]["flags"] == ["always_fail"]


def test_always_fail_is_judged_on_the_strongest_model(tmp_path: Path) -> None:
    main = _cards(tmp_path, "main", {"a": "F" * 12, "b": "F" * 12})
    strong = _cards(tmp_path, "strong", {"a": "F" * 12, "b": "P" * 12})
    report = _report([main], [strong])
    assert report["scenarios"]["a"]["flags"] == ["always_fail"]
    assert report["scenarios"]["b"]["flags"] == []  # the strong model passes it: headroom


def test_inversion_must_beat_noise_after_holm(tmp_path: Path) -> None:
    weak = _cards(tmp_path, "weak", {"a": "PPP", "b": "P" * 12, "c": "PFPF"})
    main = _cards(tmp_path, "main", {"a": "FFF", "b": "F" * 12, "c": "FPFP"})
    report = _report([main], weak=[weak])
    # 3/3 vs 0/3: one-sided Fisher p = 0.05, not below alpha; 12/12 vs 0/12 is.
    assert "inverted" not in report["scenarios"]["a"]["flags"]
    assert report["scenarios"]["b"]["flags"] == ["always_fail", "inverted"]
    assert report["scenarios"]["c"]["flags"] == []


def test_flaky_needs_an_interval_inside_the_middle_band(tmp_path: Path) -> None:
    report = _report([_cards(tmp_path, "m", {"a": "PF" * 6, "b": "PFFFFF" * 2})])
    assert report["scenarios"]["a"]["flags"] == ["flaky"]
    assert report["scenarios"]["a"]["flip_rate"] == pytest.approx(2 * 6 * 6 / (12 * 11), abs=1e-4)
    assert report["scenarios"]["b"]["flags"] == []  # 2/12: not clearly flaky, not stable


def test_older_scenario_versions_are_left_out(tmp_path: Path) -> None:
    old = _cards(tmp_path, "old", {"a": "F" * 6}, digests={"a": "v1"})
    new = _cards(tmp_path, "new", {"a": "P" * 12}, digests={"a": "v2"})
    report = _report([old, new])
    assert report["scenarios"]["a"]["models"]["main"]["n"] == 12
    assert report["scenarios"]["a"]["flags"] == ["saturated"]
    assert any("older version" in w for w in report["warnings"])


def test_mixed_instruments_are_refused(tmp_path: Path) -> None:
    main = _cards(tmp_path, "main", {"a": "PPP"})
    other = _cards(tmp_path, "other", {"a": "PPP"}, config=with_config("judge", model="j2"))
    with pytest.raises(NotComparable, match=r"judge\.model"):
        load_history([main], weak=[other])
    result = CliRunner().invoke(app, ["health", main, "--weak", other, "--no-track"])
    assert result.exit_code == 3 and "not comparable" in result.output
    drift = load_history([main], weak=[other], allow_drift=True)
    assert any("instrument differs" in w for w in drift.warnings)


def test_one_model_group_must_be_one_agent_model(tmp_path: Path) -> None:
    a = _cards(tmp_path, "a", {"a": "PPP"})
    b = _cards(tmp_path, "b", {"a": "PPP"}, config=with_config("target", model="other"))
    with pytest.raises(NotComparable, match="not one agent model"):
        load_history([a, b])


def test_unreadable_runs_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["health", str(tmp_path / "nope"), "--no-track"])
    assert result.exit_code == 2
    assert "not a run directory" in result.output


def test_source_share_counts_sessions_and_issues() -> None:
    share = source_share(["session", "issue: https://x/1", "hand", None, "synthetic", "Session"])
    assert share["session_or_issue"] == 3 and share["scenarios"] == 6
    assert share["share"] == pytest.approx(0.5)
    assert share["kinds"] == {"hand": 1, "issue": 1, "session": 2, "synthetic": 1, "unspecified": 1}
    assert source_share([])["share"] is None


def test_shipped_suite_sources_are_counted(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    text = (ROOT / "eval/scenarios/personality/concise_answer.yaml").read_text(encoding="utf-8")
    (suite / "a.yaml").write_text(text.replace("id: concise_answer", "id: a\nsource: session"))
    (suite / "b.yaml").write_text(text.replace("id: concise_answer", "id: b\nsource: hand"))
    main = _cards(tmp_path, "m", {"a": "PPP"})
    result = CliRunner().invoke(
        app, ["health", main, "--scenarios", str(suite), "--out", str(tmp_path), "--no-track"]
    )
    assert result.exit_code == 0, result.output
    sources = json.loads((tmp_path / "health.json").read_text())["sources"]
    assert (sources["session_or_issue"], sources["scenarios"]) == (1, 2)


def test_runs_can_be_mlflow_run_ids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    card = tmp_path / "reports" / "scorecard.json"
    write_json(card, make_card({"a": "F" * 12, "b": "P" * 12}))
    client = MlflowClient(uri)  # explicit: another test may have set a process-wide URI
    experiment = client.create_experiment("e", artifact_location=(tmp_path / "art").as_uri())
    run = client.create_run(experiment)
    client.log_artifact(run.info.run_id, str(card), artifact_path="reports")
    client.set_terminated(run.info.run_id)
    report = build_report(load_history([run.info.run_id]), HealthRules())
    assert report["scenarios"]["a"]["flags"] == ["always_fail"]
    (item,) = report["review"]
    assert item["read"][0]["mlflow"].endswith("session a/0")  # where the transcript is
