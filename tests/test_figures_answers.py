"""A live class's answers as bars: in the order given, most frequent on top, each with its count
and share; one colour until the reveal, right and wrong after it; students' text shown literally;
sizes checked. And how a graded answer is written for the room and read back by the teacher."""

from __future__ import annotations

import pytest

from tformer.figures.answers import MAX_BARS, answers_figure
from tformer.figures.colors import ANSWER, ANSWER_RIGHT, ANSWER_WRONG
from tformer.questions import (
    ChoiceAnswer,
    DirectionAnswer,
    Mark,
    NumberAnswer,
    Question,
    TokenAnswer,
    Tolerance,
)
from tformer.ui.room_questions import answer_right, room_answer, shown_answer, step_id


def test_answers_are_bars_in_the_order_given_with_counts_and_shares():
    fig = answers_figure(["animal #2", "<b>it</b> #9", "$x$"], [6, 3, 1], title="t")
    bar = fig.data[0]
    assert list(bar.x) == [6, 3, 1]
    assert list(bar.y) == [0, 1, 2]
    assert fig.layout.yaxis.autorange == "reversed"  # the most frequent on top
    assert list(fig.layout.yaxis.ticktext) == ["animal #2", "&lt;b&gt;it&lt;/b&gt; #9", "&#36;x&#36;"]
    assert list(bar.text) == ["6 (60%)", "3 (30%)", "1 (10%)"]
    assert set(bar.marker.color) == {ANSWER}  # before the reveal: nothing says which is right
    assert fig.layout.meta["counts"] == [6, 3, 1]
    assert fig.layout.height == fig.layout.margin.t + fig.layout.margin.b + 3 * 34 + 20


def test_after_the_reveal_right_and_wrong_answers_differ():
    fig = answers_figure(["a", "b", "other"], [2, 1, 1], title="t", right=[True, False, None])
    assert list(fig.data[0].marker.color) == [ANSWER_RIGHT, ANSWER_WRONG, ANSWER]


@pytest.mark.parametrize(
    ("labels", "counts", "right", "message"),
    [
        ([], [], None, r"1\.\.12 answers, got 0"),
        (["a"] * 13, [1] * 13, None, r"1\.\.12 answers, got 13"),
        (["a"], [1, 2], None, "1 labels and 2 verdicts for 2 counts"),
        (["a", "b"], [1, 2], [True], "2 labels and 1 verdicts for 2 counts"),
        (["a"], [-1], None, "whole numbers >= 0"),
        (["a"], [1.5], None, "whole numbers >= 0"),
    ],
)
def test_answers_figure_refuses_what_it_cannot_draw(labels, counts, right, message):
    with pytest.raises(ValueError, match=message):
        answers_figure(labels, counts, title="t", right=right)
    assert MAX_BARS == 12


def _question(answer) -> Question:
    return Question(
        template="t", concept="attention", page="attention", prompt="p", answer=answer,
        explanation="e", hint="h", mark=Mark("pattern"),
    )  # fmt: skip


TOKEN = _question(TokenAnswer(frozenset({2}), ("[CLS]", "The", "animal", "it"), (0, 1, 2, 3)))
NUMBER = _question(NumberAnswer(0.68, Tolerance(abs=0.05)))
CHOICE = _question(
    ChoiceAnswer((("pos_d_head", "pos × d_head"), ("pos_pos", "pos × pos")), frozenset({"pos_pos"}))
)
DIRECTION = _question(
    DirectionAnswer("lower", -0.4, 0.05, {"higher": "more", "lower": "less", "same": "same"})
)


@pytest.mark.parametrize(
    ("question", "raw", "sent", "shown", "right"),
    [
        (TOKEN, 2, "animal #2", "animal #2", True),
        (TOKEN, "The", "The #1", "The #1", False),
        (NUMBER, "0.7", "0.7", "0.70", True),
        (NUMBER, "68%", "0.68", "0.68", True),
        (NUMBER, "1,536", "1536", "1,536", False),
        (CHOICE, "B", "pos_pos", "pos × pos", True),
        (DIRECTION, "less", "lower", "less", True),
        (DIRECTION, "更高", "higher", "more", False),
    ],
)
def test_an_answer_is_sent_in_one_form_and_the_teacher_reads_it_back(question, raw, sent, shown, right):
    grade = question.grade(raw)
    assert room_answer(question, grade) == sent
    assert shown_answer(question, sent) == shown
    assert answer_right(question, sent) is right
    assert right is grade.correct


@pytest.mark.parametrize(
    ("question", "answer"),
    [(TOKEN, "animal"), (TOKEN, "x #99"), (NUMBER, "lots"), (CHOICE, "pos_x"), (DIRECTION, "up")],
)
def test_an_answer_the_teachers_question_cannot_read_is_shown_as_sent_and_not_judged(question, answer):
    assert shown_answer(question, answer) == answer
    assert answer_right(question, answer) is None


def test_a_questions_id_in_the_room_names_its_lesson_and_step():
    assert step_id("attention-basics", 0) == "attention-basics:1"
