"""README's commands in the order written, in one `git clone` of the repository.

A newcomer follows README top to bottom in one clone: the set-up, the evaluation, the
experiment and its comparison (which leave the tree dirty), the climb, the benchmarks and the
scale-out all meet the state the blocks before them left. So here every block runs in that
order in one clone (tests/test_docs.py runs the other pages, each in its own copy, and says
how a block is read). What is not run is said, with its reason, on the test's output and in
pytest's warnings summary, and one check is added:

- the set-up's `python3 -m venv .venv && . .venv/bin/activate && pip install ...` steps: the
  test runs in the environment README's test command installed (checked: every requirement
  the install names is installed at a version it allows), not a second copy of it (a
  15-minute pip run);
- the test command's `pytest -q -n 3` collects the whole suite in the clone (`--collect-only`:
  every test file imports there) instead of running it: running it is CI's own run of this
  very command (.ci/run), of which this test is one part;
- after the set-up's main job, `dvc status` and `dvc checkout` must be clean for every
  pipeline (no "not in cache", "deleted", "modified"): what a demanding user checks first;
- a block marked `not-runnable: REASON` (a user's endpoint, the internet) and a `needs=`
  block whose extra is not installed (failed instead under AGENTEVAL_REQUIRE_SERVICES=1).
"""

from __future__ import annotations

import importlib.metadata
import re
import shlex
import time
import tomllib
import warnings
from pathlib import Path

import pytest
from docblocks import Block, missing_lines
from packaging.requirements import Requirement
from services import REQUIRED
from test_docs import (
    PAGES,
    README,
    ROOT,
    Ran,
    git_clone,
    missing_extra,
    page_blocks,
    pointed_at,
    run,
    run_shown,
    serve_port,
    serving,
)

ENVIRONMENT_STEPS = ("python3 -m venv ", ". .venv/bin/activate")
COLLECT_ONLY = "--collect-only"


def say_not_run(what: str) -> None:
    print(f"README, not run: {what}")
    warnings.warn(f"README, not run: {what}", stacklevel=2)


