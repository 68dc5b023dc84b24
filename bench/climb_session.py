"""The documented offline hillclimb session, in a scratch clone of this repository.

    python bench/climb_session.py            # about 2 minutes on 2 cores

It clones the committed HEAD into a temporary folder (this work tree is never touched),
fetches the pinned corpora offline, starts the builtin agent from a deliberately naive
configuration (`--start`, default: abstain_threshold 0.5, top_k 1, chunk_size 1000: it
refuses most questions), commits that, and runs `agenteval climb --proposer search` there.
The closing figures (train, held and test gains, the optimism gap, rounds kept and reverted,
each held query as Thresholdout answered it, the held ledger's count) and the wall time are
printed with the command that reruns them. The shipped defaults are
already near what a one-knob search finds, which is why the session starts detuned; run with
`--start ""` to climb from the shipped defaults.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_START = "abstain_threshold=0.5,top_k=1,chunk_size=1000"


def sh(cmd: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, DVC_NO_ANALYTICS="1", MLFLOW_DISABLE_TELEMETRY="true")
    for name in ("DVC_ROOT", "MLFLOW_TRACKING_URI", "DVC_EXP_NAME"):
        env.pop(name, None)
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if check and done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}")
    return done


def rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def prepare(dest: Path, start: str) -> None:
    sh(["git", "clone", "-q", str(ROOT), str(dest)], ROOT)
    sh(["git", "checkout", "-q", "-b", "climb-demo"], dest)
    sh([sys.executable, "-m", "agenteval", "fetch", "--offline"], dest)
    if start:
        from agenteval.climb.artifacts import set_knob

        params = dest / "params.yaml"
        data = params.read_bytes()
        for pair in start.split(","):
            key, _, value = pair.partition("=")
            data = set_knob(data, key.strip(), float(value) if "." in value else int(value))
        params.write_bytes(data)
        ident = ["-c", "user.name=climb demo", "-c", "user.email=demo@agenteval.invalid"]
        sh(["git", *ident, "commit", "-qam", f"climb demo start: {start}"], dest)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", default=DEFAULT_START, help="knob=value,... to start from")
    parser.add_argument("--dest", type=Path, help="clone here (default: a temporary folder)")
    parser.add_argument("climb_args", nargs="*", help="extra arguments for agenteval climb")
    args = parser.parse_args()
    dest = args.dest or Path(tempfile.mkdtemp(prefix="climb-session-")) / "repo"
    prepare(dest, args.start)
    cmd = [sys.executable, "-m", "agenteval", "climb", "--proposer", "search", *args.climb_args]
    began = time.monotonic()
    done = sh(cmd, dest, check=False)
    seconds = time.monotonic() - began
    print(done.stdout, done.stderr, sep="\n")
    if done.returncode != 0:
        sys.exit(done.returncode)
    summary = json.loads((dest / "reports/climb.json").read_text())
    figures = summary["figures"]
    print(f"session: {seconds:.0f} s wall time in {dest}")
    for split in ("train", "held", "test"):
        f = figures[split]
        judged = f"{rate(f['parent_judged'])} -> {rate(f['candidate_judged'])}"
        print(f"  {split:5s} pass share {f['parent']:.3f} -> {f['candidate']:.3f} "
              f"(gain {f['mean']:+.3f}, lower bound {f['low']:+.3f}, {f['n']} scenarios; "
              f"judged pass rate {judged})")  # fmt: skip
    print(f"  optimism gap (train gain - test gain) {figures['optimism_gap']:+.3f}")
    print(f"  rounds: {summary['kept']} kept, {summary['reverted']} reverted, "
          f"{summary['rejected']} rejected; stopped: {summary['stop_reason']}")  # fmt: skip
    for record in summary["rounds"]:
        held = record.get("held")
        if held:
            print(f"  round {record['round']} ({record['edit']}, {record['outcome']}): held gain "
                  f"{held['delta']['mean']:+.3f}; Thresholdout answered {held['released']:+.3f} "
                  f"from {held['answered_by']}, bound {held['bound']:+.3f}")  # fmt: skip
    ledger = summary["holdout"]
    print(f"  held ledger {ledger['ledger']} (committed on the session's branch): split "
          f"{ledger['split'][:12]}, {ledger['queries']} of {ledger['max_queries']} queries, "
          f"{ledger['overfits']} of {ledger['budget']} answered from held")  # fmt: skip
    print(f"rerun: python bench/climb_session.py --start '{args.start}'")


if __name__ == "__main__":
    main()
