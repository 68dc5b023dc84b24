"""The GitHub Actions workflow `agenteval init-ci` writes into a project.

Four jobs. `structure` runs on every trigger: scenario and manifest validation, the schema
check, the committed scorecard recomputed from its own dimension scores, and the judge on its
labelled controls. `plan` asks `agenteval ci-plan` which lane the trigger runs (the rules live
there, not in the YAML). `evaluate` runs that lane, compares it with the committed baseline
(the comparison's exit code is the job's result) and keeps the run, the DVC cache and the
MLflow store as artifacts; on the backlog lane it also adds the run's pass rate to the
trend (`agenteval ci-trend`, carried between runs in the Actions cache, kept as the
`backlog-trend` artifact). `verify` runs instead on a final release tag: nothing is
re-run, `agenteval ci-verify` checks the committed results (and the MLflow store named by
the AGENTEVAL_TRACKING_URI repository variable) for a full sweep of the tag's commit or one
of its release candidates'. Every value GitHub fills in reaches a script through `env:`, never
pasted into its text, so a branch or tag name cannot inject shell.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_PATH = Path(".github/workflows/agenteval.yml")
DEFAULT_PYTHON = "3.11"
DEFAULT_BASELINE = "eval/baselines/baseline.json"
DEFAULT_SCHEDULE = "17 6 * * 0"  # weekly, Sunday 06:17 UTC: the backlog lane
INSTALL_STEP = "install"  # the step id a local dry run replaces with its own environment


@dataclass(frozen=True)
class Options:
    install: str  # the shell command that installs agenteval (and the project's agent)
    agent_paths: tuple[str, ...]
    python: str = DEFAULT_PYTHON
    baseline: str = DEFAULT_BASELINE
    schedule: str = DEFAULT_SCHEDULE
    scorecard: str = "reports/scorecard.json"
    extra_env: dict[str, str] = field(default_factory=dict)


def _setup(opts: Options) -> str:
    return f"""      - uses: actions/setup-python@v6
        with:
          python-version: "{opts.python}"
      - id: {INSTALL_STEP}
        name: Install agenteval
        run: {opts.install}
"""


def _block(lines: str, indent: int) -> str:
    pad = " " * indent
    return "".join(pad + line + "\n" if line else "\n" for line in lines.strip("\n").split("\n"))


STRUCTURE = """
- name: Scenarios and corpus manifest
  run: agenteval validate
- name: File formats against their schemas
  run: agenteval schema check
- name: Committed scorecard recomputed from its dimension scores
  env:
    SCORECARD: {scorecard}
  run: |
    if [ -f "$SCORECARD" ]; then
      agenteval recompute "$SCORECARD"
    else
      echo "::notice::no committed scorecard at $SCORECARD yet"
    fi
- name: The judge on its labelled controls
  run: agenteval controls --out runs/ci/controls
"""

PLAN = """
- name: The tag with its annotation (checkout fetches it as a plain ref)
  if: github.ref_type == 'tag'
  run: git fetch --force origin "+$GITHUB_REF:$GITHUB_REF"
- id: plan
  name: Which lane this trigger runs
  env:
    EVENT: ${{{{ github.event_name }}}}
    TIER: ${{{{ inputs.tier }}}}
    BASE: ${{{{ github.event.pull_request.base.sha }}}}
  run: |
    agenteval ci-plan --event "$EVENT" --ref "$GITHUB_REF" --tier "$TIER" --base "$BASE" \\
{agent_args}      | tee -a "$GITHUB_OUTPUT"
"""

EVALUATE = """
- uses: actions/cache@v5
  with:
    path: .dvc/cache
    key: dvc-cache-${{{{ hashFiles('dvc.lock', 'eval/sources.yaml') }}}}
    restore-keys: dvc-cache-
- name: The backlog trend so far
  if: needs.plan.outputs.lane == 'backlog'
  uses: actions/cache/restore@v5
  with:
    path: runs/ci/backlog-trend.json
    key: backlog-trend-${{{{ github.run_id }}}}
    restore-keys: backlog-trend-
- name: Evaluate the lane
  env:
    LANE: ${{{{ needs.plan.outputs.lane }}}}
  run: agenteval run --tier "$LANE" --out runs/ci/run --no-progress
- name: The backlog's pass rate against its target, added to the trend
  if: always() && needs.plan.outputs.lane == 'backlog'
  run: |
    agenteval ci-trend --run runs/ci/run --trend runs/ci/backlog-trend.json \
      --label "$GITHUB_RUN_ID" --summary "$GITHUB_STEP_SUMMARY"
