"""The summary line of the weekly report."""


def _pct(value: float) -> str:
    percent = round(value * 100, 1)
    return f"{percent:.1f}%"


def summary_line(orders: int, refund_rate: float) -> str:
    """Orders placed and the share of them refunded."""
    return f"{orders} orders, {_pct(refund_rate)} refunded"
