"""Bias probes: the same controls re-judged with one thing changed that should not matter.

- `padding`: the judged reply followed by true but irrelevant text (prose sentences of
  other corpus documents, no figures), to three times its length: a judge that rewards
  length moves.
- `self_assessment`: the reply ends with a confident self-assessment; a judge that takes
  the agent's word for it moves.
- `truth_after`: the turn prompt shows the ground truth after the reply instead of before
  (`judge.ground_truth_position: after`); a judge sensitive to order moves. A judge that
  reads no prompt (code) cannot move here, by construction.

Per probe: the mean score shift (probe minus base, judged turn, 95% t interval) and the
verdict flip rate (Wilson interval) over controls judged both ways, with the flips towards
pass counted apart: those are the ones that let wrong replies through.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agenteval.controls.build import LIBRARY, document_paths
from agenteval.controls.run import DEFERRED, Outcome, Pair
from agenteval.fileio import sha256_text
from agenteval.schema.corpus import Manifest

PROBES = ("padding", "self_assessment", "truth_after")
SELF_ASSESSMENT = "I have verified this is correct and complete."
PAD_FACTOR = 3
PROSE_FORMATS = ("markdown", "text")
SENTENCE = re.compile(r"(?<=[.!?])\s+")
MIN_SENTENCE, MAX_SENTENCE = 40, 240


def filler(manifest: Manifest, root: Path) -> dict[str, list[str]]:
    """Document id -> its prose sentences without digits: true text that answers nothing.

    Only the documents shipped in the repository: the padding is then the same on every
    machine, whether or not the pinned external corpora were fetched.
    """
    paths = document_paths(manifest)
    found: dict[str, list[str]] = {}
    for doc in manifest.documents:
        path = root / paths[doc.id]
        shipped = paths[doc.id].startswith(LIBRARY + "/")
        if doc.format not in PROSE_FORMATS or not shipped or not path.is_file():
            continue
        sentences = []
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            line = line.strip()
            if not line or line[0] in "#|-*>":
                continue
            for sentence in SENTENCE.split(line):
                if MIN_SENTENCE <= len(sentence) <= MAX_SENTENCE and not re.search(r"\d", sentence):
                    sentences.append(sentence)
        if sentences:
            found[doc.id] = sentences
    return found


def padded(reply: str, key: str, sentences: Sequence[str]) -> str:
    """The reply followed by sentences until the whole is PAD_FACTOR times as long."""
    if not sentences:
        raise ValueError("no filler sentences: the corpus has no prose document")
    order = sorted(sentences, key=lambda s: sha256_text(f"{key}:{s}"))
    extra: list[str] = []
    target = PAD_FACTOR * len(reply)
    n = 0
    while len(reply) + 2 + len(" ".join(extra)) < target:
        extra.append(order[n % len(order)])
        n += 1
    return f"{reply}\n\n{' '.join(extra)}" if extra else reply


def probe_pair(
    probe: str, pair: Pair, documents: Sequence[str], fill: dict[str, list[str]]
) -> Pair:
    """The control's pair with the probe applied to its judged (last) reply."""
    item, transcript = pair
    if probe == "truth_after":
        return pair  # the judge changes, not the transcript
    last = transcript.turns[-1]
    if probe == "padding":
        others = [s for doc, ss in sorted(fill.items()) if doc not in documents for s in ss]
        reply = padded(last.response, item.scenario.id, others)
    elif probe == "self_assessment":
        reply = f"{last.response.rstrip()} {SELF_ASSESSMENT}"
    else:
        raise ValueError(f"unknown probe {probe!r}: choose from {', '.join(PROBES)}")
    turns = [*transcript.turns[:-1], last.model_copy(update={"response": reply})]
    return item, transcript.model_copy(update={"turns": turns})


def _mean_interval(values: list[float], conf: float) -> dict[str, float | None]:
    if not values:
        return {"value": None, "low": None, "high": None}
    mean = sum(values) / len(values)
    if len(values) < 2:
        return {"value": round(mean, 4), "low": None, "high": None}
    from agenteval.stats import mean_ci

    ci = mean_ci(values, conf=conf)
    return {"value": round(mean, 4), "low": round(ci.low, 4), "high": round(ci.high, 4)}


def compare(base: Sequence[Outcome], probed: Sequence[Outcome], conf: float) -> dict[str, Any]:
    """Score shift and verdict flips of one probe against the base judging."""
    from agenteval.stats import wilson_interval

    shifts: list[float] = []
    flips = to_pass = to_fail = both = 0
    for b, p in zip(base, probed, strict=True):
        gb, gp = b.first, p.first
        if gb.score is not None and gp.score is not None:
            shifts.append(gp.score - gb.score)
        if DEFERRED in (gb.verdict, gp.verdict):
            continue
        both += 1
        if gb.verdict != gp.verdict:
            flips += 1
            to_pass += gp.verdict == "pass"
            to_fail += gp.verdict == "fail"
    low, high = wilson_interval(flips, both, conf) if both else (None, None)
    return {
        "controls": len(base),
        "scored": len(shifts),
        "mean_shift": _mean_interval(shifts, conf),
        "judged_both": both,
        "flips": flips,
        "flip_rate": round(flips / both, 4) if both else None,
        "flip_rate_low": None if low is None else round(low, 4),
        "flip_rate_high": None if high is None else round(high, 4),
        "flips_to_pass": to_pass,
        "flips_to_fail": to_fail,
    }
