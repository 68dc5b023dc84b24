"""The exported JSON Schemas under eval/schemas/ match the models."""

from __future__ import annotations

from pathlib import Path

from agenteval.schema.export import export, stale

ROOT = Path(__file__).resolve().parents[1]


def test_exported_schemas_are_current() -> None:
    assert stale(ROOT / "eval/schemas") == [], "run `agenteval schema export`"


def test_export_then_check_round_trips(tmp_path: Path) -> None:
    written = export(tmp_path)
    assert {p.name for p in written} >= {"scenario.schema.json", "scorecard.schema.json"}
    assert stale(tmp_path) == []
    (tmp_path / "scenario.schema.json").write_text("{}")
    assert stale(tmp_path) == ["scenario"]
