"""The view state: typed values, round trips through URL query parameters, hostile links."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")

from hypothesis import given, settings
from hypothesis import strategies as st

from tformer.ui.state import MAX_CHARS, AttentionState, HeadsState, PositionalState, ViewState


def test_defaults_give_a_short_link_with_the_text_only():
    v = ViewState()
    assert set(v.to_query()) == {"text"}
    assert v.text.strip()  # the first example


def test_a_changed_view_survives_a_round_trip():
    v = ViewState(text="猫が好き <b>x</b> & y")
    v.set("source", "scratch")
    v.set("n_heads", 8)
    v.set("causal", True)
    v.set("d_ff", 100)
    v.set("layer", 3)
    v.set("attention.kind", "attn_scores")
    v.set("positional.dims", [0, 5, 9])
    v.set("heads.compare", ["L0H1", "L5H11"])
    v.set("train.memory_lengths", [512, 16])
    w, notices = ViewState.from_query(v.to_query())
    assert notices == []
    assert w == v
    assert w.page(PositionalState).dims == [0, 5, 9]
    assert w.page(AttentionState).kind == "attn_scores"


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(max_size=200),
    n_heads=st.integers(1, 32),
    k=st.integers(-1000, 1000),
    causal=st.booleans(),
    dims=st.none() | st.lists(st.integers(0, 4095), min_size=1, max_size=12),
)
def test_round_trip_property(text, n_heads, k, causal, dims):
    v = ViewState(text=text)
    v.set("n_heads", n_heads)
    v.set("positional.k", k)
    v.set("causal", causal)
    v.set("positional.dims", dims)
    w, notices = ViewState.from_query(v.to_query())
    assert notices == []
    assert w == v


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        ("n_heads", "<script>alert(1)</script>", "not an integer"),
        ("n_heads", "1e309", "not an integer"),
        ("n_heads", "9" * 400, "out of range"),
        ("n_layers", "0", "outside 1..12"),
        ("layer", "-1", "outside"),
        ("source", "javascript:alert(1)", "not one of"),
        ("causal", "maybe", "not 0 or 1"),
        ("attention.kind", "scores", "not one of"),
        ("positional.dims", "1,2," + "9" * 50, "out of range"),
        ("heads.compare", "L0H1,<img src=x>", "not an allowed name"),
        ("text", "x" * (MAX_CHARS + 1), "longer than"),
        ("train.memory_lengths", "16,100", "'100' is not one of 16, 32"),
        ("train.memory_layers", "2,2", "repeated"),
    ],
)
def test_hostile_values_fall_back_to_the_default_with_a_notice(key, value, why):
    v, notices = ViewState.from_query({key: value, "head": "2"})
    assert v.get(key) == ViewState().get(key)
    assert len(notices) == 1, notices
    assert key in notices[0], notices
    assert why in notices[0], notices
    assert v.head == 2  # the rest of the link still applies


def test_unknown_and_repeated_keys():
    v, notices = ViewState.from_query({"nope": "1", "pages": "x", "n_heads": ["2", "8"]})
    assert v.n_heads == 8  # the last of a repeated key
    assert len(notices) == 2
    assert all("unknown" in n for n in notices)


def test_set_refuses_what_a_widget_could_not_produce():
    v = ViewState()
    for key, value, message in [
        ("n_heads", True, "'True' is not an integer"),
        ("n_heads", 2.5, r"'2\.5' is not an integer"),
        ("text", None, "may not be empty"),
        ("heads.metric", 3, "'3' is not text"),
        ("positional.dims", list(range(13)), "expected at most 12 items"),
    ]:
        with pytest.raises(ValueError, match=message):
            v.set(key, value)
    with pytest.raises(KeyError):
        v.set("pages", {})
    assert v.page(HeadsState).compare is None


def test_links_made_before_a_rename_open_the_same_view():
    # keys and values as links of 9f2a7d3 spelled them (one name per concept since)
    old = {"costs.heads": "5", "compare.heads_b": "4", "heads.metric": "prev", "finder.role": "first"}
    view, notices = ViewState.from_query(old)
    assert notices == []
    assert (view.get("costs.n_heads"), view.get("compare.n_heads_b")) == (5, 4)
    assert (view.get("heads.metric"), view.get("finder.role")) == ("previous", "cls")
    # a link that has both spellings: the current key wins
    both, _ = ViewState.from_query({"costs.heads": "5", "costs.n_heads": "7"})
    assert both.get("costs.n_heads") == 7
    # the link written back uses the current names only
    query = view.to_query()
    assert "costs.heads" not in query
    assert query["costs.n_heads"] == "5"
    assert query["finder.role"] == "cls"


def test_the_role_fields_offer_the_head_finders_roles():
    from tformer.analysis.head_roles import ROLES

    v = ViewState()
    assert v.choices("finder.role") == tuple(ROLES)
    assert v.choices("train.role") == v.choices("train.saved_role") == ("auto", *ROLES)
