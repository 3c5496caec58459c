"""Each kind of answer parses what a learner gives and grades it: right, wrong, within and
outside the tolerance, the hint on the first wrong try only, and a clear refusal (not a try)
for what cannot be read."""

from __future__ import annotations

import pytest

from tformer.i18n import use_language
from tformer.questions import (
    AnswerError,
    ChoiceAnswer,
    DirectionAnswer,
    Mark,
    NumberAnswer,
    Question,
    TokenAnswer,
    Tolerance,
)
from tformer.questions.answers import format_number, normalize_label

LABELS = ("[CLS]", "the", "cat", "sat", "on", "the", "##mat", "爱?", "[SEP]")


def question(answer) -> Question:
    return Question("t", "qkv", "attention", "prompt", answer, "because 0.68", "look again", Mark("pattern"))


# --- tokens ---------------------------------------------------------------------------------


def token(right=(2,), candidates=None) -> TokenAnswer:
    return TokenAnswer(
        frozenset(right), LABELS, tuple(range(len(LABELS))) if candidates is None else candidates
    )


def test_a_clicked_position_is_graded():
    q = question(token())
    right, wrong = q.grade(2), q.grade(3)
    assert right.correct
    assert right.value == 2
    assert right.hint is None
    assert not wrong.correct
    assert wrong.hint == "look again"
    assert "'sat' (position 3)" in wrong.given
    assert "'cat' (position 2)" in wrong.verdict
    assert wrong.explanation == "because 0.68"
    assert q.grade(3, wrong_tries=1).hint is None  # the hint comes once


@pytest.mark.parametrize(("typed", "position"), [("cat", 2), (" CAT ", 2), ("“cat”", 2), ("mat", 6), ("##mat", 6),
                                             ("爱", 7), ("#5", 5), ("＃5", 5), ("[sep]", 8), ("ｃａｔ", 2)])  # fmt: skip
def test_a_typed_token_names_its_position(typed, position):
    assert token().parse(typed) == position


def test_a_repeated_token_must_be_picked_by_position():
    with pytest.raises(AnswerError, match=r"positions 1, 5.*#1"):
        token().parse("the")
    assert token(candidates=(0, 1, 2, 3)).parse("the") == 1  # only one copy can be picked


@pytest.mark.parametrize("raw", ["dog", "", "#99", 99, -1, True, None, 2.0, "x" * 61])
def test_a_token_that_cannot_be_picked_is_refused(raw):
    with pytest.raises(AnswerError):
        token().parse(raw)


def test_a_key_the_query_cannot_see_is_refused_not_graded():
    causal = token(right=(2,), candidates=(0, 1, 2, 3))
    with pytest.raises(AnswerError, match="position 6"):
        causal.parse(6)


def test_ties_are_all_right_and_shown():
    tie = token(right=(1, 2))
    assert tie.check(1)
    assert tie.check(2)
    assert not tie.check(3)
    assert "'the' (position 1) or 'cat' (position 2)" == tie.expected


def test_a_token_answer_refuses_right_positions_outside_its_candidates():
    with pytest.raises(ValueError, match=r"right positions \[7\] must be among the candidates"):
        token(right=(7,), candidates=(0, 1))


# --- numbers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tol", "given", "correct"),
    [
        (Tolerance(abs=0.05), "0.68", True),
        (Tolerance(abs=0.05), "0.72", True),
        (Tolerance(abs=0.05), "0.6301", True),
        (Tolerance(abs=0.05), "0.74", False),
        (Tolerance(abs=0.05), "0.62", False),
        (Tolerance(abs=0.05), "68%", True),
        (Tolerance(rel=0.1), "0.74", True),
        (Tolerance(rel=0.1), "0.76", False),
        (Tolerance(), "0.68", True),
        (Tolerance(), "0.681", False),
    ],
)
def test_a_number_is_right_within_its_tolerance(tol, given, correct):
    assert question(NumberAnswer(0.68, tol)).grade(given).correct is correct


def test_the_wider_of_abs_and_rel_counts():
    tol = Tolerance(abs=0.01, rel=0.1)
    assert tol.allows(105, 100)
    assert not tol.allows(111, 100)  # rel wins for large values
    assert tol.allows(0.009, 0.0)
    assert not tol.allows(0.02, 0.0)  # abs wins near 0


def test_exact_counts_forgive_float_noise_only():
    exact = NumberAnswer(1536.0, Tolerance(), unit="count")
    assert exact.check(exact.parse("1.536k"))
    assert exact.check(exact.parse("1,536"))
    assert not exact.check(exact.parse("1,537"))


