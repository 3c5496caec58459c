"""The precision page under AppTest: the table (a row per variant, INT8 smaller), the layer x head
map of the chosen variant, the chosen head in float32 beside it and their difference; MiniLM,
a from-scratch encoder, the shortest text, a text past 512 tokens, Chinese."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("streamlit")

from tformer.efficiency.precision import VARIANTS

from .test_app_experiments import chart
from .test_app_pages import assert_clean, decode, open_app

PAGE = "pages/precision.py"
LONG = "the quick brown fox jumps over the lazy dog " * 60  # truncated to 512 tokens


def table(at):
    """The precision table, a row per variant. The page shows it turned on its side (a column
    per variant: 13 columns did not fit a 1400 px window), its numbers as formatted; turned
    back here, numbers parsed."""
    import pandas as pd

    assert at.dataframe, "no table"
    shown = at.dataframe[0].value
    assert shown.columns[0] == "variant", list(shown.columns)
    rows = shown.set_index("variant").T  # index: the variants; columns: what was measured
    rows = rows.rename_axis(None, axis=1).rename_axis("variant").reset_index()

    def number(text):
        cleaned = str(text).replace("×", "").replace("%", "").strip()
        try:
            return float(cleaned)
        except ValueError:
            return text

    return pd.DataFrame({c: rows[c] if c == "variant" else rows[c].map(number) for c in rows.columns})


def open_settled(page, **params):
    """The page opened once the server's precision worker has nothing left to do: a first
    visit asks it for the timings and the comparisons that run did not make itself, and a
    second visitor's first run (the AppTest harness reads a radio's label in English after a
    second run of the same session) finds them all."""
    from tformer.ui.views.precision.jobs import precision_jobs

    first = open_app(page, **params)
    assert_clean(first)
    assert precision_jobs().idle(120), "the precision worker did not finish"
    at = open_app(page, **params)
    assert not any("Still working in the background" in i.value for i in at.info)
    return at


def check_page(at, n_layers: int, n_heads: int, n_pos: int) -> None:
    assert_clean(at)
    t = table(at)
    assert len(t) == len(VARIANTS)
    by_name = dict(zip(t["variant"], t["weights (MB)"], strict=True))
    int8 = [name for name in by_name if name.startswith("INT8")]
    assert len(int8) == 2
    ref = by_name["float32 (the reference)"]
    assert all(by_name[name] < ref for name in int8)
    assert by_name["bfloat16"] == pytest.approx(ref / 2, abs=0.1)  # shown to 0.1 MB
    assert t["max |Δ pattern|"].iloc[0] == 0.0  # float32 against itself
    heads = decode(chart(at, "precision_heads")["data"][0]["z"])
    assert heads.shape == (n_layers, n_heads)
    pair = chart(at, "precision_pair")
    assert len([d for d in pair["data"] if d.get("type") == "heatmap"]) >= 2
    diff = chart(at, "precision_diff")
    assert diff["layout"]["meta"]["n_pos"] == n_pos
    chart(at, "precision_costs")


def test_minilm_table_maps_and_the_chosen_head():
    at = open_settled(PAGE, text="The cat sat on the mat.")
    check_page(at, 6, 12, 9)
    t = table(at)
    bf = t[t["variant"] == "bfloat16"].iloc[0]
    assert 0 < bf["max |Δ pattern|"] < 0.1
    # the difference shown is the variant's head minus float32's, at full resolution (9 tokens)
    pair = chart(at, "precision_pair")
    base, low = (decode(d["z"]) for d in pair["data"] if d.get("type") == "heatmap")
    shown = decode(chart(at, "precision_diff")["data"][0]["z"])
    assert np.allclose(shown, low - base, atol=1e-6)
    assert np.abs(shown).max() > 0
    # the map follows the chosen variant and metric
    at.selectbox(key="precision.variant").set_value("int8").run()
    assert_clean(at)
    int8_changed = decode(chart(at, "precision_heads")["data"][0]["z"])
    assert 0 < int8_changed.max() <= 100  # percent of each head's query rows
    assert np.allclose(int8_changed * 9, np.round(int8_changed * 9), atol=1e-3)  # k of 9 rows, in %
    at.radio(key="precision.metric").set_value("max_diff").run()
    assert_clean(at)
    int8_max = decode(chart(at, "precision_heads")["data"][0]["z"])
    assert int8_max.max() == pytest.approx(
        t[t["variant"].str.contains("per matrix")].iloc[0]["max |Δ pattern|"], rel=0.01
    )  # the table shows 3 significant digits
    at.selectbox(key="layer").set_value(3).run()
    at.selectbox(key="head").set_value(7).run()
    assert_clean(at)
    assert any("Layer 3, head 7" in c.value for c in at.caption)
    [outline] = chart(at, "precision_heads")["layout"]["shapes"]
    assert (outline["x0"], outline["y0"]) == (6.5, 2.5)  # the chosen head, outlined on the map


def test_a_from_scratch_encoder_with_chinese_text():
    at = open_settled(PAGE, text="注意力机制很有用。", source="scratch")
    n = len(chart(at, "precision_diff")["layout"]["xaxis"]["ticktext"])
    check_page(at, 2, 4, n)


def test_the_shortest_text():
    at = open_settled(PAGE, text="a")
    check_page(at, 6, 12, 3)  # [CLS] a [SEP]


def test_a_text_past_512_tokens_is_cut_and_still_compared():
    at = open_settled(PAGE, text=LONG)
    check_page(at, 6, 12, 512)
    assert any("512" in w.value for w in at.warning)
    assert chart(at, "precision_diff")["layout"]["meta"]["block"] > 1  # pooled for the browser


def open_noisy_and_busy(monkeypatch, **params: str):
    """The page on a forced noisy, busy machine: forwards that last 5 and 40 ms in turn (a
    fake clock) and a training run in another thread of the server."""
    import threading

    import tformer.timing
    from tformer.timing import activity

    state = {"t": 0.0, "k": 0}

    def clock() -> float:
        state["k"] += 1
        state["t"] += 0.040 if state["k"] % 2 else 0.005  # each reading: forwards alternate
        return state["t"]

    monkeypatch.setattr(tformer.timing, "perf_counter", clock)
    started, release = threading.Event(), threading.Event()

    def training() -> None:
        with activity("training run"):
            started.set()
            release.wait(60)

    th = threading.Thread(target=training, daemon=True)
    th.start()
    started.wait(5)
    try:
        at = open_settled(PAGE, text="Noisy machines make rough timings.", **params)
    finally:
        release.set()
        th.join(5)
    assert_clean(at)
    return at


def test_a_noisy_busy_machine_shows_the_spread_and_says_so(monkeypatch):
    """The table has the quartiles, the time bars their error bars, and the page says the
    timings did not settle and names the other work."""
    at = open_noisy_and_busy(monkeypatch)
    t = table(at)
    quartiles = t["quartiles (ms)"].tolist()
    assert all(isinstance(q, str) and "–" in q for q in quartiles)
    low, high = (float(v) for v in quartiles[0].split("–"))
    # the median inside its quartiles (q1 <= median <= q3; the table rounds to 0.1 ms), which differ
    assert low <= t["forward (ms)"].iloc[0] <= high
    assert low < high
    bars = chart(at, "precision_costs")["data"][0]["error_x"]
    assert bars["type"] == "data"
    assert decode(bars["array"]).min() > 0
    warnings = " ".join(w.value for w in at.warning)
    assert "Other work ran during this measurement: 1 training run" in warnings
    infos = " ".join(i.value for i in at.info)
    assert "varied by more than 5% of their median" in infos
    assert "float32 (the reference)" in infos
    assert any("Busy check:" in c.value for c in at.caption)


def _token_labels(text: str) -> list[str]:
    from tformer import load_pretrained

    return load_pretrained("minilm")[1].encode(text).labels


def test_the_noisy_busy_notes_in_chinese_have_no_english_left(monkeypatch):
    from ._i18n_check import english_words, visible_strings

    monkeypatch.setenv("TFORMER_I18N_MAIN_ONLY", "1")  # the shared sidebar is another page's
    at = open_noisy_and_busy(monkeypatch, lang="zh")
    shown = list(visible_strings(at))
    assert any("测量期间还有其他工作在运行" in s for s in shown)
    # the text box's sentence, and its tokens quoted in the notes
    left = english_words(
        (s for s in shown if "Noisy" not in s), tokens=_token_labels(at.session_state["text"])
    )
    assert not left, left


def test_a_first_visit_shows_what_is_still_running_and_the_worker_fills_it_in():
    """A fresh server's first visit compares float32 and the chosen variant itself and leaves
    the other comparisons and the band's timings to the worker: the page says what is still
    running, shows no time yet, and a later run has every number."""
    from tformer.ui.views.precision.jobs import precision_jobs

    at = open_app(PAGE, text="The cat sat on the mat.")
    assert_clean(at)
    infos = " ".join(i.value for i in at.info)
    assert "Still working in the background" in infos
    assert "timing the 5 formats at 16 tokens" in infos
    assert not any(getattr(c, "key", None) == "precision_costs" for c in at.get("plotly_chart"))
    t = table(at)
    got = dict(zip(t["variant"], t["max |Δ pattern|"], strict=True))
    assert got["float32 (the reference)"] == 0.0
    assert 0 < got["bfloat16"] < 0.1  # compared in the run
    for col in ("forward (ms)", "timed runs"):  # not timed yet: blank cells, not a 0
        assert (t[col].astype(str).str.strip() == "").all(), t[col]
    # the chosen head's maps do not wait for the worker
    chart(at, "precision_heads")
    chart(at, "precision_diff")
    assert precision_jobs().idle(120)
    again = open_app(PAGE, text="The cat sat on the mat.")
    check_page(again, 6, 12, 9)
    t = table(again)
    assert all(isinstance(v, float) for v in [*t["forward (ms)"], *t["max |Δ pattern|"]])


MEDIUM = "the quick brown fox jumps over the lazy dog " * 6  # 56 tokens: past the first band


def test_an_edit_leaves_slow_comparisons_to_the_worker_and_reuses_their_capture(monkeypatch):
    """On a text past the smallest band, a variant whose cost is not known yet (or too high for
    the run) is compared by the worker, never in the page run: the page draws float32's part and
    says what is coming; once it has come, the map and the chosen head are drawn from the
    comparison's own capture (the variant does not run again). A variant chosen afterwards, whose
    comparison kept no capture, runs once more in the worker for its head."""
    import threading

    from tformer.ui.views.precision import compute
    from tformer.ui.views.precision.jobs import precision_jobs

    ran: list[tuple[str, str]] = []  # (variant, thread) of every variant capture
    real = compute.variant_capture

    def spy(variant, encoded):
        ran.append((variant.name, threading.current_thread().name))
        return real(variant, encoded)

    monkeypatch.setattr(compute, "variant_capture", spy)
    started, release = threading.Event(), threading.Event()
    precision_jobs().submit([("hold", lambda: started.set() or release.wait(60))])  # the worker is busy
    assert started.wait(10)
    try:
        at = open_app(PAGE, text=MEDIUM)
    finally:
        release.set()
    assert_clean(at)
    infos = " ".join(i.value for i in at.info)
    assert "Comparing bfloat16 with float32 on this text in the background" in infos
    assert not any(getattr(c, "key", None) == "precision_heads" for c in at.get("plotly_chart"))
    waiting = chart(at, "precision_pair")  # meanwhile the chosen head in float32 alone
    assert [d["type"] for d in waiting["data"] if d.get("type") == "heatmap"] == ["heatmap"]
    got = dict(zip(table(at)["variant"], table(at)["max |Δ pattern|"], strict=True))
    assert got["float32 (the reference)"] == 0.0  # float32 is always the run's own
    assert str(got["bfloat16"]).strip() == ""  # not compared in the run
    assert precision_jobs().idle(120)
    assert ran
    assert all(thread == "tformer-precision" for _, thread in ran), ran
    assert sorted(name for name, _ in ran) == sorted(["bfloat16", "float16", "int8", "int8_channel"])
    before = len(ran)
    at.run()
    assert_clean(at)
    chart(at, "precision_heads")
    pair = chart(at, "precision_pair")
    base, low = (decode(d["z"]) for d in pair["data"] if d.get("type") == "heatmap")
    assert np.abs(low - base).max() > 0
    assert len(ran) == before  # the head came from the comparison's capture
    at.selectbox(key="precision.variant").set_value("float16").run()
    assert_clean(at)
    chart(at, "precision_heads")  # its comparison is done: the map is drawn at once
    assert precision_jobs().idle(120)
    at.run()
    assert_clean(at)
    chart(at, "precision_pair")
    assert [name for name, _ in ran[before:]] == ["float16"]  # once, for its head


def test_the_waiting_view_in_chinese_has_no_english_left(monkeypatch):
    """While the worker still compares the chosen variant, the notes and the float32 head are in
    Chinese too."""
    import threading

    from tformer.ui.views.precision.jobs import precision_jobs

    from ._i18n_check import english_words, visible_strings

    monkeypatch.setenv("TFORMER_I18N_MAIN_ONLY", "1")  # the shared sidebar is another page's
    started, release = threading.Event(), threading.Event()
    precision_jobs().submit([("hold", lambda: started.set() or release.wait(60))])
    assert started.wait(10)
    try:
        at = open_app(PAGE, text=MEDIUM, lang="zh")
    finally:
        release.set()
    assert_clean(at)
    shown = list(visible_strings(at))
    assert any("正在后台用这段文本比较 bfloat16" in s for s in shown)
    left = english_words((s for s in shown if "quick brown" not in s), tokens=_token_labels(MEDIUM))
    assert not left, left
