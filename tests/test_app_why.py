"""The Why-attention page through AppTest: the step bar fills the strips, the weight scale moves
the gradients, bad texts give messages, the timing sweep and the recall training run on a click
(training once, shared with a second session), in English and in Chinese."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("streamlit")

from tformer.i18n import catalog

from .test_app_pages import assert_clean, charts, decode, open_app
from .test_i18n_pages import english_left

PAGE = "pages/why.py"


def figure(at, title_part: str) -> dict:
    """The chart whose first trace or title mentions ``title_part``."""
    for c in charts(at):
        names = " ".join(str(t.get("name", "")) for t in c["data"])
        title = str(c["layout"].get("title", {}).get("text", ""))
        if title_part in names or title_part in title:
            return c
    raise AssertionError(f"no chart with {title_part!r}: {[c['layout'].get('meta') for c in charts(at)]}")


def strips(at) -> dict:
    return next(c for c in charts(at) if "filled" in (c["layout"].get("meta") or {}))


def test_the_step_bar_fills_the_recurrent_strips_and_attention_is_whole():
    at = open_app(PAGE, text="The cat sat on the mat because it was tired.")
    assert_clean(at)
    meta = strips(at)["layout"]["meta"]
    n = meta["n_pos"]
    assert meta["filled"] == [4, 4, n]  # the default step, attention after its one step
    # the positions not computed yet are blank (NaN), the ones computed hold the states
    z = decode(strips(at)["data"][0]["z"])
    assert not (z[:, :4] != z[:, :4]).any()
    assert (z[:, 4:] != z[:, 4:]).all()
    at.button(key="why.next").click().run()
    assert strips(at)["layout"]["meta"]["filled"] == [5, 5, n]
    at.slider(key="why.step").set_value(n).run()
    assert strips(at)["layout"]["meta"]["filled"] == [n, n, n]
    assert at.button(key="why.next").disabled
    caption = " ".join(c.value for c in at.caption)
    assert f"tanh RNN {n}, GRU {n}, attention 1" in caption


def test_the_weight_scale_makes_the_rnns_gradient_vanish_or_grow():
    at = open_app(PAGE, text="The cat sat on the mat because it was tired.", **{"why.section": "gradients"})
    assert_clean(at)

    def rnn_far() -> float:
        fig = figure(at, "tanh RNN")
        rnn = next(t for t in fig["data"] if str(t["name"]).startswith("tanh RNN"))
        return float(decode(rnn["y"])[-1])  # log10 of the norm at the farthest distance

    at.select_slider(key="why.scale").set_value("0.5").run()
    low = rnn_far()
    at.select_slider(key="why.scale").set_value("3").run()
    high = rnn_far()
    assert low < -3 < 0 < high  # 0.5: ~10^-5 back 12 tokens; 3: above 1
    names = [t["name"] for t in figure(at, "tanh RNN")["data"]]
    assert any("s = 3" in name for name in names)
    assert any(str(n).startswith("bound") for n in names)
    at.toggle(key="why.bound").set_value(False).run()
    assert not any(str(t["name"]).startswith("bound") for t in figure(at, "tanh RNN")["data"])
    path = figure(at, "path from the first to the last token")
    assert path["data"]


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("", "Type a sentence"),
        ("Hi", None),  # one token ([CLS] and [SEP] aside, MiniLM reads 3)
        (" ".join(["word"] * 600), "only the first 512"),
        ("猫坐在垫子上。", "unknown to this model's vocabulary"),
        ("🙂🙂🙂 🎉", "unknown to this model's vocabulary"),
    ],
)
def test_bad_texts_give_messages_not_crashes(text, expect):
    for section in ("steps", "gradients", "recall"):
        at = open_app(PAGE, text=text, **{"why.section": section})
        assert_clean(at)
        said = " ".join(m.value for m in [*at.info, *at.warning])
        if expect is not None:
            assert expect in said, (section, said)
        if text:
            assert at.get("plotly_chart") or at.metric, section


def test_one_word_is_three_positions_and_the_step_is_clamped_to_them():
    at = open_app(PAGE, text="cat", source="scratch")  # [CLS] cat [SEP]
    assert_clean(at)
    meta = strips(at)["layout"]["meta"]
    assert meta["n_pos"] == 3
    assert meta["filled"] == [3, 3, 3]  # the default step 4, clamped
    at.button(key="why.prev").click().run()
    assert strips(at)["layout"]["meta"]["filled"] == [2, 2, 3]


def test_the_timing_sweep_runs_on_a_click_and_names_its_method(monkeypatch):
    from tformer.efficiency.measure import Budget
    from tformer.efficiency.rnn import RnnSettings
    from tformer.ui.views.why import compute as why_data

    small = RnnSettings(d_model=16, n_heads=1, n_min=16, n_max=64, budget=Budget(call_s=0.05, total_s=2.0),
                        recurrent=("rnn", "gru"))  # fmt: skip
    monkeypatch.setattr(why_data, "timing_settings", lambda: small)
    at = open_app(PAGE, text="Birds sing at dawn.")
    assert "median of repeated calls" in " ".join(c.value for c in at.caption)
    at.button(key="costs_run_rnn").click().run()
    assert_clean(at)
    fig = figure(at, "Time of one call")
    assert {t["name"] for t in fig["data"]} >= {"tanh RNN", "GRU", "attention"}
    assert any(t.get("error_y") for t in fig["data"])  # the quartiles as error bars


def wait_for_training(at, protocol: str = "separate", seed: int = 0, timeout_s: float = 60.0) -> None:
    from tformer.ui.views.why.compute import recall_board, recall_run, recall_settings

    settings = recall_settings(protocol, seed)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = recall_run(settings)
        if run is not None:
            run.heartbeat()
            if run.is_final:
                break
        time.sleep(0.2)
    assert len(recall_board().get(settings)) == 3, "the three models did not train in time"


def train_here(at, protocol: str = "separate", seed: int = 0) -> None:
    """Train the recall models of the page's settings (unless a run already does) and rerun
    the page once they are done. Set `tformer.ui.views.why.RECALL_SECONDS` low first."""
    if not at.button(key="why.train").disabled:
        at.button(key="why.train").click().run()
    wait_for_training(at, protocol, seed)
    at.run()


def test_recall_trains_once_within_its_bound_and_is_shared(monkeypatch, runs_dir):
    from tformer.ui.views.why import compute as why_data

    monkeypatch.setattr(why_data, "RECALL_SECONDS", 0.5)  # each kind stops at its time limit
    at = open_app(PAGE, text="Birds sing at dawn.", **{"why.section": "recall"})
    assert_clean(at)
    assert not [c for c in charts(at) if "chance" in (c["layout"].get("meta") or {})]
    assert "Not trained yet" in " ".join(i.value for i in at.info)
    at.button(key="why.train").click().run()
    assert_clean(at)
    train_here(at)
    assert_clean(at)
    recall = next(c for c in charts(at) if "chance" in (c["layout"].get("meta") or {}))
    assert [t["name"] for t in recall["data"]][:3] == ["GRU", "attention", "tanh RNN"]
    caption = " ".join(c.value for c in at.caption)
    assert "seed 0" in caption
    assert "time limit" in caption
    look = next(c for c in charts(at) if "weight_on_answer" in (c["layout"].get("meta") or {}))
    assert look["layout"]["meta"]["n_pos"] == 129  # the default distance 128: first token .. blank
    at.selectbox(key="why.distance").set_value(8).run()
    look = next(c for c in charts(at) if "weight_on_answer" in (c["layout"].get("meta") or {}))
    assert look["layout"]["meta"]["n_pos"] == 9
    # a second visitor with the same settings sees the result without training again
    other = open_app(PAGE, text="Another text.", **{"why.section": "recall"})
    assert_clean(other)
    assert other.button(key="why.train").disabled
    assert next(c for c in charts(other) if "chance" in (c["layout"].get("meta") or {}))
    # another seed is another training
    other.number_input(key="why.seed").set_value(1).run()
    assert not other.button(key="why.train").disabled


@pytest.mark.parametrize("protocol", ["separate", "mixed"])
def test_recall_in_chinese_after_training_has_no_english_left(monkeypatch, runs_dir, protocol):
    from tformer.ui.views.why import compute as why_data

    monkeypatch.setattr(why_data, "RECALL_SECONDS", 0.5)
    params = {"why.section": "recall", "why.protocol": protocol}
    at = open_app(PAGE, text="猫坐在垫子上。", lang="zh", source="scratch", **params)
    train_here(at, protocol)
    assert_clean(at)
    assert len(charts(at)) >= 3
    left = english_left(at)
    assert not left, left
    assert catalog("zh")["The attention head looking back"] in [s.value for s in at.subheader]


@pytest.mark.parametrize("section", ["steps", "gradients"])
def test_the_sections_in_chinese_have_no_english_left(section):
    at = open_app(PAGE, text="猫坐在垫子上。", lang="zh", source="scratch", **{"why.section": section})
    assert_clean(at)
    assert not english_left(at)
