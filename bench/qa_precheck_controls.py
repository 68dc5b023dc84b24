"""How the QA code pre-check reads labelled replies: coverage, agreement, false passes.

    python bench/qa_precheck_controls.py [--split held|dev|all]

eval/qa/controls.jsonl holds replies labelled A/B/C by hand; the rules were written against
the dev split only, and the held split is the honest figure. A deferral (no letter) is a
loss of coverage, never an error; a false pass is the pre-check saying A to a reply whose
label is B or C.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agenteval.benchmarks.answers import final_answer, precheck  # noqa: E402


def load(split: str) -> list[dict[str, object]]:
    rows = [json.loads(line) for line in (ROOT / "eval/qa/controls.jsonl").open(encoding="utf-8")]
    return [r for r in rows if split == "all" or r["split"] == split]


def measure(rows: list[dict[str, object]]) -> dict[str, object]:
    tally: Counter[str] = Counter()
    wrong = []
    for row in rows:
        check = precheck(
            final_answer(str(row["reply"])),
            str(row["truth"]),
            [str(a) for a in row["aliases"]],
            str(row["question"]),
        )  # type: ignore[union-attr]
        if check.letter is None:
            tally["deferred"] += 1
            continue
        tally["settled"] += 1
        if check.letter == row["label"]:
            tally["agree"] += 1
            continue
        tally["false_pass" if check.letter == "A" else "disagree"] += 1
        wrong.append(f"{row['id']}: said {check.letter} ({check.rule}), label {row['label']}")
    total = len(rows)
    return {
        "controls": total,
        "coverage": round(tally["settled"] / total, 3) if total else None,
        "agreement_on_settled": round(tally["agree"] / tally["settled"], 3)
        if tally["settled"]
        else None,
        "false_passes": tally["false_pass"],
        "other_disagreements": tally["disagree"],
        "wrong": wrong,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="held", choices=["held", "dev", "all"])
    split = parser.parse_args().split
    result = measure(load(split))
    print(f"split {split}: {json.dumps(result, indent=2)}")
    print(f"rerun: python bench/qa_precheck_controls.py --split {split}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
