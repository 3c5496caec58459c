"""A typed number is read one way or refused with a message: separators, units, percent,
scientific notation, full-width digits and Chinese punctuation; never anything ambiguous."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tformer.i18n import use_language
from tformer.questions.numbers import MAX_CHARS, AnswerError, parse_number

READ = [
    ("1536", "none", 1536),
    ("1,536", "none", 1536),
    ("1 536", "none", 1536),
    ("1\u202f536", "none", 1536),  # narrow no-break space, as French and SI typesetting write it
    ("1\u00a0536", "none", 1536),
    ("12,345,678", "none", 12_345_678),
    ("1,536.25", "none", 1536.25),
    ("0.68", "none", 0.68),
    (".68", "none", 0.68),
    ("5.", "none", 5),
    ("68%", "none", 0.68),
    ("68 %", "none", 0.68),
    ("-0.5", "none", -0.5),
    ("+2", "none", 2),
    ("\u22123", "none", -3),  # the minus sign U+2212
    ("3e-4", "none", 3e-4),
    ("3E-04", "none", 3e-4),
    ("1.4e-3", "none", 1.4e-3),
    ("3×10^-4", "none", 3e-4),
    ("3 x 10^-4", "none", 3e-4),
    ("3·10⁻⁴", "none", 3e-4),
    ("10^-4", "none", 1e-4),
    ("10⁻⁴", "none", 1e-4),
    ("１２３", "none", 123),  # full-width digits
    ("０．６８", "none", 0.68),  # full-width point
    ("１，５３６", "none", 1536),  # full-width comma
    ("1，536", "none", 1536),  # a Chinese comma between ASCII digits
    ("６８％", "none", 0.68),
    ("0.68。", "none", 0.68),  # a sentence's full stop
    ("≈0.7", "none", 0.7),
    ("~ 0.7", "none", 0.7),
    ("约0.7", "none", 0.7),
    ("about 0.7", "none", 0.7),
    ("  42  ", "none", 42),
    ("22.7M params", "count", 22.7e6),
    ("22.7m", "count", 22.7e6),
    ("2270万个参数", "count", 22.7e6),
    ("1.5k", "count", 1500),
    ("12 heads", "count", 12),
    ("6 层", "count", 6),
    ("136 cells", "count", 136),
    ("1,024 bytes", "bytes", 1024),
    ("1 KiB", "bytes", 1024),
    ("1.5 MiB", "bytes", 1.5 * 2**20),
    ("１ＫｉＢ", "bytes", 1024),
    ("4096 字节", "bytes", 4096),
    ("4x", "ratio", 4),
    ("3.98 ×", "ratio", 3.98),
    ("4 times", "ratio", 4),
    ("4倍", "ratio", 4),
]


@pytest.mark.parametrize(("text", "unit", "value"), READ)
def test_each_spelling_reads_as_one_number(text, unit, value):
    assert parse_number(text, unit).value == pytest.approx(value, rel=1e-12)


def test_percent_is_flagged_and_numbers_pass_through():
    assert parse_number("68%").percent
    assert not parse_number("0.68").percent
    assert parse_number(0.25).value == 0.25
    assert parse_number(3).value == 3.0


REFUSED = [
    ("", "none", "type a number"),
    ("   ", "none", "type a number"),
    ("0,68", "none", "ambiguous"),  # a decimal comma or a thousands separator?
    ("1,5", "none", "ambiguous"),
    ("0,680", "none", "ambiguous"),  # a first group of 0 is no thousands grouping
    ("1,53,6", "none", "ambiguous"),
    ("1.536,5", "none", "mixes a point and a comma"),
    ("1,536 000", "none", "one kind of separator"),
    ("12 3", "none", "grouped in threes"),
    ("6 MB", "bytes", "ambiguous"),
    ("6 KB", "bytes", "ambiguous"),
    ("6 kb", "bytes", "ambiguous"),
    ("50%", "bytes", "not a percentage"),
    ("2^10", "none", "only powers of ten"),
    ("1/2", "none", "not one number"),
    ("½", "none", "not one number"),
    ("1-2", "none", "not one number"),
    ("1、536", "none", "not one number"),
    ("0。68", "none", "not one number"),
    ("三", "none", "not a number"),
    ("٣", "none", "not a number"),  # Arabic-Indic digits: float() would read them
    ("inf", "none", "not a number"),
    ("nan", "none", "not a number"),
    ("-", "none", "not a number"),
    ("e5", "none", "not a number"),
    ("12 kg", "none", "does not fit"),
    ("5 heads", "none", "does not fit"),
    ("4x", "none", "does not fit"),
    ("12 bytes", "count", "does not fit"),
    ("1e999", "none", "out of range"),
    ("1" * 31, "none", "too many digits"),
    ("1" * (MAX_CHARS + 1), "none", "at most"),
    ("<b>1</b>", "none", "not a number"),
]


@pytest.mark.parametrize(("text", "unit", "message"), REFUSED)
def test_ambiguous_or_malformed_input_is_refused_with_a_message(text, unit, message):
    with pytest.raises(AnswerError, match=message):
        parse_number(text, unit)


@pytest.mark.parametrize("value", [True, None, [1], float("inf"), float("nan")])
def test_values_that_are_not_finite_numbers_are_refused(value):
    with pytest.raises(AnswerError):
        parse_number(value)


def test_a_message_quotes_the_input_as_text_within_40_characters():
    with pytest.raises(AnswerError) as err:
        parse_number("`1,5` and many more words to make it long")
    message = str(err.value)
    assert "`" not in message
    assert "..." in message


def test_messages_speak_chinese():
    with use_language("zh"), pytest.raises(AnswerError, match="有歧义"):
        parse_number("0,68")


def test_an_unknown_unit_kind_is_a_programming_error():
    with pytest.raises(ValueError, match="unit"):
        parse_number("1", "kelvin")


# --- properties -----------------------------------------------------------------------------

FULL_WIDTH = str.maketrans("0123456789.,%", "０１２３４５６７８９．，％")


@given(st.integers(min_value=0, max_value=10**15))
def test_integers_read_back_in_every_grouping(n):
    for text in (str(n), f"{n:,}", f"{n:,}".replace(",", " "), f"{n:,}".replace(",", "，")):
        assert parse_number(text).value == n, text
        assert parse_number(text.translate(FULL_WIDTH)).value == n, text


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), st.integers(min_value=0, max_value=6))
def test_decimals_read_back(x, digits):
    text = f"{x:.{digits}f}"
    assert parse_number(text).value == float(text)
    assert parse_number(f"{x:,.{digits}f}").value == float(text)
    assert parse_number(text.translate(FULL_WIDTH)).value == float(text)


@given(st.floats(min_value=1e-12, max_value=1e12, allow_nan=False))
def test_scientific_and_percent_read_back(x):
    assert parse_number(f"{x:e}").value == float(f"{x:e}")
    assert parse_number(f"{x:.3e}".replace("e", "×10^")).value == pytest.approx(float(f"{x:.3e}"), rel=1e-12)
    assert parse_number(f"{100 * x:.4f}%").value == pytest.approx(float(f"{100 * x:.4f}") / 100, rel=1e-12)


@given(st.text(max_size=80))
def test_any_text_gives_a_finite_number_or_an_answer_error(text):
    try:
        value = parse_number(text).value
    except AnswerError as err:
        assert str(err)  # noqa: PT017 (either outcome is right here; an error must say why)
    else:
        assert math.isfinite(value)


@given(st.integers(min_value=1, max_value=999), st.integers(min_value=0, max_value=99))
def test_a_comma_before_fewer_or_more_than_three_digits_is_never_a_thousands_separator(head, tail):
    text = f"{head},{tail}" if tail < 10 else f"{head},{tail:02d}"
    with pytest.raises(AnswerError, match="ambiguous"):
        parse_number(text)