def test_units_come_from_the_question():
    size = NumberAnswer(1024.0, Tolerance(rel=0.01), unit="bytes")
    assert question(size).grade("1 KiB").correct
    with pytest.raises(AnswerError, match="ambiguous"):
        question(size).grade("1 KB")
    with pytest.raises(AnswerError, match="does not fit"):
        question(NumberAnswer(4.0, Tolerance())).grade("4 KiB")


def test_the_tolerance_is_stated():
    assert question(NumberAnswer(1.0, Tolerance())).tolerance == "exactly"
    assert question(NumberAnswer(1.0, Tolerance(abs=0.05))).tolerance == "within ±0.05"
    both = question(NumberAnswer(1.0, Tolerance(abs=0.005, rel=0.02))).tolerance
    assert both == "within ±0.005 or within 2%, whichever is wider"
    with use_language("zh"):
        assert question(NumberAnswer(1.0, Tolerance(rel=0.05))).tolerance == "误差在 5% 以内"


def test_a_tolerance_must_be_finite_and_non_negative():
    for kwargs in ({"abs": -1}, {"rel": 1.0}, {"abs": float("nan")}):
        with pytest.raises(ValueError, match=r"^tolerance abs=.* must be >= 0 and rel=.* in \[0, 1\)$"):
            Tolerance(**kwargs)


def test_numbers_show_as_the_feedback_writes_them():
    assert format_number(1536) == "1,536"
    assert format_number(0.6789) == "0.68"
    assert format_number(0.0014) == "0.0014"
    assert format_number(3e-5) == "3e-05"
    assert format_number(-0.0001, 3) == "0.000"
    assert format_number(123.456) == "123.5"


# --- choices and directions -----------------------------------------------------------------


def choice() -> ChoiceAnswer:
    return ChoiceAnswer(
        (("0.2", "layer 0, head 2"), ("1.8", "layer 1, head 8"), ("a", "B")), frozenset({"0.2"})
    )


@pytest.mark.parametrize(
    ("typed", "key"), [("0.2", "0.2"), ("Layer 0, head 2", "0.2"), ("A", "0.2"), ("1.8", "1.8"), ("c", "a")]
)
def test_an_option_is_named_by_key_label_or_letter(typed, key):
    assert choice().parse(typed) == key


def test_a_letter_that_names_two_options_is_refused():
    with pytest.raises(AnswerError, match="two different options"):
        choice().parse("b")  # letter B is "1.8", label "B" is option "a"
    with pytest.raises(AnswerError, match="two different options"):
        choice().parse("a")  # key "a", and letter A is "0.2"


def test_a_choice_is_graded():
    q = question(choice())
    assert q.grade("A").correct
    assert not q.grade("1.8").correct
    assert q.options[0] == ("0.2", "layer 0, head 2")
    with pytest.raises(AnswerError):
        q.grade("layer 9, head 9")


def test_a_choice_needs_two_options_and_a_right_one():
    with pytest.raises(ValueError, match=r"options \['a'\] need two or more distinct keys"):
        ChoiceAnswer((("a", "A"),), frozenset({"a"}))
    with pytest.raises(ValueError, match="and a right one among them"):
        ChoiceAnswer((("a", "A"), ("b", "B")), frozenset({"c"}))


def direction(d="lower") -> DirectionAnswer:
    return DirectionAnswer(d, -0.8, 0.01, {"higher": "flatter", "lower": "sharper", "same": "the same"})


@pytest.mark.parametrize(
    ("typed", "value"),
    [("lower", "lower"), ("sharper", "lower"), ("Sharper", "lower"), ("less", "lower"), ("更低", "lower"),
     ("↓", "lower"), ("flatter", "higher"), ("more", "higher"), ("更高", "higher"), ("same", "same"),
     ("unchanged", "same"), ("不变", "same"), ("the same", "same")],
)  # fmt: skip
def test_a_direction_is_read_in_the_questions_words_and_in_plain_ones(typed, value):
    assert direction().parse(typed) == value


def test_a_direction_is_graded_and_unknown_words_refused():
    q = question(direction())
    assert q.grade("sharper").correct
    assert not q.grade("flatter").correct
    assert not q.grade("same").correct
    assert question(direction("same")).grade("unchanged").correct
    for bad in ("sideways", "", 3):
        with pytest.raises(AnswerError):
            q.grade(bad)


def test_labels_compare_without_marks():
    assert normalize_label("##Mat") == "mat"
    assert normalize_label("爱?") == "爱"
    assert normalize_label("?") == "?"


def test_feedback_speaks_chinese():
    with use_language("zh"):
        g = question(NumberAnswer(0.68, Tolerance(abs=0.05))).grade("0.3")
    assert g.verdict == "不太对：你的答案是 0.30；模型的值是 0.68。"
