"""Benchmark: `dvc repro` on the offline default, and where a no-op repro's time goes.

Run from the repository root with the venv active:  python bench/repro.py [--repeats 5]
It copies the repository to a temporary folder (a git repository, as a fresh clone) so the
workspace is untouched, then times:

- a full `dvc repro -f` at iterations=1;
- a no-op `dvc repro` (`--repeats` times, median and min) and checks that it ran no stage,
  and `dvc status dvc.yaml` beside it;
- the same no-op with `fetch`, `infer` and `track` made always_changed again, as on main
  before issue 30: the ratio is what dropping those flags bought on this machine today;
- its parts: the interpreter alone, `dvc --version` (DVC's own start-up), and a profile of
  one no-op repro split into YAML parsing (dvc.yaml, dvc.lock, params.yaml, ruamel),
  hashing the stage deps and outs (directory walks, DVC's state lookups) and the rest;
- interleaved no-op pairs with ruamel.yaml's C parser (the ruamel.yaml.clib dependency)
  and with it hidden, in CPU time;
- `dvc repro` after switching to iterations=3.
"""

from __future__ import annotations

import argparse
import os
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
IGNORE = shutil.ignore_patterns(
    ".venv", ".ci-venv", "data", "runs", "mlflow.db*", ".git", ".*cache*", "__pycache__",
    ".cache", "reports", "mlartifacts",
)  # fmt: skip
ALWAYS_BEFORE = ("fetch", "infer", "track")  # always_changed on main before issue 30
# Where a profiled no-op repro spends its time, by the function that owns it (cumulative):
# parsing dvc.yaml, dvc.lock and params.yaml; walking and looking up the deps and outs in
# DVC's state. The two do not overlap; the rest is start-up, imports, the graph and locks.
PARTS = {
    "YAML parsing (ruamel)": ("dvc/utils/serialize/_yaml.py", "parse_yaml"),
    "hashing deps and outs": ("dvc_data/hashfile/build.py", "build"),
}


PURE_YAML: dict[str, str] = {}  # set by main: env that hides ruamel.yaml's C parser


def env() -> dict[str, str]:
    found = dict(os.environ, DVC_NO_ANALYTICS="1", MLFLOW_DISABLE_TELEMETRY="true")
    for name in ("DVC_ROOT", "MLFLOW_TRACKING_URI", "DVC_EXP_NAME"):
        found.pop(name, None)
    return found | PURE_YAML


def hide_c_parser(folder: Path) -> dict[str, str]:
    """An environment in which `import _ruamel_yaml` fails, so ruamel.yaml (and DVC through
    it) falls back to its pure-Python parser: the A/B of the ruamel.yaml.clib dependency."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_ruamel_yaml.py").write_text("raise ImportError('hidden by bench/repro.py')\n")
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path}


CPU_SECONDS: list[float] = []  # CPU (user + sys) of each command `timed` ran, in order


def timed(cmd: list[str], cwd: Path) -> tuple[float, str]:
    """Wall seconds and output; the command's CPU seconds (its children's too) are appended
    to CPU_SECONDS: on a loaded machine wall time waits for a core, CPU time does not."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env(), capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU_SECONDS.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}")
    return wall, done.stdout + done.stderr


def repeated(cmd: list[str], cwd: Path, n: int, check: Callable[[str], None]) -> list[float]:
    times = []
    for _ in range(n):
        seconds, out = timed(cmd, cwd)
        check(out)
        times.append(seconds)
    return times


def median_cpu(n: int) -> float:
    """The median CPU seconds of the last `n` commands timed."""
    return statistics.median(CPU_SECONDS[-n:])


def ran_nothing(out: str) -> None:
    if "Running stage" in out:
        raise SystemExit(f"the no-op repro ran a stage:\n{out}")


def ran_the_always_changed(out: str) -> None:
    for stage in ALWAYS_BEFORE:
        if f"Running stage '{stage}'" not in out:
            raise SystemExit(f"stage {stage} did not run although always_changed:\n{out}")


def set_iterations(repo: Path, n: int) -> None:
    path = repo / "params.yaml"
    params = yaml.safe_load(path.read_text())
    params["suite"]["iterations"] = n
    path.write_text(yaml.safe_dump(params, sort_keys=False))


def set_always_changed(repo: Path, on: bool) -> None:
    path = repo / "dvc.yaml"
    pipeline = yaml.safe_load(path.read_text())
    for name in ALWAYS_BEFORE:
        pipeline["stages"][name].pop("always_changed", None)
        if on:
            pipeline["stages"][name]["always_changed"] = True
    path.write_text(yaml.safe_dump(pipeline, sort_keys=False))


