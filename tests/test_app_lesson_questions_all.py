"""Every question of every shipped lesson, answered right and then wrong under AppTest, on the
step's own text and on another one: the grade follows the live model (the right answer is
computed here from the same capture, never read from the lesson), the figure waits until the
answer, and the wrong answer gets the hint."""

from __future__ import annotations

import functools

import pytest

pytest.importorskip("streamlit")

import tformer
from tformer.questions import Question, QuestionContext, ask
from tformer.questions.answers import ChoiceAnswer, DirectionAnswer, NumberAnswer, TokenAnswer
from tformer.ui.lesson_questions import training_of
from tformer.ui.lessons import lessons
from tformer.ui.registry import PAGES
from tformer.ui.state import TrainState, ViewState

from .test_app_lesson_questions import HIDDEN, shown
from .test_app_pages import assert_clean, open_app

# A second text per lesson that holds the tokens its questions name ("it", "sat", "cat") and a
# repeated word (the duplicate-token head).
OTHER = {
    "attention-basics": "The trophy did not fit in the suitcase because it was too big.",
    "minilm-heads": "The dog sat on the rug and the cat sat on the mat.",
    "positional-encoding": "A cat and a dog play in the park.",
    "inside-the-encoder": "My cat likes warm milk in the morning.",
}


def cases() -> list[tuple[str, int, str]]:
    out = []
    for lesson in lessons():
        text = lesson.steps[0].text_in("en")
        for i, step in enumerate(lesson.steps):
            text = step.text_in("en") or text
            if step.question is not None:
                assert text is not None
                out += [(lesson.id, i, text), (lesson.id, i, OTHER[lesson.id])]
    return out


@functools.cache
def minilm():
    return tformer.load_pretrained("minilm", device="cpu")


def expected(lesson_id: str, index: int, text: str) -> Question:
    step = next(x for x in lessons() if x.id == lesson_id).steps[index]
    spec = step.question
    assert spec is not None
    model, tok = minilm()
    view, _ = ViewState.from_query(step.settings)
    recipe, task = training_of(view.page(TrainState))
    cap = tformer.capture_text(model, tok, text, list(spec.needs) or ["pattern"])
    ctx = QuestionContext(
        cap,
        layer=view.layer or 0,
        head=view.head or 0,
        query=view.query,
        model=model,
        recipe=recipe,
        task=task,
    )
    return ask(spec, ctx)


def answer(at, key: str, question: Question, right: bool) -> None:
    a = question.answer
    if isinstance(a, TokenAnswer):
        pos = sorted(a.positions)[0] if right else next(p for p in a.candidates if p not in a.positions)
        widget = next((b for b in at.button_group if b.key == key), None) or at.selectbox(key=key)
        widget.set_value(pos).run()
    elif isinstance(a, NumberAnswer):
        value = a.value if right else a.value * 3 + 10
        at.text_input(key=key).input(repr(float(value))).run()
    elif isinstance(a, ChoiceAnswer):
        keys = [k for k, _ in a.options]
        at.radio(key=key).set_value(next(k for k in keys if (k in a.correct) == right)).run()
    else:
        assert isinstance(a, DirectionAnswer)
        other = next(d for d, _ in a.options if d != a.direction)
        at.radio(key=key).set_value(a.direction if right else other).run()
    at.button(key="lq.check").click().run()
    assert_clean(at)


@pytest.mark.parametrize(("lesson_id", "index", "text"), cases())
def test_every_shipped_question_right_then_wrong(lesson_id, index, text):
    step = next(x for x in lessons() if x.id == lesson_id).steps[index]
    question = expected(lesson_id, index, text)
    script = next(p.script for p in PAGES if p.key == step.page)
    at = open_app(script, text=text, lesson=lesson_id, lesson_step=str(index), **step.settings)
    assert_clean(at)
    assert not at.get("plotly_chart"), "the figure waits for the answer"
    key = f"lq.{index}.answer"
    answer(at, key, question, right=True)
    page = shown(at)
    assert f"Right: the model's value is {question.expected}." in page, page[-400:]
    assert HIDDEN not in page
    at.button(key="lq.again").click().run()
    answer(at, key, question, right=False)
    page = shown(at)
    assert "Not quite: you said" in page, page[-400:]
    assert "Hint:" in page, page[-400:]
    assert "the model's value" not in page, "the first wrong try hints, it does not tell"
