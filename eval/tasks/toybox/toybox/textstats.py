"""Word statistics for product descriptions."""

import re
from collections import Counter

_WORD = re.compile(r"[A-Za-z']+")


def words(text: str) -> list[str]:
    """The words of `text`, lowercased; apostrophes stay inside words ("don't")."""
    return [w.lower().strip("'") for w in _WORD.findall(text) if w.strip("'")]


def word_count(text: str) -> int:
    return len(words(text))


def top_words(text: str, n: int = 3) -> list[tuple[str, int]]:
    """The `n` most frequent words with their counts; ties in order of first appearance."""
    counts = Counter(words(text))
    return counts.most_common(n)


def average_word_length(text: str) -> float:
    """Mean letters per word, rounded to two decimals; 0.0 for text without words."""
    found = words(text)
    if not found:
        return 0.0
    return round(sum(len(w) for w in found) / len(found), 2)
