"""Run names that read apart in MLflow's runs table: the part that differs comes first.

    measured nothing · fuzzy-lamb · top_k=2 · builtin-bm25-e0868b70 · code judge · 2 scenarios

The table cuts a long name at its end, so a name leads with what tells two runs of one agent
apart: that the run measured nothing, the DVC experiment (`DVC_EXP_NAME`, or the name an
earlier logging of the same evaluation gave it), then what changed against the committed
params.yaml (`changed_params`), then the agent version (model and configuration digest),
the judge and the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agenteval.params import ParamsError, flatten, load_params
from agenteval.scratch import temporary_folder

# The sections whose changes tell runs apart (those the run's params are logged from).
NAMED_SECTIONS = ("suite", "target", "simulator", "judge", "run")
# Said by the suite's own label ("smoke: 12 scenarios"), so not repeated as a change.
UNNAMED_KEYS = frozenset({"suite.ids", "suite.tier"})
MAX_CHANGES = 3  # named changes; more are counted ("+2 more")
VALUE_CHARS = 24
NOTHING_MEASURED = "measured nothing"


def changed_params(
    params: Mapping[str, Any], baseline: Mapping[str, Any], limit: int = MAX_CHANGES
) -> list[str]:
    """`top_k=2`: each value of `params` that differs from `baseline`, by its last key
    (the whole dotted key when two changes share a last key), in key order."""
    now, before = _flat(params), _flat(baseline)
    keys = sorted(
        k
        for k in now.keys() | before.keys()
        if now.get(k) != before.get(k) and k not in UNNAMED_KEYS
    )
    last = [k.rsplit(".", 1)[-1] for k in keys]
    shown = []
    for key, short in zip(keys, last, strict=True):
        name = short if last.count(short) == 1 else key
        shown.append(f"{name}={_value(now.get(key))}")
    if len(shown) > limit:
        shown = [*shown[:limit], f"+{len(shown) - limit} more"]
    return shown


def _flat(params: Mapping[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for section in NAMED_SECTIONS:
        flat.update(flatten(params.get(section) or {}, section))
    return flat


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def committed_params(root: Path, name: str = "params.yaml") -> dict[str, Any] | None:
    """The params file as committed at HEAD (defaults filled), or None outside a git
    checkout or when HEAD has none: what a run's params are compared with."""
    try:
        shown = subprocess.run(
            ["git", "-C", str(root), "show", f"HEAD:./{name}"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if shown.returncode != 0:
        return None
    with temporary_folder("agenteval-params-") as tmp:
        path = Path(tmp) / name
        path.write_text(shown.stdout, encoding="utf-8")
        try:
            return load_params(path)
        except ParamsError:
            return None


def run_name(
    base: str,
    changes: Sequence[str] = (),
    experiment: str | None = None,
    failure: str | None = None,
) -> str:
    """`base` (agent version · judge · suite) led by what tells the run apart."""
    exp = experiment or os.environ.get("DVC_EXP_NAME")
    lead = [NOTHING_MEASURED] if failure else []
    lead += [exp] if exp else []
    lead += [", ".join(changes)] if changes else []
    return " · ".join([*lead, base])
