"""params.yaml and --set are checked against the typed models before any work starts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agenteval.benchmarks.base import REGISTRY, params_model
from agenteval.params import DEFAULTS, ParamsError, load_params
from agenteval.schema.params import Params

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("target.param.top_k=2", "--set target.param.top_k: target.param: unknown key"),
        ("target.nonsense=1", "--set target.nonsense: unknown key"),
        ("bogus.x=1", "unknown section 'bogus'"),
        ("target.params.top_k=abc", "--set target.params.top_k: expected an integer, got 'abc'"),
        ("target.params.topk=3", "--set target.params.topk: unknown key (builtin knobs:"),
        ("tracking.enabled=maybe", "--set tracking.enabled: expected true or false"),
        ("suite.iterations=0", "--set suite.iterations: Input should be greater than or equal"),
        ("judge.weights.correctnes=1", "--set judge.weights.correctnes: Input should be"),
    ],
)
def test_a_wrong_override_names_the_key(override: str, expected: str) -> None:
    with pytest.raises(ParamsError) as caught:
        load_params(ROOT / "params.yaml", [override])
    assert expected in str(caught.value)


def test_a_wrong_value_in_the_file_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "params.yaml"
    path.write_text("suite:\n  iterations: 2\ntarget:\n  params:\n    top_k: many\n  agnt: x\n")
    with pytest.raises(ParamsError) as caught:
        load_params(path)
    lines = str(caught.value).splitlines()
    assert f"{path}:5: target.params.top_k: expected an integer, got 'many'" in lines
    assert any(line.startswith(f"{path}:6: target.agnt: unknown key") for line in lines)


def test_endpoint_request_fields_are_allowed_for_model_targets() -> None:
    params = load_params(
        None,
        [
            "target.kind=chat",
            "target.model=m",
            "target.base_url=http://127.0.0.1:8000/v1",
            "target.params.max_tokens=64",
        ],
    )
    assert params["target"]["params"]["max_tokens"] == 64


def test_the_shipped_params_file_and_the_defaults_are_valid() -> None:
    assert load_params(ROOT / "params.yaml")["target"]["kind"] == "builtin"
    assert Params.model_validate(DEFAULTS).target.params.top_k == 4


def test_the_cli_refuses_before_any_work(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["run", "--set", "target.params.top_k=abc", "--out", str(out), "--no-progress"]
    proc = subprocess.run(
        [sys.executable, "-m", "agenteval", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "target.params.top_k: expected an integer" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_the_params_json_schema_is_exported() -> None:
    exported = json.loads((ROOT / "eval/schemas/params.schema.json").read_text())
    # Params' sections and every registered benchmark's own (agenteval.benchmarks.base)
    assert set(exported["properties"]) == set(params_model().model_fields)
    assert set(exported["properties"]) == {*Params.model_fields, *REGISTRY}
