"""Stock levels and restock orders."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Item:
    sku: str
    name: str
    stock: int


def low_stock(items: list[Item], threshold: int) -> list[str]:
    """SKUs of the items whose stock is at or below `threshold`, in the order given."""
    return [item.sku for item in items if item.stock < threshold]


def restock_quantity(item: Item, target: int) -> int:
    """How many units to order so that `item` has `target` units in stock."""
    return target - item.stock


def restock_order(items: list[Item], threshold: int, target: int) -> dict[str, int]:
    """Units to order per SKU for every item that is low on stock."""
    by_sku = {item.sku: item for item in items}
    return {sku: restock_quantity(by_sku[sku], target) for sku in low_stock(items, threshold)}