- name: Carry the trend to the next backlog run
  if: always() && needs.plan.outputs.lane == 'backlog'
  uses: actions/cache/save@v5
  with:
    path: runs/ci/backlog-trend.json
    key: backlog-trend-${{{{ github.run_id }}}}
- name: Keep the trend
  if: always() && needs.plan.outputs.lane == 'backlog'
  uses: actions/upload-artifact@v6
  with:
    name: backlog-trend
    if-no-files-found: ignore
    path: runs/ci/backlog-trend.json
- name: Compare with the baseline (its exit code is the job's result)
  env:
    BASELINE: {baseline}
  run: |
    if [ ! -f "$BASELINE" ]; then
      echo "::notice::no baseline yet: save one with agenteval baseline save runs/ci/run"
      exit 0
    fi
    status=0
    agenteval compare "$BASELINE" runs/ci/run --require-complete --out runs/ci/compare \\
      || status=$?
    if [ -n "${{GITHUB_STEP_SUMMARY:-}}" ] && [ -f runs/ci/compare/compare.md ]; then
      cat runs/ci/compare/compare.md >> "$GITHUB_STEP_SUMMARY"
    fi
    exit "$status"
- name: Keep the run, the DVC cache and the MLflow store
  if: always()
  uses: actions/upload-artifact@v6
  with:
    name: agenteval-${{{{ needs.plan.outputs.lane }}}}-${{{{ github.run_id }}}}
    if-no-files-found: ignore
    path: |
      runs/ci
      .dvc/cache
      mlflow.db
      mlartifacts
"""


VERIFY = """
- name: A full sweep measured this commit or one of its release candidates
  env:
    TAG: ${{{{ github.ref_name }}}}
    RESULTS: {scorecard}
    TRACKING_URI: ${{{{ vars.AGENTEVAL_TRACKING_URI }}}}
  run: |
    set -- --tag "$TAG" --results "$RESULTS"
    if [ -n "$TRACKING_URI" ]; then
      set -- "$@" --tracking-uri "$TRACKING_URI"
    fi
    agenteval ci-verify "$@"
"""


def render(opts: Options) -> str:
    """The workflow's text (YAML)."""
    agent_args = "".join(f"      --agent-path {_quote(p)} \\\n" for p in opts.agent_paths)
    env = "".join(f"  {k}: {_quote(v)}\n" for k, v in sorted(opts.extra_env.items()))
    checkout = "      - uses: actions/checkout@v5\n"
    deep = "      - uses: actions/checkout@v5\n        with:\n          fetch-depth: 0\n"
    return (
        f"""# Written by `agenteval init-ci`; edit freely. The lane rules are `agenteval ci-plan`'s.
name: agenteval

on:
  pull_request:
  push:
    tags: ["v*"]
  workflow_dispatch:
    inputs:
      tier:
        description: Lane of eval/tiers.yaml to run
        type: choice
        options: [smoke, full, backlog]
        default: smoke
  schedule:
    - cron: "{opts.schedule}"

permissions:
  contents: read

concurrency:
  group: agenteval-${{{{ github.ref }}}}
  cancel-in-progress: true

env:
  PYTHONUTF8: "1"
{env}
jobs:
  structure:
    name: Structural validation
    runs-on: ubuntu-latest
    steps:
{checkout}{_setup(opts)}{_block(STRUCTURE.format(scorecard=_quote(opts.scorecard)), 6)}
  plan:
    name: Plan the lane
    runs-on: ubuntu-latest
    outputs:
      lane: ${{{{ steps.plan.outputs.lane }}}}
      reason: ${{{{ steps.plan.outputs.reason }}}}
    steps:
{deep}{_setup(opts)}{_block(PLAN.format(agent_args=agent_args), 6)}
  evaluate:
    name: Evaluate and compare
    needs: [structure, plan]
    if: needs.plan.outputs.lane != 'skip' && needs.plan.outputs.lane != 'verify'
    runs-on: ubuntu-latest
    timeout-minutes: 360
    steps:
{checkout}{_setup(opts)}{_block(EVALUATE.format(baseline=_quote(opts.baseline)), 6)}
  verify:
    name: Verify the release was measured
    needs: [structure, plan]
    if: needs.plan.outputs.lane == 'verify'
    runs-on: ubuntu-latest
    steps:
{deep}{_setup(opts)}{_block(VERIFY.format(scorecard=_quote(opts.scorecard)), 6)}"""
    ).replace("\n\n\n", "\n\n")


def _quote(value: str) -> str:
    """A YAML scalar that stays a string (and a shell word when used in a script line)."""
    safe = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{safe}"'
