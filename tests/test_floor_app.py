"""benchmarks/floor.py's bare app (no tformer code): a heatmap of one row per word, or with
?chart=0 the text alone, so its timings are those of Streamlit and Plotly themselves."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("streamlit")

from streamlit.testing.v1 import AppTest

from benchmarks.floor import BARE_APP, words


def test_the_bare_app_draws_one_row_per_word():
    at = AppTest.from_string(BARE_APP, default_timeout=30).run()
    at.text_area(key="text").input(words(128, 1)).run()
    assert not at.exception
    [chart] = at.get("plotly_chart")
    trace = json.loads(chart.proto.spec)["data"][0]
    assert trace["type"] == "heatmap"
    assert trace["z"]["shape"].replace(" ", "") == "128,128"
    assert "tformer" not in BARE_APP


def test_the_text_only_variant_draws_no_chart():
    at = AppTest.from_string(BARE_APP, default_timeout=30)
    at.query_params["chart"] = "0"
    at.run()
    at.text_area(key="text").input(words(16, 2)).run()
    assert not at.exception
    assert at.get("plotly_chart") == []
    assert at.caption[0].value.startswith("16 words")
