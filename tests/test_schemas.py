"""The exported JSON Schemas under eval/schemas/ and docs/configuration.md match the models."""

from __future__ import annotations

import typing
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from agenteval.benchmarks.base import params_model, schemas
from agenteval.cli import app
from agenteval.schema.export import export, stale
from agenteval.schema.reference import render_reference, stale_reference

ROOT = Path(__file__).resolve().parents[1]
# Params with every registered benchmark's section; their input files' models beside.
PARAMS, BENCHMARKS = params_model(), schemas()


def test_exported_schemas_are_current() -> None:
    assert stale(ROOT / "eval/schemas", PARAMS, BENCHMARKS) == [], "run `agenteval schema export`"


def test_export_then_check_round_trips(tmp_path: Path) -> None:
    written = export(tmp_path, PARAMS, BENCHMARKS)
    names = {p.name for p in written}
    assert names >= {"scenario.schema.json", "scorecard.schema.json"}
    # A registered benchmark's files come from the registry, not from a list in schema/.
    assert {f"{name}.schema.json" for name in BENCHMARKS} <= names
    assert "throughput_workload.schema.json" in names
    assert stale(tmp_path, PARAMS, BENCHMARKS) == []
    (tmp_path / "scenario.schema.json").write_text("{}")
    assert stale(tmp_path, PARAMS, BENCHMARKS) == ["scenario"]


# -- docs/configuration.md, generated from the params models ---------------------------------


def leaf_keys(model: type[BaseModel], prefix: str) -> Iterator[tuple[str, object]]:
    """Every key a params file can set, with the model's default (containers of models as
    `key[].field` and `key.<name>.field`, an optional section's as `key.field`)."""
    for name, field in model.model_fields.items():
        key = f"{prefix}.{name}" if prefix else name
        annotation = field.annotation
        args = typing.get_args(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from leaf_keys(annotation, key)
            continue
        yield key, field.get_default(call_default_factory=True)
        for item in args:
            if isinstance(item, type) and issubclass(item, BaseModel):
                origin = typing.get_origin(annotation)
                suffix = {list: "[]", dict: ".<name>"}.get(origin, "")  # type: ignore[call-overload]
                yield from leaf_keys(item, key + suffix)


def test_the_configuration_reference_is_current_and_lists_every_key() -> None:
    page = ROOT / "docs/configuration.md"
    assert not stale_reference(page, PARAMS), "run `agenteval schema export`"
    rows = {
        line.split("|")[1].strip(" `"): line
        for line in render_reference(PARAMS).splitlines()
        if line.startswith("| `")
    }
    keys = dict(leaf_keys(PARAMS, ""))
    assert "throughput.repeats" in keys and "code_retrieval.depth" in keys
    assert set(rows) == set(keys)
    assert "| `4` |" in rows["run.concurrency"] and "int, ≥ 1" in rows["run.concurrency"]
    assert "| `null` |" in rows["tracking.uri"] and "&lt;repository root>" in rows["tracking.uri"]
    assert "one of `openai`, `anthropic` or null" in rows["judge.protocol"]
    assert "| required |" in rows["run.prices.<name>.input_per_mtok"]


def test_schema_check_fails_on_a_stale_reference_and_names_the_fix(tmp_path: Path) -> None:
    runner = CliRunner()
    where = ["--out", str(tmp_path / "schemas"), "--docs", str(tmp_path / "configuration.md")]
    assert runner.invoke(app, ["schema", "export", *where]).exit_code == 0
    assert runner.invoke(app, ["schema", "check", *where]).exit_code == 0
    page = tmp_path / "configuration.md"
    page.write_text(page.read_text().replace("Repeats of every scenario.", "Repeats."))
    done = runner.invoke(app, ["schema", "check", *where])
    assert done.exit_code == 1
    assert f"{page}; run `agenteval schema export`" in done.output


def test_schema_check_in_a_project_without_the_reference_checks_the_schemas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project evaluated with agenteval (init-ci's workflow runs `schema check`) keeps the
    schemas, not agenteval's own docs/configuration.md; asked for by --docs, it is checked."""
    runner = CliRunner()
    monkeypatch.chdir(tmp_path)
    out = ["--out", "eval/schemas"]
    assert runner.invoke(app, ["schema", "export", *out, "--docs", "elsewhere.md"]).exit_code == 0
    done = runner.invoke(app, ["schema", "check", *out])
    assert done.exit_code == 0 and done.output.strip() == "schemas are current"
    asked = runner.invoke(app, ["schema", "check", *out, "--docs", "docs/configuration.md"])
    assert asked.exit_code == 1 and "docs/configuration.md" in asked.output
    (tmp_path / "eval/schemas/params.schema.json").write_text("{}")
    assert runner.invoke(app, ["schema", "check", *out]).exit_code == 1
