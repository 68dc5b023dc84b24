"""Retrieval at 10 / 100 / 1,000 documents: what indexing costs and what recall does as
distractors are added (agenteval.benchmarks.retrieval.scale; the retrieval pipeline's
evaluate stage runs the tiers of `retrieval.scale_tiers` and reports them too).

    python bench/retrieval_scale.py [--tiers 10,100,1000]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agenteval.benchmarks.retrieval.scale import run_tiers, table  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiers", default="10,100,1000")
    args = parser.parse_args()
    rows = run_tiers([int(t) for t in args.tiers.split(",")], ROOT)
    print("\n".join(table(rows)))
    print(f"\nrerun: python bench/retrieval_scale.py --tiers {args.tiers}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
