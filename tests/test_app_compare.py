"""The side-by-side page under AppTest: every kind of B, for MiniLM and the from-scratch
encoder; the difference is drawn when the tokens match and equals B − A."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("streamlit")

from .test_app_pages import assert_clean, decode, open_app

COMPARE = "pages/compare.py"


def chart(at, key: str) -> dict | None:
    found = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if key in (c.proto.id or "")]
    return found[0] if found else None


@pytest.mark.parametrize("what", ["text", "positions", "heads", "norm", "causal", "model"])
@pytest.mark.parametrize("source", ["scratch", "minilm"])
def test_every_comparison_draws_or_says_why_not(what, source):
    at = open_app(COMPARE, source=source, **{"compare.what": what})
    assert_clean(at)
    if source == "minilm" and what in ("heads", "norm", "causal"):
        assert any("from-scratch encoder in the sidebar" in i.value for i in at.info)
        return
    assert at.get("plotly_chart")
    if what != "model":  # two tokenizers may or may not split a text alike
        same_tokens = what != "text"
        assert (chart(at, "compare_diff") is not None) == same_tokens, what


def test_the_difference_is_b_minus_a():
    at = open_app(COMPARE, source="scratch", **{"compare.what": "causal"})
    ab = chart(at, "compare_ab")
    a, b = (decode(t["z"]) for t in ab["data"][:2])
    diff = chart(at, "compare_diff")
    z = decode(
        next(
            t["z"]
            for t in diff["data"]
            if t.get("type") == "heatmap" and "z" in t and decode(t["z"]).dtype.kind == "f"
        )
    )
    assert np.allclose(z, b - a, atol=1e-6, equal_nan=True)
    assert np.nanmax(np.abs(z)) > 0  # a causal mask changes a random head's weights


def test_heads_of_b_follow_the_number_input_and_invalid_counts_are_explained():
    at = open_app(COMPARE, source="scratch", **{"compare.what": "heads"})
    at.number_input(key="compare.n_heads_b").set_value(3).run()  # 64 is not divisible by 3
    assert_clean(at)
    assert any("divisible" in i.value for i in at.info)
    at.number_input(key="compare.n_heads_b").set_value(2).run()
    assert_clean(at)
    assert chart(at, "compare_diff") is not None
