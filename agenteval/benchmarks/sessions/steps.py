"""Session replay as steps over one private folder: dataset -> replay -> judge -> score.

`agenteval sessions` and the stages of pipelines/sessions/dvc.yaml share these functions.
Everything holding text (dataset.json, transcripts/, results.json, report.md) is written
scrubbed, mode 0600, into the private folder; scorecard.json holds numbers and case ids.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ValidationError

from agenteval import fileio
from agenteval.benchmarks.sessions.controls import check, load_controls
from agenteval.benchmarks.sessions.extract import Options, extract
from agenteval.benchmarks.sessions.privacy import (
    SessionScrubber,
    check_private_folder,
    make_private_folder,
    private_files,
    warn_withheld,
    withhold,
    write_private,
)
from agenteval.benchmarks.sessions.transcript import MAX_LINE_BYTES
from agenteval.fileio import digest_of, sha256_file
from agenteval.llm.residue import residue, strings_of
from agenteval.llm.unit_public import hide
from agenteval.measured import Coverage
from agenteval.schema.sessions import (
    DatasetSource,
    SessionCase,
    SessionDataset,
    SessionResults,
    SessionScorecard,
)
from agenteval.scoring import SESSION_PASS_GRADE


class DatasetError(ValueError):
    """The dataset to replay cannot be used (missing, not a dataset, not the pinned file)."""


@dataclass(frozen=True)
class Paths:
    out: Path

    @property
    def dataset(self) -> Path:
        return self.out / "dataset.json"

    @property
    def transcripts(self) -> Path:
        return self.out / "transcripts"

    @property
    def results(self) -> Path:
        return self.out / "results.json"

    @property
    def scorecard(self) -> Path:
        return self.out / "scorecard.json"

    @property
    def report(self) -> Path:
        return self.out / "report.md"


def key_envs(params: dict[str, Any]) -> list[str]:
    """Environment variables whose values are keys: every role's api_key_env and what an
    MCP agent is handed."""
    sections = [params.get("target") or {}, (params.get("sessions") or {}).get("judge") or {}]
    names = [str(s["api_key_env"]) for s in sections if s.get("api_key_env")]
    env = (params.get("target") or {}).get("env") or []
    return names + ([env] if isinstance(env, str) else [str(n) for n in env])


def scrubber_for(params: dict[str, Any]) -> SessionScrubber:
    return SessionScrubber(key_envs(params))


def transcripts_root(params: dict[str, Any]) -> Path:
    configured = (params.get("sessions") or {}).get("transcripts")
    if configured:
        return Path(os.path.expanduser(str(configured)))
    home = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(home) / "projects" if home else Path.home() / ".claude" / "projects"


def parse_since(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        raise ValueError(f"sessions.since: {value!r} is not a date (YYYY-MM-DD)") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def options_of(params: dict[str, Any]) -> Options:
    section = params.get("sessions") or {}
    limit = section.get("limit")
    return Options(
        project=section.get("project") or None,
        since=parse_since(section.get("since")),
        limit=None if limit is None else int(limit),
        max_line_bytes=int(section.get("max_line_bytes") or MAX_LINE_BYTES),
    )


def pass_grade(params: dict[str, Any]) -> int:
    value = (params.get("sessions") or {}).get("pass_grade")
    return SESSION_PASS_GRADE if value is None else int(value)


def write_model(path: Path, model: BaseModel, scrubber: SessionScrubber) -> BaseModel:
    """Write `model` scrubbed and checked string by string as JSON (a string still holding
    private data is withheld, never the file); the model as written."""
    scrubbed = scrubber.scrub(model.model_dump(mode="json"))
    clean, kinds = withhold(scrubbed, scrubber, public=scrubber.unit_public)
    text = orjson.dumps(clean, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE).decode()
    warn_withheld(path, kinds)
    write_private(path, text, None)
    return type(model).model_validate(clean)


RESIDUE = "private data left after scrubbing"
LOOKS_PRIVATE = "looks private after scrubbing"


def private_cases(
    cases: list[SessionCase], scrubber: SessionScrubber
) -> tuple[list[SessionCase], dict[str, int]]:
    """The cases scrubbed, less those that still hold private data (counted by reason): one
    case's residue costs that case, never the dataset. After the scrubber's own check, the
    residue gate (`llm.residue`) drops a case holding anything that still LOOKS private: a
    kind no rule knows costs its case, not a leak."""
    raw = [case.model_dump(mode="json") for case in cases]
    for value in raw:  # every home folder's user name first: a name may come before its path
        scrubber.learn(orjson.dumps(value).decode())
    kept: list[SessionCase] = []
    dropped: dict[str, int] = {}
    for value in raw:
        # String by string, not the case's JSON: texts repeat across cases (a follow-up's
        # context), and JSON quoting would show detect-secrets every field as a quoted string.
        clean = scrubber.scrub(value)
        # the gates read what the case shows in a public form as the scrubber did: passed
        strings = [hide(text, scrubber.unit_public) for text in strings_of(clean)]
        reason = _drop_reason(strings, scrubber)
        if reason is None:
            kept.append(SessionCase.model_validate(clean))
        else:
            dropped[reason] = dropped.get(reason, 0) + 1
    return kept, dropped


def _drop_reason(strings: list[str], scrubber: SessionScrubber) -> str | None:
    """Why a scrubbed case is dropped, naming the family that dropped it ("looks private
    after scrubbing (long digit run)"), so a user sees why; None when it is kept."""
    for gate, kinds_of in ((RESIDUE, scrubber.leaks), (LOOKS_PRIVATE, residue)):
        kinds = sorted({kind for text in strings for kind in kinds_of(text)})
        if kinds:
            return f"{gate} ({', '.join(kinds)})"
    return None


def prepare(out: Path, root: Path) -> Paths:
    check_private_folder(out, root)
    make_private_folder(out)
    return Paths(out)


def step_dataset(params: dict[str, Any], root: Path, out: Path) -> SessionDataset:
    """Read the transcripts, write dataset.json (scrubbed); the dataset as written."""
    paths = prepare(out, root)
    options = options_of(params)
    source = transcripts_root(params)
    found = extract(source, options)
    scrubber = scrubber_for(params)
    cases, dropped = private_cases([f.case for f in found.cases], scrubber)
    summary = found.summary()
    if dropped:
        for reason, count in dropped.items():
            summary.dropped[reason] = summary.dropped.get(reason, 0) + count
        summary.cases = len(cases)
    dataset = SessionDataset(
        source=DatasetSource(
            root=str(source),
            project=options.project,
            since=None if options.since is None else options.since.isoformat(),
            limit=options.limit,
        ),
        summary=summary,
        cases=cases,
        dropped=found.dropped_lines(),
    )
    # The cases were scrubbed and checked one by one: the rest is scrubbed and checked here,
    # string by string as well (a file name that quoted in JSON looks like `"x":"<random>`).
    head, kinds = withhold(scrubber.scrub(dataset.model_dump(mode="json", exclude={"cases"})),
                           scrubber)  # fmt: skip
    warn_withheld(paths.dataset, kinds)
    cases_json = [case.model_dump(mode="json") for case in cases]
    merged = {**head, "cases": cases_json}
    value = {name: merged[name] for name in SessionDataset.model_fields}  # the file's order
    text = orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE).decode()
    write_private(paths.dataset, text, None)
    return SessionDataset.model_validate(value)


