"""reports/controls.json and controls.md: a judge measured on labelled controls, and its gate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agenteval.controls.load import SPLITS
from agenteval.controls.run import Outcome, by_class, consistency, details, summarize
from agenteval.schema.transcript import Participant

SCHEMA = "agenteval.controls/1"


THRESHOLDS = ("min_agreement", "max_false_passes", "min_coverage", "min_self_consistency")


def gate(
    summary: Mapping[str, Any],
    thresholds: Mapping[str, Any],
    consistency: Mapping[str, Any] | None = None,
) -> list[str]:
    """Why this summary (and self-consistency, when measured) misses the thresholds."""
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
    same = (consistency or {}).get("identical_verdicts")
    wanted = thresholds.get("min_self_consistency")
    if same is not None and wanted is not None and same < wanted:
        misses.append(f"self-consistency {same:.3f} < {wanted} (identical verdicts over repeats)")
    return misses


def build_report(
    outcomes: Sequence[Outcome],
    judge: Participant,
    split: str,
    section: Mapping[str, Any],
    controls_digest: str,
    tuned: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """`tuned`: class -> the tuning record's entries written on it (load.tuned_by)."""
    resamples, seed = int(section["bootstrap_resamples"]), int(section["seed"])
    conf = float(section["conf"])
    splits = {
        name: summarize([o for o in outcomes if o.split == name], resamples, conf, seed)
        for name in SPLITS
        if any(o.split == name for o in outcomes)
    }
    gated = [split] if split != "all" else [s for s in section["gated_splits"] if s in splits]
    sc = consistency(outcomes, conf)
    misses = {name: gate(splits[name], section, sc) for name in gated}
    return {
        "schema": SCHEMA,
        "judge": judge.model_dump(mode="json"),
        "controls_digest": controls_digest,
        "split": split,
        "thresholds": {k: section[k] for k in THRESHOLDS if k in section},
        "gated_splits": gated,
        "passed": not any(misses.values()),
        "misses": {k: v for k, v in misses.items() if v},
        "overall": summarize(outcomes, resamples, conf, seed),
        "splits": splits,
        "classes": by_class(outcomes),
        "leave_one_class_out": leave_one_class_out(outcomes, tuned or {}, resamples, conf, seed),
        "self_consistency": sc,
        "controls": details(outcomes),
    }


def leave_one_class_out(
    outcomes: Sequence[Outcome],
    tuned: Mapping[str, Sequence[str]],
    resamples: int,
    conf: float,
    seed: int,
) -> dict[str, Any]:
    """Each class's figure with the rules fixed, and which classes are honestly held out.

    The judge's rules do not change while a class is scored, so a class's own figure is a
    leave-one-class-out figure only if no rule was written or tuned on it: the tuning record
    says which were. The pooled `unseen` summary is over the never-tuned classes alone; a
    tuned class's figure is shown, marked, and never counted as unseen."""
    rows = {
        name: {**row, "tuned_by": list(tuned.get(name, [])), "held_out": not tuned.get(name)}
        for name, row in by_class(outcomes).items()
    }
    unseen = [o for o in outcomes if not tuned.get(o.klass)]
    return {
        "unseen_classes": sorted(n for n, r in rows.items() if r["held_out"]),
        "unseen": summarize(unseen, resamples, conf, seed) if unseen else None,
        "classes": rows,
    }


def unseen_line(loco: Mapping[str, Any] | None) -> str:
    """The pooled figure of the classes no rule was tuned on, in one line."""
    loco = loco or {}
    s, classes = loco.get("unseen"), loco.get("unseen_classes") or []
    if not s:
        return "classes never tuned on: none among the selected controls"
    agreement = s["agreement"]["value"]
    shown = "n/a" if agreement is None else f"{agreement:.3f}"
    return (
        f"classes never tuned on ({len(classes)}): {s['controls']} control(s), "
        f"{s['judged']} judged (coverage {s['coverage']}), agreement {shown}, "
        f"false passes {s['false_passes']}, false fails {s['false_fails']}"
    )


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
        "| false passes | false-pass rate | false-fail rate | code-certain: false passes |",
        "|---|---:|---:|---:|---|---|---|---:|---:|---:|---:|",
    ]
    named = {**report["splits"], "all": report["overall"]}
    for name, s in named.items():
        certain = s.get("code_certain") or {"controls": 0, "false_passes": 0}
        rows.append(
            f"| {name} | {s['controls']} | {s['judged']} | {_pct(s['coverage'])} "
            f"| {_ci(s['agreement'])} | {_ci(s['kappa'])} | {_ci(s['ac1'])} "
            f"| {s['false_passes']} | {rate_interval(s)} | {_pct(s['false_fail_rate'])} "
            f"| {certain['false_passes']} of {certain['controls']} |"
        )
    return rows


def settled_line(settled: Mapping[str, Any]) -> str:
    """The judge beside the code judge alone on the controls code settles, in one line."""
    agreement = settled["agreement"]
    shown = "n/a" if agreement is None else f"{agreement:.3f}"
    code = settled["code_agreement"]
    code_shown = "n/a" if code is None else f"{code:.3f}"
    return (
        f"on the {settled['controls']} control(s) the code judge settles, {settled['judged']} "
        f"judged: agreement {shown} (code alone {code_shown}), false passes "
        f"{settled['false_passes']} (code alone {settled['code_false_passes']})"
    )


