import pytest

from toybox.money import format_money, parse_amount


def test_parse_amount_with_separators():
    assert parse_amount("$1,234.50") == pytest.approx(1234.5)


def test_parse_amount_rejects_empty():
    with pytest.raises(ValueError):
        parse_amount("  ")


def test_format_money():
    assert format_money(1234.5) == "$1,234.50"
    assert format_money(0) == "$0.00"
