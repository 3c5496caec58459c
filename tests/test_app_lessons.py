"""Lesson mode under AppTest: one click on the start page opens the first lesson's first step;
Next and Previous walk the steps across pages and apply each step's settings; the lesson
speaks the interface's language; a link holds the lesson and its step; End leaves it."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")

from tformer.ui.lessons import lessons

from .test_app_pages import assert_clean, open_app


def bar_text(at) -> str:
    return " ".join(m.value for m in at.markdown)


def skip_question(at, step) -> None:
    """Skip the step's question, if it has one (its notes name the answer: they wait for it)."""
    if step.question is not None:
        assert step.say["en"][:40] not in bar_text(at)
        at.button(key="lq.skip").click().run()
        assert_clean(at)


def test_one_click_starts_the_first_lesson_and_next_previous_walk_it():
    first = lessons()[0]
    at = open_app("app.py")
    assert_clean(at)
    at.button(key="start_first").click().run()
    assert_clean(at)
    assert f"step 1 of {len(first.steps)}" in bar_text(at)
    skip_question(at, first.steps[0])  # a question step shows its notes after the answer
    assert first.steps[0].say["en"][:40] in bar_text(at)
    assert at.text_area(key="text").value == first.steps[0].text["en"]
    assert at.slider(key="why.step").value == 4  # step 1: why attention, the strips at step 4

    at.button(key="lesson_next").click().run()  # step 2: the Attention page
    assert_clean(at)
    assert "step 2 of" in bar_text(at)
    skip_question(at, first.steps[1])
    assert first.steps[1].say["en"][:40] in bar_text(at)

    at.button(key="lesson_next").click().run()  # step 3: the Q, K, V page, layer 3 head 1
    assert_clean(at)
    assert "step 3 of" in bar_text(at)
    skip_question(at, first.steps[2])
    assert first.steps[2].say["en"][:40] in bar_text(at)
    assert at.radio(key="qkv.kind").value == "attn_scores"
    assert (at.selectbox(key="layer").value, at.selectbox(key="head").value) == (3, 1)

    at.button(key="lesson_next").click().run()  # step 4: step by step, at the raw scores
    assert_clean(at)
    assert "step 4 of" in bar_text(at)
    assert at.query_params["steps.step"] == "raw"

    at.button(key="lesson_prev").click().run()
    assert_clean(at)
    assert "step 3 of" in bar_text(at)
    assert at.query_params["lesson_step"] == "2"


def test_a_lesson_applies_its_layer_and_head():
    heads = next(lesson for lesson in lessons() if lesson.id == "minilm-heads")
    at = open_app("app.py")
    at.button(key=f"start_{heads.id}").click().run()
    at.button(key="lesson_next").click().run()  # layer 0, head 2 on the Attention page
    assert_clean(at)
    assert (at.query_params.get("layer", "0"), at.query_params["head"]) == ("0", "2")  # 0: the default
    assert "previous-token" in bar_text(at).lower() or "left neighbour" in bar_text(at)


def test_a_link_opens_the_lesson_at_its_step_in_chinese():
    at = open_app("pages/positional.py", lesson="positional-encoding", lesson_step="1", lang="zh")
    assert_clean(at)
    text = bar_text(at)
    assert "第 2 步" in text, text
    assert "位移" in text  # the step's Chinese words


def test_a_step_on_another_page_offers_to_open_it_and_end_leaves_the_lesson():
    at = open_app("pages/heads.py", lesson="attention-basics", lesson_step="0")
    assert_clean(at)
    assert at.button(key="lesson_here").disabled is False
    at.button(key="lesson_end").click().run()
    assert_clean(at)
    assert "lesson" not in at.query_params
    assert not [b for b in at.button if b.key == "lesson_next"]


def test_a_hostile_lesson_link_falls_back():
    at = open_app("app.py", lesson="<script>", lesson_step="999")  # notices show on the first run
    assert_clean(at)
    assert not [b for b in at.button if b.key == "lesson_next"]
    assert any("From the link" in i.value for i in at.info), [i.value for i in at.info]


def _next_buttons(at) -> list[str]:
    return [b.label for b in at.button if "next" in b.label.lower()]


def test_lesson_mode_shows_one_next_on_the_step_by_step_page():
    # attention-basics step 4 is on the step-by-step page, which has its own step bar
    at = open_app("pages/steps.py", lesson="attention-basics", lesson_step="3")
    assert_clean(at)
    assert "step 4 of" in bar_text(at)
    assert _next_buttons(at) == ["Next ▶"], _next_buttons(at)
    # the step bar still walks the layer: its pills choose a step
    at.button_group(key="steps.step").set_value("scale").run()
    assert_clean(at)
    assert at.query_params["steps.step"] == "scale"
    # outside a lesson the step bar keeps its own back / next
    at.button(key="lesson_end").click().run()
    assert_clean(at)
    assert [b.key for b in at.button if b.key in ("steps.prev", "steps.next")] == ["steps.prev", "steps.next"]
