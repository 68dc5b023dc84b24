"""Judging alongside inference (`agenteval run` with a code judge) writes exactly what the
separate judge stage writes, grades each transcript as its file holds it, and is reused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from agenteval.fileio import digest_of
from agenteval.layout import Layout, load_transcript, load_verdict_file, transcript_path
from agenteval.params import load_params
from agenteval.pipeline import overlaps_judging, step_infer, step_judge, step_suite

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = "[false_premise, incident_followups, empty_search_results]"


def files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*.json")}


def without_digest(folder: Path) -> dict[str, object]:
    return {
        name: {k: v for k, v in json.loads(text).items() if k != "transcript_digest"}
        for name, text in files(folder).items()
    }


def test_verdicts_alongside_inference_equal_the_judge_stage(tmp_path: Path) -> None:
    params = load_params(
        ROOT / "params.yaml", [f"suite.ids={SCENARIOS}", "judge.controls_per_run=6"]
    )
    assert overlaps_judging(params)
    streamed = Layout.run_dir(ROOT, tmp_path / "streamed")
    step_suite(params, streamed)
    step_infer(params, streamed, judge_too=True)
    staged = Layout.run_dir(ROOT, tmp_path / "staged")
    shutil.copytree(
        streamed.data, staged.data, ignore=shutil.ignore_patterns("verdicts", "controls")
    )
    step_judge(params, staged)
    assert files(streamed.verdicts) and files(streamed.verdicts) == files(staged.verdicts)
    assert len(files(streamed.controls)) == 7  # six graded controls and their index
    # A control's transcript is rebuilt by each stage, its tool latencies measured anew:
    # everything else of its verdict is the same.
    assert without_digest(streamed.controls) == without_digest(staged.controls)


def test_the_transcript_judged_is_the_one_its_file_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A secret the agent says is scrubbed from the file; the verdict names the scrubbed
    transcript, so a resumed judge stage finds it valid and does not grade it again."""
    secret = "sk-live-Zq8Rt3Vw6Yb9Nc2Md5Kf"
    monkeypatch.setenv("AGENT_TOKEN", secret)
    shutil.copytree(ROOT / "eval", tmp_path / "eval")
    replies = tmp_path / "eval" / "agents" / "default" / "replies.yaml"
    said = {k: f"{v} (token {secret})" for k, v in yaml.safe_load(replies.read_text()).items()}
    replies.write_text(yaml.safe_dump(said), encoding="utf-8")
    params = load_params(ROOT / "params.yaml", ["suite.ids=[misspelled_filename]"])
    layout = Layout.run_dir(tmp_path, tmp_path / "run")
    step_suite(params, layout)
    step_infer(params, layout, judge_too=True)
    stored = load_transcript(layout.transcripts, "misspelled_filename", 0)
    assert stored is not None and "[REDACTED]" in stored.turns[0].response
    assert secret not in stored.model_dump_json()
    verdict_path = transcript_path(layout.verdicts, "misspelled_filename", 0)
    verdict = load_verdict_file(verdict_path)
    assert verdict is not None and verdict.transcript_digest == digest_of(stored)
    before = verdict_path.stat().st_mtime_ns
    step_judge(params, layout)
    assert verdict_path.stat().st_mtime_ns == before  # still valid: reused, not regraded


def test_a_judge_on_an_endpoint_waits_for_inference() -> None:
    params = load_params(ROOT / "params.yaml", ["judge.kind=llm"])
    assert not overlaps_judging(params)
