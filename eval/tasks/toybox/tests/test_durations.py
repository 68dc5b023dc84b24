import pytest

from toybox.durations import format_duration, parse_duration


@pytest.mark.parametrize("text,seconds", [("45s", 45), ("15m", 900), ("2h", 7200), (" 3m ", 180)])
def test_parse_single_unit(text, seconds):
    assert parse_duration(text) == seconds


def test_parse_rejects_garbage():
    with pytest.raises(ValueError):
        parse_duration("soon")


@pytest.mark.parametrize("seconds,text", [(7200, "2h"), (900, "15m"), (90, "90s"), (0, "0s")])
def test_format(seconds, text):
    assert format_duration(seconds) == text
