"""The costs page under AppTest: each section offers its sweep, runs it with small settings
behind a progress bar, draws its charts and keeps the result for the next visit; the sparse
section shows the masks on the text, and says so when there is none."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("streamlit")

from ._i18n_check import english_words, visible_strings
from .test_app_pages import assert_clean, decode, open_app

PAGE = "pages/costs.py"
SMALL = {
    "costs.n_max": "256",
    "costs.call_ms": "100",
    "costs.heads": "2",
    "costs.d_head": "16",
    "costs.d_model": "64",
}


def chart(at, key: str) -> dict:
    found = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if key in (c.proto.id or "")]
    assert found, f"no chart {key!r}"
    return found[0]


def run_section(section: str, **params: str):
    at = open_app(PAGE, **{"costs.section": section, **SMALL, **params})
    assert_clean(at)
    assert not at.get("plotly_chart") or section == "sparse"  # nothing measured before asked
    assert params.get("lang") == "zh" or any("Not measured yet" in i.value for i in at.info)
    at.button(key=f"costs_run_{section}").click().run()
    assert_clean(at)
    return at


def test_the_wall_runs_draws_time_and_memory_and_is_kept():
    at = run_section("wall")
    time_fig, memory_fig = chart(at, "costs_time"), chart(at, "costs_memory")
    names = [t["name"] for t in time_fig["data"]]
    assert any(n.startswith("explicit attention") and "∝ n^" in n for n in names)
    assert any(n.startswith("SDPA, math backend") for n in names)
    assert any(n.startswith("our tiled loop") for n in names)
    formula = [t for t in memory_fig["data"] if t["name"].startswith("formula")]
    assert formula and formula[0]["line"]["dash"] == "dash"
    explicit = next(t for t in memory_fig["data"] if t["name"].startswith("explicit"))
    assert list(decode(explicit["x"])) == [64, 128, 256]
    peaks = decode(explicit["y"])
    assert all(peaks[1:] > peaks[:-1])  # grows with n
    captions = " ".join(c.value for c in at.caption)
    assert "torch profiler memory events" in captions and "Device: the CPU" in captions
    assert any("Where each method stopped" in m.value for m in at.markdown)
    # the next run (or another visitor) sees the result without asking again
    at.run()
    assert_clean(at)
    assert not any("Not measured yet" in i.value for i in at.info)
    assert at.button(key="costs_again_wall")
    assert chart(at, "costs_time")


def test_the_rnn_section_times_a_gru_and_attention_and_shows_path_lengths():
    at = run_section("rnn")
    names = [t["name"] for t in chart(at, "costs_time")["data"]]
    assert any(n.startswith("GRU") for n in names) and any(
        n.startswith("one self-attention layer") for n in names
    )
    path = chart(at, "costs_path")
    gru = next(t for t in path["data"] if "n − 1" in t["name"])
    assert list(decode(gru["y"])) == [63, 127, 255]
    attention = next(t for t in path["data"] if t["name"].startswith("attention"))
    assert set(decode(attention["y"]).tolist()) == {1.0}


def test_the_sparse_section_shows_the_masks_on_the_text_and_times_them():
    at = run_section("sparse", text="The cat sat on the mat and looked at the dog.", **{"costs.window": "1"})
    patterns = chart(at, "sparse_patterns")
    local = decode(patterns["data"][1]["z"])
    n = local.shape[0]
    assert local[0, 3] == 0 and local[5, 9] == 0  # outside |i − j| <= 1: weight 0
    assert abs(local.sum(-1) - 1).max() < 1e-4
    titles = [a["text"] for a in patterns["layout"]["annotations"]]
    allowed = 3 * n - 2  # the band |i − j| <= 1
    assert titles[1] == f"local, w = 1: {allowed / n**2:.0%} of the cells"
    assert chart(at, "costs_time")
    assert at.dataframe  # the time table


def test_with_no_text_the_sparse_section_says_so_and_still_measures():
    at = run_section("sparse", text="")
    assert any("No text" in i.value for i in at.info)
    assert chart(at, "costs_time")


def test_settings_that_do_not_fit_are_explained():
    at = open_app(PAGE, **{"costs.section": "rnn", "costs.d_model": "64", "costs.heads": "5"})
    assert_clean(at)
    assert any("not divisible" in w.value for w in at.warning)


def test_the_measured_page_in_chinese_has_no_english_left(monkeypatch):
    monkeypatch.setenv("TFORMER_I18N_MAIN_ONLY", "1")  # the shared sidebar is another page's
    at = run_section("wall", lang="zh")
    from tformer.ui.registry import page_for

    heading = page_for(PAGE).heading
    left = english_words(s for s in visible_strings(at) if s != heading)
    assert not left, left