def profile_parts(repo: Path) -> list[tuple[str, float]]:
    """Shares of one profiled no-op repro (the profiler slows Python code, so shares, not
    seconds, are what carries over)."""
    dump = repo.parent / "noop.prof"
    timed(["dvc", "repro", "--cprofile-dump", str(dump)], repo)
    stats = pstats.Stats(str(dump))
    entries = stats.stats  # type: ignore[attr-defined]
    total = max(cumulative for (_, _, _, cumulative, _) in entries.values())
    rows = []
    for label, (suffix, name) in PARTS.items():
        spent = sum(
            value[3]
            for (file, _, func), value in entries.items()
            if func == name and file.endswith(suffix)
        )
        rows.append((label, spent / total))
    rows.append(("the rest", 1 - sum(r[1] for r in rows)))
    return rows


def c_parser_ab(repo: Path, n: int) -> list[tuple[str, str]]:
    """No-op repros with and without ruamel.yaml's C parser, interleaved (CPU medians)."""
    with_c, pure = [], []
    for _ in range(n):
        timed(["dvc", "repro"], repo)
        with_c.append(CPU_SECONDS[-1])
        PURE_YAML.update(hide_c_parser(repo.parent / "pure-yaml"))
        try:
            timed(["dvc", "repro"], repo)
        finally:
            PURE_YAML.clear()
        pure.append(CPU_SECONDS[-1])
    wins = sum(p > c for p, c in zip(pure, with_c, strict=True))
    return [
        ("no-op CPU, pure-Python YAML parser, median", f"{statistics.median(pure):.2f} s"),
        ("no-op CPU, C YAML parser, median", f"{statistics.median(with_c):.2f} s"),
        ("  pairs where the C parser used less CPU", f"{wins}/{n}"),
    ]


def fresh_copy(tmp: str) -> Path:
    repo = Path(tmp) / "repo"
    shutil.copytree(ROOT, repo, ignore=IGNORE)
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@b"]
    for cmd in (["git", "init", "-q"], [*git, "add", "-A"], [*git, "commit", "-qm", "copy"]):
        subprocess.run(cmd, cwd=repo, check=True, capture_output=True)
    return repo


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="No-op repros timed (>= 1).")
    args = parser.parse_args()
    n = max(1, args.repeats)
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        repo = fresh_copy(tmp)
        rows.append(
            ("full dvc repro -f, iterations=1", f"{timed(['dvc', 'repro', '-f'], repo)[0]:.2f} s")
        )
        noop = repeated(["dvc", "repro"], repo, n, ran_nothing)
        rows.append((f"no-op dvc repro, median of {n}", f"{statistics.median(noop):.2f} s"))
        rows.append(("no-op dvc repro, min", f"{min(noop):.2f} s"))
        rows.append(("no-op dvc repro, CPU (user + sys), median", f"{median_cpu(n):.2f} s"))
        status = repeated(["dvc", "status", "dvc.yaml"], repo, n, lambda _out: None)
        rows.append(("dvc status dvc.yaml, median", f"{statistics.median(status):.2f} s"))
        python = repeated([sys.executable, "-c", "pass"], repo, n, lambda _out: None)
        rows.append(("  python start-up, median", f"{statistics.median(python):.2f} s"))
        version = repeated(["dvc", "--version"], repo, n, lambda _out: None)
        rows.append(
            ("  dvc --version (DVC start-up), median", f"{statistics.median(version):.2f} s")
        )
        for label, share in profile_parts(repo):
            rows.append((f"  profiled no-op: {label}", f"{share:.0%}"))
        rows += c_parser_ab(repo, n)
        set_always_changed(repo, True)
        before = repeated(["dvc", "repro"], repo, n, ran_the_always_changed)
        before_cpu = median_cpu(n)
        set_always_changed(repo, False)
        timed(["dvc", "repro"], repo)  # the lock without always_changed again
        rows.append(
            ("no-op with fetch/infer/track always_changed", f"{statistics.median(before):.2f} s")
        )
        rows.append(("  its CPU (user + sys), median", f"{before_cpu:.2f} s"))
        rows.append(
            (
                "  ratio always_changed / now",
                f"{statistics.median(before) / statistics.median(noop):.1f}x",
            )
        )
        set_iterations(repo, 3)
        rows.append(("dvc repro after iterations=3", f"{timed(['dvc', 'repro'], repo)[0]:.2f} s"))
    for name, value in rows:
        print(f"{name:48s} {value:>8s}")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average {load} on {os.cpu_count()} CPU(s); python {sys.version.split()[0]}")
    print(f"rerun: python bench/repro.py --repeats {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
