"""A lesson's progress string (the view state's ``quiz``, kept by a share link): it round-trips,
a later record of a step wins, and anything else is refused by the view state's check."""

from __future__ import annotations

import re

import pytest

from tformer.ui.progress import Record, encode_value, format_progress, parse_progress
from tformer.ui.state import ViewState


def test_records_round_trip_by_step():
    records = {
        4: Record("s", 0),
        0: Record("r", 1, "7"),
        3: Record("w", 2, "0.5"),
        5: Record("p", 1, "lower"),
    }
    text = format_progress(records)
    assert text == "0r1:7,3w2:0.5,4s0,5p1:lower"
    assert parse_progress(text) == records
    assert parse_progress("") == {}
    assert parse_progress("2r0:1,2w2:3") == {2: Record("w", 2, "3")}


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(7, "7"), (0.68, "0.68"), (1536.0, "1536"), (1e-5, "1e-05"), ("pos_d_head", "pos_d_head"), ("0.2", "0.2"),
     (float("inf"), None), (True, None), ("a b", None), ("<b>", None), ("x" * 25, None)],
)  # fmt: skip
def test_values_are_kept_only_when_they_fit(value, encoded):
    assert encode_value(value) == encoded


@pytest.mark.parametrize(
    "text", ["0r0:<script>", "0x0", "100r0", "0r10", "0r0:", ",0r0", "0r0," * 101, "0r0 "]
)
def test_the_view_state_refuses_a_bad_progress_string(text):
    view, notices = ViewState.from_query({"quiz": text})
    assert view.quiz == "", notices
    assert len(notices) == 1, notices
    # the message quotes at most the first 40 characters
    with pytest.raises(ValueError, match=re.escape(f"not a progress string: {text[:40]!r}")):
        parse_progress(text)


def test_the_view_state_keeps_a_good_one_in_the_link():
    view, notices = ViewState.from_query({"quiz": "0r1:7,3w2:0.5"})
    assert notices == []
    assert view.quiz == "0r1:7,3w2:0.5"
    assert view.to_query()["quiz"] == "0r1:7,3w2:0.5"
    assert "quiz" not in ViewState().to_query()


def test_a_record_checks_itself():
    with pytest.raises(ValueError, match="status 'x' must be one of"):
        Record("x")
    with pytest.raises(ValueError, match=r"tries in 0\.\.9"):
        Record("r", 10)
    with pytest.raises(ValueError, match="value '<b>' must match"):
        Record("r", 0, "<b>")
