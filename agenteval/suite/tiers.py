"""Read and check eval/tiers.yaml, and pick the scenarios of one lane.

Every problem is a `path:line: message`: an unknown tier, an id listed twice, a reason that is
missing or longer than one line, and (when the suite's ids are known) an id that names no
scenario. A scenario with no tier is a warning and runs in the `full` lane.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from agenteval.schema.located import Located, load_located
from agenteval.schema.problems import Problem
from agenteval.schema.tiers import LANES, TIERS

DEFAULT_TIERS = Path("eval/tiers.yaml")
UNASSIGNED = "unassigned"
MAX_REASON = 200  # characters: a reason is one line a reviewer reads, not a paragraph


@dataclass
class Tiers:
    path: str
    tier: dict[str, str] = field(default_factory=dict)  # scenario id -> tier
    reason: dict[str, str] = field(default_factory=dict)  # scenario id -> one-line reason
    lines: dict[str, int] = field(default_factory=dict)  # scenario id -> line in the file

    def tier_of(self, scenario_id: str) -> str:
        return self.tier.get(scenario_id, UNASSIGNED)

    def lane(self, name: str, ids: Iterable[str]) -> list[str]:
        """The ids (in order) that `--tier name` runs."""
        wanted = LANES[name]
        return [i for i in ids if self.tier_of(i) in wanted]


def _duplicate_keys(text: str, path: str) -> list[Problem]:
    """YAML keeps the last of two equal keys silently; a tiers file must not."""
    problems: list[Problem] = []
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return problems  # load_located reports the syntax error
    if not isinstance(root, yaml.MappingNode):
        return problems
    for _tier, tier_node in root.value:
        if not isinstance(tier_node, yaml.MappingNode):
            continue
        seen: dict[str, int] = {}
        for key_node, _value in tier_node.value:
            line = key_node.start_mark.line + 1
            if key_node.value in seen:
                msg = f"{key_node.value!r} is listed twice (also line {seen[key_node.value]})"
                problems.append(Problem(path, line, msg))
            seen.setdefault(key_node.value, line)
    return problems


def _entries(located: Located) -> tuple[Tiers, list[Problem]]:
    tiers, problems = Tiers(located.path), []
    if not isinstance(located.data, dict):
        return tiers, [located.problem((), "a tiers file must map smoke/full/backlog to ids")]
    for name, block in located.data.items():
        if name not in TIERS:
            msg = f"unknown tier {name!r} (tiers: {', '.join(TIERS)})"
            problems.append(located.problem((str(name),), msg))
            continue
        if block is None:
            continue
        if not isinstance(block, dict):
            msg = f"tier {name!r} must map scenario ids to a one-line reason"
            problems.append(located.problem((name,), msg))
            continue
        for sid, reason in block.items():
            loc = (name, str(sid))
            problems.extend(_check_entry(located, loc, str(sid), reason, tiers))
            if str(sid) not in tiers.tier:
                tiers.tier[str(sid)], tiers.reason[str(sid)] = name, str(reason or "")
                tiers.lines[str(sid)] = located.line(loc)
    return tiers, problems


def _check_entry(
    located: Located, loc: tuple[str, str], sid: str, reason: object, tiers: Tiers
) -> list[Problem]:
    problems = []
    if sid in tiers.tier:
        where = f"{tiers.tier[sid]} (line {tiers.lines[sid]})"
        problems.append(located.problem(loc, f"{sid!r} is already in tier {where}"))
    if not isinstance(reason, str) or not reason.strip():
        problems.append(located.problem(loc, f"{sid}: needs a one-line reason"))
    elif "\n" in reason.strip() or len(reason) > MAX_REASON:
        msg = f"{sid}: the reason must be one line of at most {MAX_REASON} characters"
        problems.append(located.problem(loc, msg))
    return problems


def load_tiers(
    path: Path, display: str | None = None, known_ids: Set[str] | None = None
) -> tuple[Tiers | None, list[Problem]]:
    """The tiers file and its problems; with `known_ids`, ids outside it are errors and
    scenarios without a tier are one warning."""
    located = load_located(path, display)
    if isinstance(located, Problem):
        return None, [located]
    tiers, problems = _entries(located)
    problems += _duplicate_keys(path.read_text(encoding="utf-8-sig"), located.path)
    if known_ids is not None:
        for sid, line in tiers.lines.items():
            if sid not in known_ids:
                problems.append(Problem(located.path, line, f"unknown scenario id {sid!r}"))
        missing = sorted(set(known_ids) - set(tiers.tier))
        if missing:
            msg = f"{len(missing)} scenario(s) have no tier and run in 'full': {missing}"
            problems.append(Problem(located.path, 1, msg, "warning"))
    if any(p.severity == "error" for p in problems):
        return None, problems
    return tiers, problems
