from toybox.inventory import Item, low_stock, restock_order

ITEMS = [Item("T-1", "yo-yo", 2), Item("T-2", "kite", 40), Item("T-3", "marbles", 0)]


def test_low_stock_finds_items_below_threshold():
    assert low_stock(ITEMS, 10) == ["T-1", "T-3"]


def test_restock_order():
    assert restock_order(ITEMS, 10, 25) == {"T-1": 23, "T-3": 25}
