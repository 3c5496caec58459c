"""What a learner types as a number, read strictly: one reading or a clear refusal.

A class types answers in English or Chinese input modes, so the same number arrives as
``1536``, ``1,536``, ``1 536``, ``１５３６`` (full-width digits), ``1，536`` (a Chinese comma),
``0.68``, ``０．６８``, ``68%``, ``3e-4``, ``3×10^-4``, ``3·10⁻⁴``, ``22.7M params`` or
``6 KiB``. `parse_number` reads all of them and refuses what has two readings or none, with a
message that says what to write instead:

- ``0,68`` or ``1,5`` (a decimal comma, or thousands with a missing digit?), ``0,680``,
  ``1.536,5``: refused; a comma separates thousands only (``1,536``), in groups of three.
- ``MB``, ``KB``, ``GB``: refused (10⁶ or 2²⁰ bytes?); ``MiB``, ``KiB``, ``GiB`` or the bytes.
- ``2^10``: refused (only powers of ten are read: ``10^-4``); ``1/2``, ``½``, ``三``, ``٣``,
  ``inf``, ``nan``, a range ``1-2``, two numbers, or a unit the question does not measure in:
  refused.

Units (`UNITS`) belong to the question: a count accepts ``k``/``M``/``万``/``亿`` and a noun
(``params``, ``个参数``), bytes accept ``B``, ``KiB``, ``MiB``, ``GiB`` and ``字节``, a ratio
accepts ``x``, ``×``, ``times`` and ``倍``; ``%`` divides by 100 in every unit but bytes.
The result is a plain float; nothing here renders text, and messages quote the input as text.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass

from ..i18n import tr

__all__ = ["MAX_CHARS", "UNITS", "AnswerError", "ParsedNumber", "parse_number"]

MAX_CHARS = 64  # a number with its unit fits; a pasted paragraph is refused before any regex
_MAX_DIGITS = 30  # beyond float's precision: refuse rather than round silently
_MAX_EXPONENT = 300

UNITS = ("none", "count", "bytes", "ratio")


class AnswerError(ValueError):
    """A learner's answer that cannot be read as one answer; the message says how to write it.
    It does not count as a wrong try: the question is asked again."""


@dataclass(frozen=True)
class ParsedNumber:
    value: float
    text: str  # the input as typed, stripped (for the feedback, shown as text)
    percent: bool = False  # written with %: value is already divided by 100


# Superscript exponents (10⁻⁴) become ^-4 before NFKC, which would turn ⁻⁴ into a bare "-4".
_SUPER = "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺"
_SUPER_TABLE = str.maketrans(_SUPER, "0123456789-+")
_SUPER_RUN = re.compile(f"[{_SUPER}]+")
_SPACES = re.compile(r"\s+")

_APPROX = ("≈", "~", "约", "大约", "about ", "approx. ", "approximately ")
_NUMBER = re.compile(
    r"""^(?P<sign>[+-])?\s*
    (?P<body>[0-9][0-9 ,]*(?:\.[0-9]*)?|\.[0-9]+)
    (?:(?:[eE](?P<e1>[+-]?[0-9]+))|(?:\s*[x×*·]\s*10\s*\^\s*(?P<e2>[+-]?[0-9]+)))?
    \s*(?P<pct>%)?
    \s*(?P<rest>.*)$""",
    re.ASCII | re.VERBOSE,
)
_POWER = re.compile(r"^\^\s*(?P<e>[+-]?[0-9]+)\s*(?P<rest>.*)$", re.ASCII)
_GROUPED = re.compile(r"^[1-9][0-9]{0,2}(?:(?P<sep>[, ])[0-9]{3})(?:(?P=sep)[0-9]{3})*$", re.ASCII)

_COUNT_SCALE = {
    "k": 1e3, "thousand": 1e3, "千": 1e3, "m": 1e6, "million": 1e6, "百万": 1e6,
    "billion": 1e9, "bn": 1e9, "万": 1e4, "亿": 1e8,
}  # fmt: skip
_COUNT_NOUNS = {
    "", "param", "params", "parameter", "parameters", "weights", "token", "tokens", "cell", "cells",
    "step", "steps", "layer", "layers", "head", "heads", "row", "rows", "column", "columns", "dim",
    "dims", "dimension", "dimensions", "element", "elements", "entries", "number", "numbers",
    "values", "sequences", "个", "个参数", "参数", "个词元", "词元", "步", "层", "个头", "头", "格",
    "个格子", "格子", "维", "行", "列", "个数", "次", "个元素", "元素", "条",
}  # fmt: skip
_BYTES = {"b": 1, "byte": 1, "bytes": 1, "字节": 1, "个字节": 1, "kib": 1024, "mib": 2**20, "gib": 2**30}
_AMBIGUOUS_BYTES = {"kb", "mb", "gb", "kbyte", "mbyte", "gbyte", "kilobytes", "megabytes", "gigabytes"}
_RATIO = {"x": 1, "×": 1, "times": 1, "fold": 1, "倍": 1}


def _shown(text: str) -> str:
    """The input quoted in a message: at most 40 characters, no backticks (a message may be
    shown as markdown, where a backtick would open code)."""
    text = text.replace("`", "'")
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _normalize(text: str) -> str:
    text = _SUPER_RUN.sub(lambda m: "^" + m.group(0).translate(_SUPER_TABLE), text)
    # Full-width digits and punctuation (０．６８, １，５３６, ％, ＫｉＢ) become ASCII.
    text = unicodedata.normalize("NFKC", text).replace("\u2212", "-")  # U+2212 minus sign
    text = _SPACES.sub(" ", text).strip()
    return text.removesuffix("。").strip()  # a sentence's full stop, typed out of habit


def _strip_approx(text: str) -> str:
    for prefix in _APPROX:
        if text.lower().startswith(prefix):
            return text[len(prefix) :].lstrip()
    return text


def _digits(body: str, raw: str) -> str:
    """``body`` without its thousands separators, checked: groups of three after a first group
    of one to three digits that does not start with 0."""
    whole, dot, frac = body.strip().partition(".")
    if "," not in whole and " " not in whole:
        return whole + dot + frac
    if _GROUPED.match(whole):
        return whole.replace(",", "").replace(" ", "") + dot + frac
    if "," in whole and " " not in whole and not dot:
        raise AnswerError(
            tr(
                "{text} is ambiguous: a comma separates thousands in groups of three (1,536); "
                "for a decimal write a point (0.68)",
                text=_shown(raw),
            )
        )
    raise AnswerError(
        tr(
            "{text}: thousands are grouped in threes with one kind of separator (1,536 or 1 536)",
            text=_shown(raw),
        )
    )


def _unit_scale(rest: str, unit: str, percent: bool, raw: str) -> float:
    """The factor a unit written after the number stands for, in the question's ``unit``."""
    word = rest.strip().lower()
    if any(c.isdigit() for c in word):
        raise AnswerError(
            tr("{text} is not one number: write a single value, e.g. 0.5 rather than 1/2", text=_shown(raw))
        )
    if unit == "bytes" and percent:
        raise AnswerError(tr("{text}: a size in bytes is not a percentage", text=_shown(raw)))
    if word == "":
        return 1.0
    if unit == "bytes" and word in _BYTES:
        return _BYTES[word]
    if unit == "bytes" and word in _AMBIGUOUS_BYTES:
        raise AnswerError(
            tr(
                "{text} is ambiguous: {unit} can mean powers of 1,000 or of 1,024; write KiB, "
                "MiB, GiB or the number of bytes",
                text=_shown(raw),
                unit=rest.strip(),
            )
        )
    if unit == "count":
        for scale, factor in sorted(_COUNT_SCALE.items(), key=lambda kv: -len(kv[0])):
            if word.startswith(scale) and word[len(scale) :].strip() in _COUNT_NOUNS:
                return factor
        if word in _COUNT_NOUNS:
            return 1.0
    if unit == "ratio" and word in _RATIO:
        return 1.0
    raise AnswerError(
        tr("{text}: the unit {unit} does not fit this question", text=_shown(raw), unit=_shown(rest.strip()))
    )


