"""reports/controls.json and controls.md: a judge measured on labelled controls, and its gate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agenteval.controls.load import SPLITS
from agenteval.controls.run import Outcome, by_class, consistency, details, summarize
from agenteval.schema.transcript import Participant

SCHEMA = "agenteval.controls/1"


def gate(summary: Mapping[str, Any], thresholds: Mapping[str, Any]) -> list[str]:
    """Why this summary misses the thresholds (empty: it meets them)."""
    misses = []
    agreement = summary["agreement"]["value"]
    if summary["judged"] and agreement is not None and agreement < thresholds["min_agreement"]:
        misses.append(f"agreement {agreement:.3f} < {thresholds['min_agreement']}")
    if summary["false_passes"] > thresholds["max_false_passes"]:
        misses.append(
            f"{summary['false_passes']} false pass(es) > {thresholds['max_false_passes']}"
        )
    coverage = summary["coverage"] or 0.0
    if coverage < thresholds["min_coverage"]:
        misses.append(f"coverage {coverage:.3f} < {thresholds['min_coverage']}")
    return misses


def build_report(
    outcomes: Sequence[Outcome],
    judge: Participant,
    split: str,
    section: Mapping[str, Any],
    controls_digest: str,
) -> dict[str, Any]:
    resamples, seed = int(section["bootstrap_resamples"]), int(section["seed"])
    conf = float(section["conf"])
    splits = {
        name: summarize([o for o in outcomes if o.split == name], resamples, conf, seed)
        for name in SPLITS
        if any(o.split == name for o in outcomes)
    }
    gated = [split] if split != "all" else [s for s in section["gated_splits"] if s in splits]
    misses = {name: gate(splits[name], section) for name in gated}
    return {
        "schema": SCHEMA,
        "judge": judge.model_dump(mode="json"),
        "controls_digest": controls_digest,
        "split": split,
        "thresholds": {
            k: section[k] for k in ("min_agreement", "max_false_passes", "min_coverage")
        },
        "gated_splits": gated,
        "passed": not any(misses.values()),
        "misses": {k: v for k, v in misses.items() if v},
        "overall": summarize(outcomes, resamples, conf, seed),
        "splits": splits,
        "classes": by_class(outcomes),
        "self_consistency": consistency(outcomes),
        "controls": details(outcomes),
    }


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:.1f}%"


def _ci(e: Mapping[str, Any]) -> str:
    if e["value"] is None:
        return "n/a"
    if e["low"] is None:
        return f"{e['value']:.3f}"
    return f"{e['value']:.3f} [{e['low']:.3f}, {e['high']:.3f}]"


def _split_rows(report: Mapping[str, Any]) -> list[str]:
    rows = [
        "| split | controls | judged | coverage | agreement | Cohen's kappa | Gwet's AC1 "
        "| false passes | false-pass rate | false-fail rate |",
        "|---|---:|---:|---:|---|---|---|---:|---:|---:|",
    ]
    named = {**report["splits"], "all": report["overall"]}
    for name, s in named.items():
        rows.append(
            f"| {name} | {s['controls']} | {s['judged']} | {_pct(s['coverage'])} "
            f"| {_ci(s['agreement'])} | {_ci(s['kappa'])} | {_ci(s['ac1'])} "
            f"| {s['false_passes']} | {_pct(s['false_pass_rate'])} | {_pct(s['false_fail_rate'])} |"
        )
    return rows


def _confusion_rows(summary: Mapping[str, Any]) -> list[str]:
    rows = ["| label \\ judge | pass | fail | deferred |", "|---|---:|---:|---:|"]
    for label, cells in summary["confusion"].items():
        rows.append(f"| {label} | {cells['pass']} | {cells['fail']} | {cells['deferred']} |")
    return rows


def _class_rows(report: Mapping[str, Any]) -> list[str]:
    rows = [
        "| class | controls | coverage | agreement | false passes | false fails |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, c in report["classes"].items():
        rows.append(
            f"| {name} | {c['controls']} | {_pct(c['coverage'])} | {_pct(c['agreement'])} "
            f"| {c['false_passes']} | {c['false_fails']} |"
        )
    return rows


def _disagreements(report: Mapping[str, Any]) -> list[str]:
    rows = []
    for c in report["controls"]:
        if c["agrees"] is False:
            why = c["reasons"].get("correctness", "")
            rows.append(f"- `{c['id']}` ({c['split']}, {c['class']}): label {c['label']}, "
                        f"judge {c['verdict']} ({c['score']}) — {why}")  # fmt: skip
    return rows or ["(none)"]


def render_markdown(report: Mapping[str, Any]) -> str:
    judge = report["judge"]
    status = "meets" if report["passed"] else "MISSES"
    t = report["thresholds"]
    lines = [
        "# Judge controls",
        "",
        f"- **Judge:** {judge['kind']} / {judge.get('model') or '-'} "
        f"(config `{(judge.get('config_digest') or '')[:12]}`)",
        f"- **Split:** {report['split']} · controls digest `{report['controls_digest'][:12]}`",
        f"- **Gate** ({', '.join(report['gated_splits']) or 'none'}): {status} the thresholds "
        f"(agreement ≥ {t['min_agreement']}, false passes ≤ {t['max_false_passes']}, "
        f"coverage ≥ {t['min_coverage']})",
    ]
    for name, misses in report["misses"].items():
        lines.append(f"  - {name}: {'; '.join(misses)}")
    lines += ["", "Agreement is over judged controls; [low, high] is a 95% bootstrap interval.", ""]
    lines += _split_rows(report)
    lines += ["", "## Confusion (all selected controls)", "", *_confusion_rows(report["overall"])]
    sc = report["self_consistency"]
    if sc:
        lines += ["", "## Self-consistency", "",
                  f"- {sc['repeats']} repeats: identical verdicts on "
                  f"{_pct(sc['identical_verdicts'])}"
                  f" of controls; ICC(1,1) of turn scores {sc['icc_scores']}"]  # fmt: skip
    lines += ["", "## By class", "", *_class_rows(report)]
    lines += ["", "## Disagreements", "", *_disagreements(report), ""]
    return "\n".join(lines)
