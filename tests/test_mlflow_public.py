"""agenteval reaches MLflow only through its public interfaces: no import of the store's
modules, of tracing internals, or of any `_`-prefixed name (issue 30). An MLflow upgrade
within the declared range can then change MLflow's tables and internals without breaking
agenteval; the tests run on the lowest and the newest version declared (`.ci/run`)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [*sorted((ROOT / "agenteval").rglob("*.py")), *sorted((ROOT / "stages").glob("*.py"))]

# MLflow's documented modules (its API reference): the package itself, the client, the
# entities, the exceptions, artifacts, the GenAI datasets. Everything else (mlflow.store,
# mlflow.tracing internals, mlflow.utils, mlflow.server, ...) may change in any release.
PUBLIC = {
    "mlflow",
    "mlflow.client",
    "mlflow.tracking",
    "mlflow.entities",
    "mlflow.exceptions",
    "mlflow.artifacts",
    "mlflow.genai",
    "mlflow.genai.datasets",
    "mlflow.genai.scorers",  # the scorer decorator (agenteval judges as MLflow scorers)
    "mlflow.genai.judges",  # make_judge (judge.kind: mlflow)
    # SIMBAAlignmentOptimizer, as MLflow's judge-alignment docs import it (judge align)
    "mlflow.genai.judges.optimizers",
}


def mlflow_imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every import of an mlflow module in `path`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "mlflow":
                    found.append((node.lineno, alias.name, []))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            module = node.module
            if module.split(".")[0] == "mlflow":
                found.append((node.lineno, module, [a.name for a in node.names]))
    return found


def test_only_public_mlflow_modules_and_names_are_imported() -> None:
    wrong = []
    for path in SOURCES:
        for line, module, names in mlflow_imports(path):
            where = f"{path.relative_to(ROOT)}:{line}"
            if module not in PUBLIC:
                wrong.append(f"{where}: {module} is not a public MLflow module")
            wrong += [f"{where}: {module}.{n} is private" for n in names if n.startswith("_")]
    assert not wrong, "\n".join(wrong)


def test_no_private_attribute_of_mlflow_is_used() -> None:
    """`mlflow.x._private`, `store._method(...)`: nothing reached through an mlflow object
    may start with an underscore either (a call into a store's internals is how rows were
    written straight into MLflow's tables before)."""
    reached = re.compile(r"\bmlflow(?:\.\w+)*\._\w+|\b(?:store|client|dataset)\._[a-z]\w*")
    wrong = [
        f"{path.relative_to(ROOT)}:{n}: {m.group(0)}"
        for path in SOURCES
        for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for m in reached.finditer(text)
    ]
    assert not wrong, "\n".join(wrong)


def test_the_tracking_edge_writes_no_rows_of_its_own() -> None:
    """The issue's own check: no ORM models, no INSERT statements under agenteval/tracking."""
    pattern = re.compile(r"dbmodels|insert\(")
    hits = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "agenteval" / "tracking").rglob("*.py"))
        for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(text)
    ]
    assert not hits, hits


def test_the_scan_finds_what_it_forbids(tmp_path: Path) -> None:
    """The checks above are not vacuous: the old ways are caught."""
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from mlflow.store.tracking.dbmodels.models import SqlMetric\n"
        "from mlflow.utils.validation import _validate_metric\n"
        "import mlflow.tracing.client\n"
    )
    modules = [module for _, module, _ in mlflow_imports(bad)]
    assert [m for m in modules if m not in PUBLIC] == modules