def parse_number(text: object, unit: str = "none") -> ParsedNumber:
    """``text`` as one finite number, in the question's ``unit`` (one of `UNITS`).

    Raises `AnswerError` with a message saying what to write for anything empty, too long,
    ambiguous or not a number (module docstring). A bool is not a number.
    """
    if unit not in UNITS:
        raise ValueError(f"unit {unit!r} is not one of {UNITS}")
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise AnswerError(tr("an answer is a number written as text"))
    if isinstance(text, (int, float)):
        if not math.isfinite(text):
            raise AnswerError(tr("{text} is not a finite number", text=_shown(str(text))))
        return ParsedNumber(float(text), str(text))
    raw = text.strip()
    if not raw:
        raise AnswerError(tr("type a number"))
    if len(raw) > MAX_CHARS:
        raise AnswerError(tr("an answer has at most {most} characters", most=MAX_CHARS))
    s = _strip_approx(_normalize(raw))
    if re.search(r"\.[0-9]*,", s, re.ASCII):
        raise AnswerError(tr("{text} mixes a point and a comma: write 1536.5 or 1,536.5", text=_shown(raw)))
    match = _NUMBER.match(s)
    if match is None:
        raise AnswerError(
            tr(
                "{text} is not a number: write digits 0-9 with a point for decimals, e.g. 0.68, 1,536, "
                "68% or 3e-4",
                text=_shown(raw),
            )
        )
    body = match.group("body")
    exponent = match.group("e1") or match.group("e2")
    rest, percent = match.group("rest"), match.group("pct") is not None
    if exponent is None and not percent and rest.startswith("^"):
        power = _POWER.match(rest)
        if body.strip() != "10" or power is None:
            raise AnswerError(
                tr("{text}: only powers of ten are read (10^-4); or write 1e-4", text=_shown(raw))
            )
        body, exponent, rest = "1", power.group("e"), power.group("rest")
        percent = rest.startswith("%")
        rest = rest.removeprefix("%")
    digits = _digits(body, raw)
    if sum(c.isdigit() for c in digits) > _MAX_DIGITS or (exponent and len(exponent.lstrip("+-")) > 4):
        raise AnswerError(tr("{text} has too many digits", text=_shown(raw)))
    e = int(exponent) if exponent else 0
    if abs(e) > _MAX_EXPONENT:
        raise AnswerError(tr("{text} is out of range", text=_shown(raw)))
    factor = _unit_scale(rest, unit, percent, raw)
    value = float(f"{match.group('sign') or ''}{digits}e{e}") * factor
    if percent:
        value /= 100.0
    if not math.isfinite(value):
        raise AnswerError(tr("{text} is out of range", text=_shown(raw)))
    return ParsedNumber(value, raw, percent)
