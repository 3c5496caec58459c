"""Predict, then see, under AppTest: a lesson step's question is asked in the lesson bar before its
figure; the figure waits; a wrong answer gets the hint and another go, a right one (or a second
wrong one, or a skip) reveals the figure with the answer outlined; unreadable input gets a clear,
escaped message; the progress is in the share link; the lesson's last step sums up per concept;
"try again" forgets. In English and in Chinese, on the live model's numbers (another text, another
answer)."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("streamlit")

from tformer.i18n import catalog
from tformer.ui.lessons import lesson_by_id
from tformer.ui.progress import parse_progress

from ._drive import callback_widgets
from ._i18n_check import english_words, visible_strings
from .test_app_pages import assert_clean, open_app

ZH = catalog("zh")
HIDDEN = "Hidden until you answer the question above (or skip it)."
BASICS = "attention-basics"


def step_of(template: str, lesson_id: str = BASICS) -> int:
    """The index of the lesson's step that asks ``template`` (steps may be added before it)."""
    lesson = lesson_by_id(lesson_id)
    assert lesson is not None
    return next(
        i for i, s in enumerate(lesson.steps) if s.question is not None and s.question.template == template
    )


def asked(concept: str | None = None, lesson_id: str = BASICS) -> int:
    """How many of the lesson's questions are on ``concept`` (None: all)."""
    lesson = lesson_by_id(lesson_id)
    assert lesson is not None
    return sum(
        1 for s in lesson.steps if s.question is not None and concept in (None, s.question.info.concept)
    )


IT = step_of("argmax_key")  # which token does "it" look at? (the Attention page)
SHAPE = step_of("q_shape")  # the Q, K, V page
TAU = step_of("entropy_change")  # why √d_k
MASK = step_of("allowed_cells")  # the masks page
WARMUP = step_of("warmup_lr", "inside-the-encoder")  # the Train page


def unescape(text: str) -> str:
    return text.replace("\\", "")


def shown(at) -> str:
    """Every markdown, caption and alert of the page, markdown escapes removed."""
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [a.value for kind in ("info", "warning", "success", "error") for a in getattr(at, kind)]
    return unescape(" ".join(parts))


def detail(at) -> dict | None:
    """The Attention page's head heatmap (the one chart keyed "detail"), if drawn."""
    for c in at.get("plotly_chart"):
        if c.proto.id and "detail" in c.proto.id:
            return json.loads(c.proto.spec)
    return None


def assert_unanswered(at) -> None:
    """No progress in the link and the heatmap still waiting."""
    assert_clean(at)
    assert "quiz" not in at.query_params
    assert detail(at) is None


def basics(step: int, lang: str = "en", **params: str):
    return open_app("pages/attention.py", lesson=BASICS, lesson_step=str(step), lang=lang, **params)


def test_a_token_question_hides_the_figure_hints_then_reveals_it_outlined():
    at = basics(IT)  # the sidebar has the example, "The animal ... because it was too tired."
    assert_clean(at)
    text = shown(at)
    assert 'which token does "it" give the most weight to?' in text
    assert HIDDEN in [i.value for i in at.info]
    assert detail(at) is None, "the heatmap must wait for the answer"
    assert "0.68" not in text, "the step's notes name the answer: they wait too"
    assert not at.get("plotly_chart")
    keys = {t.key for t in callback_widgets(at)}
    assert {"lq.check", "lq.skip"} <= keys

    pick = at.button_group(key=f"lq.{IT}.answer")
    labels = at.text_area(key="text").value
    assert "animal" in labels
    pick.set_value(1).run()  # "The": wrong
    at.button(key="lq.check").click().run()
    assert_clean(at)
    text = shown(at)
    assert "Not quite: you said 'The' (position 1). Try once more." in text
    assert "Hint:" in text
    assert not [w.value for w in at.warning if "animal" in w.value]  # the answer is not given away
    assert detail(at) is None
    assert at.query_params["quiz"] == f"{IT}p1:1"

    at.button_group(key=f"lq.{IT}.answer").set_value(2).run()  # "animal"
    at.button(key="lq.check").click().run()
    assert_clean(at)
    text = shown(at)
    assert "Right: the model's value is 'animal' (position 2)." in text
    assert "0.68" in text  # the step's notes and the explanation, with this text's numbers
    assert "Hint:" not in text
    fig = detail(at)
    assert fig is not None
    shapes = fig["layout"]["shapes"]
    row = [s for s in shapes if s["xref"] == "x domain"]
    cells = [s for s in shapes if s["xref"] == "x"]
    assert [(s["y0"], s["y1"]) for s in row] == [(9.5, 10.5)]  # "it" is position 10
    assert [(s["x0"], s["x1"], s["y0"]) for s in cells] == [(1.5, 2.5, 9.5)]  # "animal", in its row
    assert parse_progress(at.query_params["quiz"])[IT].status == "r"
    assert parse_progress(at.query_params["quiz"])[IT].tries == 1

    # the progress travels in the link: a fresh session shows the reveal and the score
    again = basics(IT, quiz=at.query_params["quiz"])
    assert_clean(again)
    assert "Right: the model's value is 'animal'" in shown(again)
    assert detail(again) is not None

    at.button(key="lq.again").click().run()  # try again: asked afresh, the figure hidden
    assert_unanswered(at)


