"""The questions of the shipped lessons, and a lesson step's question checked when the lesson
loads: a malformed one names the lesson, the step and the field at fault."""

from __future__ import annotations

from collections import Counter

import pytest

from tformer.questions import CONCEPTS, SpecError
from tformer.ui.lessons import check_lesson, lessons, parse_lesson

from .test_lessons import lesson
from .test_lessons import step as base_step


def test_the_shipped_lessons_ask_questions_of_every_kind():
    asked = [s.question for lesson in lessons() for s in lesson.steps if s.question is not None]
    assert len(asked) >= 6
    assert {q.kind for q in asked} == {"token", "number", "choice", "direction"}
    by_concept = Counter(q.info.concept for q in asked)
    assert {c: by_concept[c] for c in CONCEPTS if by_concept[c] < 2} == {}  # every concept twice at least


def step(**over):
    return base_step(settings={"layer": "1", "head": "0"}) | over


@pytest.mark.parametrize(
    ("question", "settings", "field", "message"),
    [
        ({"template": "argmax"}, None, "question.template", "'argmax' is not a template"),
        ({"template": "argmax_key", "params": {"query": "it", "layer": 99}}, None, "question.params.layer", "0..63"),
        ({"template": "argmax_key", "params": {"query": "it"}, "answer": "animal"}, None, "question.answer", "not a known"),
        ({"template": "pe_value"}, None, "question.template", "answered by the page 'positional'"),
        ({"template": "argmax_key"}, None, "question.params.query", "neither the question nor the step's settings"),
        ({"template": "argmax_key", "params": {"query": "it"}}, {"layer": "1"}, "question.params.head", "choose the head"),
        ("argmax_key", None, "question", "JSON object"),
    ],
)  # fmt: skip
def test_a_malformed_question_names_the_step_and_the_field(question, settings, field, message):
    extra = {} if settings is None else {"settings": settings}
    data = lesson(step(), step(question=question, **extra))
    with pytest.raises(SpecError) as err:
        check_lesson(parse_lesson(data))
    assert err.value.where == "lesson x, step 2"
    assert err.value.field == field
    assert message in str(err.value)


def test_a_good_question_loads():
    parsed = parse_lesson(lesson(step(question={"template": "argmax_key", "params": {"query": "it"}})))
    check_lesson(parsed)
    spec = parsed.steps[0].question
    assert spec is not None
    assert spec.kind == "token"
    assert spec.params == {"query": "it"}