def unmet_requirements(repo: Path, install: str) -> list[str]:
    """What `pip install -e .[extras]` (a README step) would add to this environment: each
    requirement of the clone's pyproject.toml it names that is missing or at a version the
    requirement refuses."""
    target = next(arg for arg in shlex.split(install)[2:] if not arg.startswith("-"))
    chosen = re.search(r"\[(.*)\]", target)
    extras = [e.strip() for e in chosen.group(1).split(",")] if chosen else []
    project = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = [*project["dependencies"]]
    for extra in extras:
        wanted += project["optional-dependencies"][extra]
    unmet = []
    for line in wanted:
        requirement = Requirement(line)
        if requirement.name == project["name"]:  # an extra made of other extras
            unmet += unmet_requirements(repo, f"pip install .[{','.join(requirement.extras)}]")
            continue
        if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
            continue
        try:
            version = importlib.metadata.version(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            unmet.append(f"{requirement} (not installed)")
            continue
        if not requirement.specifier.contains(version, prereleases=True):
            unmet.append(f"{requirement} (has {version})")
    return list(dict.fromkeys(unmet))


def serial(pytest_command: str) -> str:
    """The test command without xdist's workers: collecting the suite once proves every
    test file imports; each worker would only collect it again."""
    return re.sub(r"\s-n\s*\S+", "", pytest_command)


def run_setup(block: Block, repo: Path) -> list[Ran]:
    """README's set-up commands, their environment steps checked instead of redone."""
    done = []
    for command in block.commands():
        steps = []
        for step in (s.strip() for s in command.text.split("&&")):
            if step.startswith(ENVIRONMENT_STEPS):
                say_not_run(f"`{step}`: this test's own environment is used")
            elif step.startswith("pip install "):
                unmet = unmet_requirements(repo, step)
                why = f"`{step}` would still install {unmet}"
                assert not (unmet and REQUIRED), f"{block.where}: {why}"
                say_not_run(f"`{step}`: {why if unmet else 'everything it installs is here'}")
            elif step.startswith("pytest "):
                collect = f"{serial(step)} {COLLECT_ONLY}"
                say_not_run(f"`{step}`: CI runs it; here `{collect}` in the clone")
                steps.append(collect)
            else:
                steps.append(step)
        text = " && ".join(steps)
        started = time.monotonic()
        code, out = run(["bash", "-o", "pipefail", "-c", text], repo)
        print(f"README, ran in {time.monotonic() - started:.0f} s: {text}")
        assert code == 0, f"{block.where}: `{text}`: exit {code}\n{out[-4000:]}"
        missing = missing_lines(command.expected, out)
        assert not missing, f"{block.where}: `{text}` printed without {missing}\n{out[-4000:]}"
        done.append(Ran(command, code, out))
    return done


# What `dvc status` / `dvc checkout` say of an output a clone lacks or that moved: on a
# fresh clone after the set-up, none of it may appear, for any pipeline.
DVC_NOISE = re.compile(r"not in cache|deleted|modified|changed|new:|WARNING|ERROR", re.I)


def check_dvc_is_clean(repo: Path) -> None:
    """`dvc status` (no target: every pipeline) and `dvc checkout` after the set-up's first
    `dvc repro`: the benchmarks' committed outputs and locks, the main job's cache."""
    code, status = run(["dvc", "status"], repo)
    assert code == 0 and "Data and pipelines are up to date." in status, status[-4000:]
    code, checkout = run(["dvc", "checkout"], repo)
    noise = [line for line in (status + checkout).splitlines() if DVC_NOISE.search(line)]
    assert code == 0 and noise == [], f"dvc checkout: exit {code}\n{checkout[-4000:]}"


def run_in_order(repo: Path, servers: Path) -> list[Ran]:
    done: list[Ran] = []
    for n, block in enumerate(page_blocks(README)):
        if block.marker == "setup":
            done += run_setup(block, repo)
            if len(done) == 1:  # the main job ran: a fresh clone, set up
                check_dvc_is_clean(repo)
        elif block.marker == "not-runnable":
            say_not_run(f"{block.where}: {block.reason}")
        elif block.marker == "runnable":
            if missing_extra(block):
                say_not_run(f"{block.where}: needs {block.options['needs']}, not installed")
                continue
            with serving(block, servers / f"block-{n}") as ports:
                for command in block.commands():
                    started = time.monotonic()
                    done.append(run_shown(block, command, ports, repo))
                    print(f"README, ran in {time.monotonic() - started:.0f} s: {command.text}")
    return done


def check_pages_pointing_here(done: list[Ran]) -> None:
    """A page's block marked `in=README.md` is run here, not twice: what it shows must be in
    what README's run of the same command printed."""
    ran = {r.command.text: r for r in done}
    for page in PAGES[1:]:
        for block in page_blocks(page):
            if block.marker != "runnable" or "README.md" not in pointed_at(block):
                continue
            for command in block.commands():
                if command.text not in ran and missing_extra(block):
                    continue
                assert command.text in ran, f"{block.where}: `{command.text}` is not README's"
                readme = ran[command.text]  # with the ports README's run served it on
                expected = tuple(serve_port(line, readme.ports) for line in command.expected)
                missing = missing_lines(expected, readme.output)
                assert not missing, f"{block.where}: `{command.text}` printed without {missing}"


@pytest.mark.timeout(3600)
def test_readme_runs_in_the_order_written_in_one_clone(tmp_path: Path) -> None:
    repo = git_clone(ROOT, tmp_path / "agenteval")
    done = run_in_order(repo, tmp_path / "servers")
    check_pages_pointing_here(done)
    shown = [c.text for b in page_blocks(README) if b.marker in ("runnable", "setup")
             for c in b.commands()]  # fmt: skip
    ran = [r.command.text for r in done]
    assert ran == [c for c in shown if c in ran] and len(ran) >= 15


def test_the_check_of_an_install_sees_a_missing_and_a_refused_version(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["pytest>=1", "pytest<1"]\n'
        '[project.optional-dependencies]\nmore = ["no-such-distribution-here"]\n'
        'all = ["x[more]"]\n'
    )
    assert unmet_requirements(tmp_path, "pip install -e .") == [
        f"pytest<1 (has {importlib.metadata.version('pytest')})"
    ]
    assert unmet_requirements(tmp_path, 'pip install -e ".[all]"')[1:] == [
        "no-such-distribution-here (not installed)"
    ]
