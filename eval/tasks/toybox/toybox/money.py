"""Amounts of money in dollars."""


def parse_amount(text: str) -> float:
    """A typed amount such as "1,234.50" or "$12" as a number of dollars."""
    cleaned = text.strip().replace("$", "").replace(",", "")
    if not cleaned:
        raise ValueError("empty amount")
    return float(cleaned)


def format_money(amount: float) -> str:
    """Dollars with a thousands separator and two decimals: 1234.5 -> "$1,234.50"."""
    return f"${amount:,.2f}"
