"""One evaluation, one run: processes that log the same results into a brand-new sqlite store
at the same moment create the store once and leave exactly one MLflow run for the run key
(real MLflow, real sqlite, real processes released together)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from mlflow import MlflowClient

from agenteval.layout import Layout
from agenteval.params import load_params
from agenteval.pipeline import run_all

ROOT = Path(__file__).resolve().parents[1]
PROCESSES = 3

# Each child loads everything first, then waits for the go file, so the three reach the
# store within milliseconds of each other (creation, migration, lookup and create run).
CHILD = """
import json, sys, time
from pathlib import Path
from agenteval.layout import Layout
from agenteval.tracking.run import log_evaluation
import mlflow, mlflow.genai.datasets
run, uri, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
params = json.loads((run / "params.json").read_text())
while not go.exists():
    time.sleep(0.005)
result = log_evaluation(Layout.run_dir(Path(sys.argv[4]), run), params, uri=uri,
                        experiment="agenteval-race", traces=False)
print(json.dumps({"run_id": result.run_id, "created": result.created}))
"""


def test_runs_started_together_log_one_run_in_a_new_store(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    params = load_params(ROOT / "params.yaml", ['suite.ids=["quarterly_revenue_lookup"]'])
    params["tracking"]["enabled"] = True
    run_all(params, Layout.run_dir(ROOT, run_dir))
    (run_dir / "params.json").write_text(json.dumps(params))
    uri = f"sqlite:///{(tmp_path / 'store' / 'mlflow.db').as_posix()}"
    (tmp_path / "store").mkdir()
    go = tmp_path / "go"
    env = dict(os.environ, AGENTEVAL_LOCK_DIR=str(tmp_path / "locks"), PYTHONPATH=str(ROOT))
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(run_dir), uri, str(go), str(ROOT)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    time.sleep(1.0)
    go.touch()
    outcomes = [child.communicate(timeout=300) for child in children]
    for child, (_out, err) in zip(children, outcomes, strict=True):
        assert child.returncode == 0, err[-2000:]
    said = [json.loads(out.strip().splitlines()[-1]) for out, _ in outcomes]
    assert len({s["run_id"] for s in said}) == 1, said
    assert sorted(s["created"] for s in said) == [False] * (PROCESSES - 1) + [True]
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("agenteval-race")
    assert experiment is not None
    assert len(client.search_runs([experiment.experiment_id])) == 1