def test_another_text_gives_another_answer():
    at = basics(IT, text="The trophy did not fit in the suitcase because it was too big.")
    assert_clean(at)
    labels = at.button_group(key=f"lq.{IT}.answer").options
    assert "trophy" in labels
    assert "animal" not in labels
    at.button(key="lq.skip").click().run()
    assert_clean(at)
    text = shown(at)
    assert "Skipped. The model's value is" in text
    assert "animal" not in text.split("Skipped.")[1].split(".")[0]
    assert detail(at) is not None
    assert at.query_params["quiz"] == f"{IT}s0"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("", "a number"),
        ("lots", "lots"),
        ("🙂", "🙂"),
        ("1e999", ""),
        ("**136** <b>x</b>", "<b>"),
    ],
)
def test_bad_input_in_a_number_box_gets_a_clear_escaped_message(raw, message):
    at = open_app("pages/masks.py", lesson=BASICS, lesson_step=str(MASK))
    assert_clean(at)
    assert "How many of the query-key cells does the causal mask allow?" in shown(at)
    assert not at.get("plotly_chart")
    at.text_input(key=f"lq.{MASK}.answer").input(raw).run()
    at.button(key="lq.check").click().run()
    assert not at.exception
    assert len(at.error) == 1, [e.value for e in at.error]
    error = at.error[0].value
    assert message in unescape(error)
    assert "<" not in error.replace("\\<", ""), "markup must arrive escaped"
    assert "quiz" not in at.query_params  # not a try
    assert not at.get("plotly_chart")


def test_a_number_question_right_and_a_wrong_twice_reveals():
    at = open_app("pages/masks.py", lesson=BASICS, lesson_step=str(MASK))
    at.text_input(key=f"lq.{MASK}.answer").input("100").run()
    at.button(key="lq.check").click().run()
    assert "Hint:" in shown(at)
    at.text_input(key=f"lq.{MASK}.answer").input("120").run()
    at.button(key="lq.check").click().run()
    assert_clean(at)
    text = shown(at)
    assert "Not quite: you said 120; the model's value is 136." in text
    assert at.get("plotly_chart"), "two wrong tries reveal the figure"
    assert at.query_params["quiz"] == f"{MASK}w2:120"
    at.button(key="lq.again").click().run()
    at.text_input(key=f"lq.{MASK}.answer").input("13６").run()  # a full-width digit: 136
    at.button(key="lq.check").click().run()
    assert "Right: the model's value is 136." in shown(at)


def test_choice_and_direction_questions_and_the_summary_per_concept():
    lesson = lesson_by_id(BASICS)
    assert lesson is not None
    at = open_app("pages/qkv.py", lesson=BASICS, lesson_step=str(SHAPE))
    assert_clean(at)
    at.radio(key=f"lq.{SHAPE}.answer").set_value("pos_d_head").run()
    at.button(key="lq.check").click().run()
    assert "Right: the model's value is 16 × 32" in shown(at)
    at = open_app("pages/scaling.py", lesson=BASICS, lesson_step=str(TAU), quiz=at.query_params["quiz"])
    assert_clean(at)  # why √d_k: sharper or flatter at τ = 0.25?
    assert "at τ = 0.25?" in shown(at)
    at.radio(key=f"lq.{TAU}.answer").set_value("lower").run()
    at.button(key="lq.check").click().run()
    assert "Right: the model's value is sharper" in shown(at)
    assert at.query_params["quiz"] == f"{SHAPE}r0:pos_d_head,{TAU}r0:lower"
    last = len(lesson.steps) - 1
    at = open_app(
        "pages/costs.py",
        lesson=BASICS,
        lesson_step=str(last),
        quiz=f"{SHAPE}r0:pos_d_head,{TAU}r0:lower,{MASK}w2:120",
    )
    assert_clean(at)
    summary = next(e for e in at.expander if "Your answers" in e.label)
    assert summary.label == f"Your answers: 2 of {asked()} right"
    text = unescape(" ".join(m.value for m in summary.markdown))
    assert f"Q, K, V: 1 of {asked('qkv')} right" in text  # argmax_key and q_shape are both Q, K, V questions
    assert f"Scaled dot product and √d_k: 1 of {asked('scaling')} right" in text
    assert f"Masks: 0 of {asked('masks')} right" in text
    assert f"step {MASK + 1}, Masks: wrong; you said 120" in text
    at.button(key="lq.again_all").click().run()
    assert_clean(at)
    assert "quiz" not in at.query_params


@pytest.mark.parametrize("quiz", ["0r0:<script>", "0r0:" + "9" * 30, "0x0", "0r0," * 200, "0r12"])
def test_a_hostile_progress_link_falls_back(quiz):
    at = open_app("app.py", lesson=BASICS, lesson_step=str(IT), quiz=quiz)
    assert_clean(at)
    assert any("quiz" in i.value for i in at.info), [i.value for i in at.info]
    at.switch_page("pages/attention.py").run()
    assert_unanswered(at)


