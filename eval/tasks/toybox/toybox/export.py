"""CSV export lines for the warehouse system."""


def _fmt_pct(ratio: float) -> str:
    return "{:.1f}%".format(ratio * 100)


def legacy_header() -> str:
    """The header row of the export file."""
    return "id,name,qty"


def export_line(sku: str, qty: int, share: float) -> str:
    """One export row: SKU, quantity and its share of the total."""
    return f"{sku},{qty},{_fmt_pct(share)}"