def rate_interval(s: Mapping[str, Any]) -> str:
    """The false-pass rate with its Wilson interval: `0.0% [0.0%, 4.9%]`."""
    interval = s.get("false_pass_interval") or {}
    if s["false_pass_rate"] is None or interval.get("low") is None:
        return _pct(s["false_pass_rate"])
    return f"{_pct(s['false_pass_rate'])} [{_pct(interval['low'])}, {_pct(interval['high'])}]"


def _consistency_lines(sc: Mapping[str, Any] | None) -> list[str]:
    if not sc:
        return []
    flips = f"{_pct(sc['flip_rate'])} [{_pct(sc['flip_rate_low'])}, {_pct(sc['flip_rate_high'])}]"
    return ["", "## Self-consistency", "",
            f"- {sc['repeats']} judgings of each control: identical verdicts on "
            f"{_pct(sc['identical_verdicts'])}, flip rate {flips}; score SEM "
            f"{sc['score_sem']} (over {sc['scored_items']} controls); ICC(1,1) of turn scores "
            f"{sc['icc_scores']}"]  # fmt: skip


PROBE_NAMES = {
    "padding": "padding (true irrelevant text, 3x the reply)",
    "self_assessment": "self-assessment appended",
    "truth_after": "ground truth after the reply",
}


def _probe_lines(probes: Mapping[str, Any] | None) -> list[str]:
    if not probes:
        return []
    rows = ["", "## Bias probes", "",
            "Each control re-judged with one change that should not matter. Shift: probe score "
            "minus base score on the judged turn (95% t interval); flip rate over controls "
            "judged both ways (95% Wilson interval).", "",
            "| probe | controls | mean score shift | flips | flip rate | to pass | to fail |",
            "|---|---:|---|---:|---|---:|---:|"]  # fmt: skip
    for name, p in probes.items():
        rate = (
            "n/a"
            if p["flip_rate"] is None
            else (
                f"{_pct(p['flip_rate'])} [{_pct(p['flip_rate_low'])}, {_pct(p['flip_rate_high'])}]"
            )
        )
        rows.append(
            f"| {PROBE_NAMES.get(name, name)} | {p['controls']} | {_ci(p['mean_shift'])} "
            f"| {p['flips']} of {p['judged_both']} | {rate} | {p['flips_to_pass']} "
            f"| {p['flips_to_fail']} |"
        )
    return rows


def people_lines(people: Mapping[str, Any] | None) -> list[str]:
    """Agreement with people (eval/people_controls/) beside the written controls' table."""
    if not people:
        return []
    intro = (
        f"The same judge on {people['controls']} turn(s) reviewers labelled in MLflow "
        "(`agenteval controls import`), dealt dev / held / fresh by a salted hash."
    )
    rows = ["", "## Agreement with people", "", intro, ""]
    rows += _split_rows(people)
    wrong = [f"- `{d['id']}` ({d['split']}): people {d['label']}, judge {d['verdict']}"
             for d in people["disagreements"]]  # fmt: skip
    return [*rows, "", *(wrong or ["(no disagreement with people)"])]


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


LOCO_NOTE = (
    "The judge's rules are fixed while each class is scored. A class's figure is a "
    "leave-one-class-out figure only when the tuning record (eval/judge_controls/tuning.yaml) "
    "names no rule written or tuned on it; a class marked tuned measured its own rules, and "
    "its figure flatters the judge. The pooled row counts the never-tuned classes only."
)


def _loco_rows(report: Mapping[str, Any]) -> list[str]:
    loco = report.get("leave_one_class_out")
    if not loco:
        return []
    rows = ["", "## Leave one class out", "", LOCO_NOTE, "", f"- {unseen_line(loco)}", "",
            "| class | tuned on by | controls | coverage | agreement | false passes "
            "| false fails |", "|---|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    ordered = sorted(loco["classes"].items(), key=lambda kv: (not kv[1]["held_out"], kv[0]))
    for name, c in ordered:
        by = ", ".join(c["tuned_by"]) or "never (held out)"
        rows.append(
            f"| {name} | {by} | {c['controls']} | {_pct(c['coverage'])} "
            f"| {_pct(c['agreement'])} | {c['false_passes']} | {c['false_fails']} |"
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
        f"coverage ≥ {t['min_coverage']}"
        + (
            f", self-consistency ≥ {t['min_self_consistency']} with repeats)"
            if "min_self_consistency" in t
            else ")"
        ),
    ]
    for name, misses in report["misses"].items():
        lines.append(f"  - {name}: {'; '.join(misses)}")
    lines += ["", "Agreement is over judged controls; [low, high] is a 95% bootstrap interval "
              "(a Wilson interval for the false-pass rate). Code-certain: fail-labelled "
              "controls whose failing dimension a binding code finding settles.", ""]  # fmt: skip
    lines += _split_rows(report)
    if judge["kind"] != "code":
        lines += ["", "Beside the code judge alone:", ""]
        lines += [f"- {name}: {settled_line(s['code_settled'])}"
                  for name, s in report["splits"].items()]  # fmt: skip
    lines += ["", "## Confusion (all selected controls)", "", *_confusion_rows(report["overall"])]
    lines += _consistency_lines(report["self_consistency"])
    lines += _probe_lines(report.get("probes"))
    lines += people_lines(report.get("people"))
    lines += ["", "## By class", "", *_class_rows(report)]
    lines += _loco_rows(report)
    lines += ["", "## Disagreements", "", *_disagreements(report), ""]
    return "\n".join(lines)