def test_a_question_on_a_text_without_its_token_offers_to_restore_the_step():
    at = basics(IT, text="Birds sing at dawn.")
    assert_clean(at)
    assert "This question cannot be asked here: the token 'it' is not in this text" in shown(at)
    at.button(key="lq.restore").click().run()
    assert_clean(at)
    assert "animal" in at.text_area(key="text").value
    assert at.button_group(key=f"lq.{IT}.answer") is not None


def test_the_question_and_its_feedback_in_chinese():
    at = basics(IT, lang="zh")
    assert_clean(at)
    text = shown(at)
    assert ZH[HIDDEN] in [i.value for i in at.info]
    assert "先预测" in text
    assert at.button(key="lq.check").label == ZH["Check my answer"]
    at.button_group(key=f"lq.{IT}.answer").set_value(1).run()
    at.button(key="lq.check").click().run()
    assert_clean(at)
    text = shown(at)
    assert "不太对" in text
    assert "提示" in text
    at.button_group(key=f"lq.{IT}.answer").set_value(2).run()
    at.button(key="lq.check").click().run()
    assert_clean(at)
    assert detail(at) is not None
    assert at.button(key="lq.again").label == ZH["Try again"]
    assert not english_left(at), english_left(at)


def english_left(at) -> dict:
    words = re.findall(r"[A-Za-z]+", at.text_area(key="text").value)  # the sentence studied stays
    return english_words(visible_strings(at), words)


@pytest.mark.parametrize(
    ("page", "step", "answer"),
    [("pages/masks.py", MASK, "12"), ("pages/qkv.py", SHAPE, "pos_pos"), ("pages/scaling.py", TAU, "same")],
)
def test_every_kind_of_feedback_and_the_summary_leave_no_english_in_chinese(page, step, answer):
    at = open_app(page, lesson=BASICS, lesson_step=str(step), lang="zh")
    assert_clean(at)
    assert not english_left(at), english_left(at)
    key = f"lq.{step}.answer"
    for _ in range(2):  # wrong, hint; wrong again, revealed
        if page == "pages/masks.py":
            at.text_input(key=key).input(answer).run()
        else:
            at.radio(key=key).set_value(answer).run()
        at.button(key="lq.check").click().run()
        assert_clean(at)
        assert not english_left(at), english_left(at)
    assert "答错" in " ".join(w.value for w in at.warning) or "不太对" in " ".join(
        w.value for w in at.warning
    )
    lesson = lesson_by_id(BASICS)
    assert lesson is not None
    at = open_app("pages/costs.py", lesson=BASICS, lesson_step=str(len(lesson.steps) - 1), lang="zh",
                  quiz=f"{IT}r1:2,{SHAPE}s0,{TAU}w2:same,{MASK}r0:136")  # fmt: skip
    assert_clean(at)
    assert not english_left(at), english_left(at)
    assert any("你的答案" in e.label for e in at.expander)


def test_a_training_question_is_graded_on_the_train_pages_settings():
    lesson = lesson_by_id("inside-the-encoder")
    assert lesson is not None
    at = open_app("pages/train.py", lesson=lesson.id, lesson_step=str(WARMUP))
    assert_clean(at)
    assert "warms up for 50 steps to a peak learning rate of 0.007" in shown(at)
    assert not at.get("plotly_chart")  # the schedule's chart would show the answer
    at.text_input(key=f"lq.{WARMUP}.answer").input("0.0014").run()
    at.button(key="lq.check").click().run()
    assert_clean(at)
    assert "Right: the model's value is 0.0014." in shown(at)
    assert at.get("plotly_chart")
    # another warm-up, another answer: the same guess is now wrong
    at = open_app("pages/train.py", lesson=lesson.id, lesson_step=str(WARMUP), **{"train.warmup": "100"})
    assert "warms up for 100 steps" in shown(at)
    at.text_input(key=f"lq.{WARMUP}.answer").input("0.0014").run()
    at.button(key="lq.check").click().run()
    assert "Hint:" in shown(at)


def test_a_long_text_picks_its_token_from_a_list():
    long = "The animal didn't cross the street because it was too tired. " + "It rained all day long. " * 8
    at = basics(IT, text=long)
    assert_clean(at)
    assert not [b for b in at.button_group if b.key == f"lq.{IT}.answer"]  # too many tokens for pills
    box = at.selectbox(key=f"lq.{IT}.answer")
    assert len(box.options) > 40
    assert "it" in box.options
    assert "It #15" in box.options  # a repeated token says where it is
    box.set_value(2).run()  # "animal" (on this longer text the head may look elsewhere)
    at.button(key="lq.check").click().run()
    assert_clean(at)
    assert parse_progress(at.query_params["quiz"])[IT].value == "2"
    assert "'animal' (position 2)" in shown(at)


def test_a_link_with_a_first_wrong_try_words_it_and_hints():
    at = basics(IT, quiz=f"{IT}p1:1")
    assert_clean(at)
    text = shown(at)
    assert "Not quite: you said 'The' (position 1). Try once more." in text
    assert "Hint:" in text
    assert detail(at) is None
