from toybox.export import export_line, legacy_header
from toybox.report import summary_line


def test_export_line():
    assert export_line("T-1", 3, 0.125) == "T-1,3,12.5%"


def test_header():
    assert legacy_header().split(",")[0] == "id"


def test_summary_line():
    assert summary_line(40, 0.05) == "40 orders, 5.0% refunded"
