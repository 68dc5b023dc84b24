"""Currency rates against the dollar, read from data/rates.csv and cached on disk."""

import csv
import json
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
SOURCE = PROJECT / "data" / "rates.csv"
CACHE_DIR = PROJECT / ".toybox-cache"


def _read_source() -> dict[str, str]:
    with SOURCE.open(newline="", encoding="utf-8") as handle:
        return {row["currency"]: row["rate"] for row in csv.DictReader(handle)}


def load_rates() -> dict[str, float]:
    """Units of each currency per dollar."""
    cached = CACHE_DIR / "rates.json"
    if cached.is_file():
        return {code: float(rate) for code, rate in json.loads(cached.read_text()).items()}
    rates = _read_source()
    CACHE_DIR.mkdir(exist_ok=True)
    cached.write_text(json.dumps({code: float(rate) for code, rate in rates.items()}))
    return rates


def convert(dollars: float, currency: str) -> float:
    """`dollars` in `currency`, rounded to cents."""
    return round(dollars * load_rates()[currency], 2)