def load_dataset(path: Path, pin: str | None = None) -> SessionDataset:
    if not path.is_file():
        raise DatasetError(f"{path}:1: no dataset file (build one with agenteval sessions "
                           "--dataset-only)")  # fmt: skip
    if pin is not None and sha256_file(path) != pin:
        raise DatasetError(
            f"{path}:1: its sha256 is {sha256_file(path)}, not the pinned "
            f"sessions.dataset_sha256 {pin}; pin the new file or restore the old one"
        )
    try:
        return SessionDataset.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise DatasetError(f"{path}:1: not a session dataset: {where}: {first['msg']}") from None


@contextlib.contextmanager
def scrubbing_writes(scrubber: SessionScrubber) -> Iterator[None]:
    """Every file the engine writes meanwhile passes the session scrubber, privately."""
    before = fileio._scrubber  # restored after: other steps of the process keep theirs
    fileio.install_scrubber(scrubber)
    try:
        with private_files():
            yield
    finally:
        fileio.install_scrubber(before)


def step_replay(params: dict[str, Any], root: Path, out: Path, dataset: SessionDataset) -> Any:
    from agenteval.benchmarks.sessions.replay import replay
    from agenteval.runlock import endpoint_key, eval_lock

    paths = prepare(out, root)
    with (
        scrubbing_writes(scrubber_for(params)),
        eval_lock(endpoint_key(params["target"]), str(paths.transcripts)),
    ):
        return replay(params, root, dataset, paths.transcripts)


def step_judge(
    params: dict[str, Any], root: Path, out: Path, dataset: SessionDataset
) -> SessionResults:
    from agenteval.benchmarks.sessions.grading import grade
    from agenteval.benchmarks.sessions.judge import SessionJudge
    from agenteval.targets.base import make_target

    paths = prepare(out, root)
    judge = SessionJudge(params, root)
    section = (params.get("sessions") or {}).get("controls") or {}
    controls = load_controls(root / str(section.get("file", "eval/sessions/controls.yaml")),
                             str(section.get("split", "held")))  # fmt: skip
    concurrency = int((params.get("run") or {}).get("concurrency", 4))
    results, control_results = grade(
        judge, dataset.cases, controls, paths.transcripts, paths.results, concurrency
    )
    target = None
    with contextlib.suppress(Exception):  # who answered, for provenance; not needed to judge
        target = make_target(params, root).participant
    found = SessionResults(
        dataset_digest=digest_of(dataset),
        target=target,
        judge=judge.participant,
        results=results,
        controls=control_results,
    )
    written = write_model(paths.results, found, scrubber_for(params))
    assert isinstance(written, SessionResults)
    return written


def step_score(params: dict[str, Any], root: Path, out: Path) -> SessionScorecard:
    from agenteval.benchmarks.sessions.report import render
    from agenteval.benchmarks.sessions.score import scorecard

    paths = prepare(out, root)
    dataset = load_dataset(paths.dataset)
    results = SessionResults.model_validate_json(paths.results.read_bytes())
    section = (params.get("sessions") or {}).get("controls") or {}
    controls = load_controls(root / str(section.get("file", "eval/sessions/controls.yaml")),
                             str(section.get("split", "held")))  # fmt: skip
    checked = check(results.controls, controls, float(section.get("min_band_agreement", 0.75)),
                    float(section.get("min_order_agreement", 1.0)))  # fmt: skip
    conf = float((params.get("stats") or {}).get("conf", 0.95))
    sessions = {c.id: c.session_id for c in dataset.cases}
    card = scorecard(results, sessions, checked, pass_grade(params), conf,
                     sha256_file(paths.results))  # fmt: skip
    scrubber = scrubber_for(params)
    write_model(paths.scorecard, card, scrubber)
    text = scrubber.scrub_text(render(card, results, dataset))
    write_private(paths.report, text, scrubber)
    return card


def step_coverage(out: Path) -> Coverage:
    """How many of the replayed results.json's cases went unmeasured, and why."""
    from agenteval.benchmarks.sessions.score import coverage

    return coverage(SessionResults.model_validate_json(Paths(out).results.read_bytes()))
