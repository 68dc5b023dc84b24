"""The report's SVG charts: well-formed, what they show follows the data, byte-stable."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from agenteval.charts import bin_counts, histogram, horizontal_bars
from agenteval.report import chart_svgs

SVG = "{http://www.w3.org/2000/svg}"


def bars(svg: str) -> list[ET.Element]:
    return [e for e in ET.fromstring(svg).iter(f"{SVG}rect") if e.get("class") == "bar"]


def texts(svg: str) -> list[str]:
    return [e.text or "" for e in ET.fromstring(svg).iter(f"{SVG}text")]


def test_bar_widths_are_proportional_to_the_values_and_labels_are_escaped() -> None:
    svg = horizontal_bars(["a & <b>", "c", "d"], [0.25, 1.0, 0.0], title="T", x_label="rate")
    widths = [float(e.get("width", "nan")) for e in bars(svg)]
    assert len(widths) == 3
    assert widths[0] == pytest.approx(widths[1] / 4, abs=0.1)
    assert widths[2] == 0.0
    assert "a & <b>" in texts(svg)  # parsed back: the markup was escaped
    assert {"T", "rate", "0", "0.2", "1"} <= set(texts(svg))


def test_values_beyond_the_axis_are_clipped_to_it() -> None:
    widths = [float(e.get("width", "nan")) for e in bars(horizontal_bars(
        ["over", "under", "full"], [1.7, -0.3, 1.0], title="T", x_label="x"))]  # fmt: skip
    assert widths == [widths[2], 0.0, widths[2]]


def test_bins_count_every_value_in_range_and_the_top_edge_in_the_last_bin() -> None:
    values = [0.0, 0.49, 0.5, 9.99, 10.0, 10.5, -1.0, 5.0]
    counts = bin_counts(values, bins=20, low=0, high=10)
    assert sum(counts) == 6  # 10.5 and -1.0 are outside the range
    assert counts[0] == 2 and counts[1] == 1 and counts[10] == 1 and counts[19] == 2


def test_histogram_bar_heights_follow_the_counts() -> None:
    svg = histogram([1.0, 1.0, 1.0, 9.0], bins=10, low=0, high=10, title="S", x_label="score",
                    y_label="n")  # fmt: skip
    heights = [float(e.get("height", "nan")) for e in bars(svg)]
    assert len(heights) == 10
    assert heights[1] == pytest.approx(3 * heights[9], abs=0.2)  # one decimal in the file
    assert sum(1 for h in heights if h > 0) == 2
    assert {"0", "1", "2", "3"} <= set(texts(svg))  # whole-number count ticks up to the peak


def test_empty_data_still_draws_a_valid_chart_saying_so() -> None:
    bars_svg = horizontal_bars([], [], title="T", x_label="x")
    hist_svg = histogram([], bins=5, low=0, high=1, title="T", x_label="x", y_label="y")
    assert "no data" in texts(bars_svg) and "no data" in texts(hist_svg)


def test_the_report_charts_are_byte_stable_for_the_same_data() -> None:
    data = {
        "category_pass_rate": [{"category": "retrieval", "pass_rate": 0.5, "avg_score": 6.0}],
        "score_distribution": [{"scenario": "s", "iteration": 0, "score": 7.5}],
    }
    first, second = chart_svgs(data), chart_svgs(data)
    assert first == second
    assert len(bars(first["category_pass_rate"])) == 1
    assert sum(1 for e in bars(first["score_distribution"]) if float(e.get("height", 0)) > 0) == 1
