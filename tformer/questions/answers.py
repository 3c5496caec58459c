"""The four kinds of question, each with a typed answer, a parser for what a learner gives and a
grader: pick a token, a number within a stated tolerance, one of several options, and "more or
less?" (higher, lower or the same).

A learner's response arrives from a widget or a text box: a token's position (an int, from a
click or a pick list) or its text, a number (a float from a number box, or text read by
`tformer.questions.numbers.parse_number`), an option's key, label or letter, a direction's word.
``parse`` turns it into the canonical value (int position, float, option key, direction) or
raises `AnswerError`; ``check`` says whether that value is right. Nothing here renders markup:
every string is plain text for the UI to show as text.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..i18n import tr
from ..model.tokenizer import UNK_MARK
from .numbers import AnswerError, parse_number

__all__ = [
    "DIRECTIONS",
    "KINDS",
    "Answer",
    "ChoiceAnswer",
    "DirectionAnswer",
    "Grade",
    "Mark",
    "NumberAnswer",
    "Question",
    "TokenAnswer",
    "Tolerance",
    "format_number",
    "normalize_label",
    "token_candidates",
]

KINDS = ("token", "number", "choice", "direction")
DIRECTIONS = ("higher", "lower", "same")

# What a learner may type for a direction, beside the question's own words (English, Chinese).
_DIRECTION_WORDS: dict[str, tuple[str, ...]] = {
    "higher": ("higher", "more", "larger", "bigger", "greater", "up", "increase", "increases", "rises",
               "↑", "+", "更高", "更多", "更大", "变大", "增大", "增加", "上升", "升高", "高"),
    "lower": ("lower", "less", "fewer", "smaller", "down", "decrease", "decreases", "falls", "↓", "-",
              "更低", "更少", "更小", "变小", "减小", "减少", "下降", "降低", "低"),
    "same": ("same", "the same", "unchanged", "equal", "no change", "=", "不变", "一样", "相同", "没变",
             "不会变", "一样大"),
}  # fmt: skip


def normalize_label(text: str) -> str:
    """A token label or a typed token as compared: NFKC, lower case, quotes, a word piece's "##"
    and an unknown token's "?" mark stripped."""
    t = unicodedata.normalize("NFKC", text).strip().strip("\"'“”‘’「」『』").strip().lower()
    t = t.removeprefix("##")
    return t[: -len(UNK_MARK)] if len(t) > len(UNK_MARK) and t.endswith(UNK_MARK) else t


def format_number(value: float, digits: int | None = None) -> str:
    """A value as the feedback shows it: integers with thousands separators (1,536), others with
    ``digits`` decimals, or 3 significant digits in scientific notation when tiny (3.5e-04)."""
    if not math.isfinite(value):
        return str(value)
    if digits is None:
        if float(value).is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        if value != 0 and abs(value) < 1e-2:
            return f"{value:.3g}"  # 0.0014, 3e-05: three significant digits
        digits = 2 if abs(value) < 100 else 1
    return f"{round(value, digits) + 0.0:,.{digits}f}"  # + 0.0: never "-0.000"


@dataclass(frozen=True)
class Tolerance:
    """How far a number may be from the model's value and still be right: within ``abs`` or
    within ``rel`` × |value|, whichever is larger (0 and 0: exactly, for counts)."""

    abs: float = 0.0
    rel: float = 0.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.abs) and self.abs >= 0 and math.isfinite(self.rel) and 0 <= self.rel < 1):
            raise ValueError(f"tolerance abs={self.abs!r} must be >= 0 and rel={self.rel!r} in [0, 1)")

    def allows(self, given: float, expected: float) -> bool:
        slack = max(self.abs, self.rel * abs(expected))
        # float noise on exact counts (1536.0000000001 from "1.536k") is never a wrong answer
        return abs(given - expected) <= slack + 1e-9 * max(1.0, abs(expected))

    def describe(self) -> str:
        if self.abs == 0 and self.rel == 0:
            return tr("exactly")
        parts = []
        if self.abs:
            parts.append(tr("within ±{abs}", abs=f"{self.abs:g}"))
        if self.rel:
            parts.append(tr("within {rel}%", rel=f"{100 * self.rel:g}"))
        return (
            tr("{first} or {second}, whichever is wider", first=parts[0], second=parts[1])
            if len(parts) == 2
            else parts[0]
        )


@dataclass(frozen=True)
class TokenAnswer:
    """A token of the text: the positions that count as right (ties, or a word's pieces), the
    labels of every position (the pick list) and the positions a learner may pick at all (a
    causal query sees no later key)."""

    positions: frozenset[int]
    labels: tuple[str, ...]
    candidates: tuple[int, ...]
    kind: str = field(default="token", init=False)

    def __post_init__(self) -> None:
        if not self.positions or not self.positions <= set(self.candidates):
            raise ValueError(f"right positions {sorted(self.positions)} must be among the candidates")
        if not all(0 <= c < len(self.labels) for c in self.candidates):
            raise ValueError(f"candidates {self.candidates} outside 0..{len(self.labels) - 1}")

    def show(self, position: int) -> str:
        return tr("'{token}' (position {pos})", token=self.labels[position], pos=position)

    @property
    def expected(self) -> str:
        return tr(" or ").join(self.show(p) for p in sorted(self.positions))

    def parse(self, raw: object) -> int:
        """A position: an int (a click), or text: a token's text (it must name one position
        the learner may pick) or ``#7`` for position 7."""
        if isinstance(raw, bool):
            raise AnswerError(tr("pick a token"))
        if isinstance(raw, int):
            return self._candidate(raw)
        if not isinstance(raw, str):
            raise AnswerError(tr("pick a token"))
        typed = unicodedata.normalize("NFKC", raw).strip()
        if not typed:
            raise AnswerError(tr("pick a token"))
        if len(typed) > 60:
            raise AnswerError(tr("an answer has at most {most} characters", most=60))
        if typed.startswith("#") and typed[1:].strip().isascii() and typed[1:].strip().isdigit():
            return self._candidate(int(typed[1:].strip()))
        want = normalize_label(typed)
        hits = [p for p in self.candidates if normalize_label(self.labels[p]) == want]
        if not hits:
            raise AnswerError(
                tr(
                    "{token} is not a token you can pick here: click one, or pick it from the list",
                    token=repr(typed),
                )
            )
        if len(hits) > 1:
            raise AnswerError(
                tr(
                    "{token} is at positions {where}: click the one you mean, or write #{first}",
                    token=repr(typed),
                    where=", ".join(str(p) for p in hits),
                    first=hits[0],
                )
            )
        return hits[0]

    def _candidate(self, position: int) -> int:
        if position not in self.candidates:
            raise AnswerError(
                tr(
                    "position {pos} is not a token you can pick here (0..{last})",
                    pos=position,
                    last=len(self.labels) - 1,
                )
            )
        return position

    def check(self, position: int) -> bool:
        return position in self.positions


@dataclass(frozen=True)
class NumberAnswer:
    """A number: the model's value, the stated tolerance, the unit a learner may write it in
    (`tformer.questions.numbers.UNITS`) and the decimals the feedback shows."""

    value: float
    tolerance: Tolerance
    unit: str = "none"
    digits: int | None = None
    kind: str = field(default="number", init=False)

    def __post_init__(self) -> None:
        if not math.isfinite(self.value):
            raise ValueError(f"a number answer must be finite, got {self.value!r}")

    def show(self, value: float) -> str:
        return format_number(value, self.digits)

    @property
    def expected(self) -> str:
        return self.show(self.value)

    def parse(self, raw: object) -> float:
        return parse_number(raw, self.unit).value

    def check(self, value: float) -> bool:
        return self.tolerance.allows(value, self.value)


@dataclass(frozen=True)
class ChoiceAnswer:
    """One of several options, each ``(key, label)``; ``correct`` holds the keys that are right."""

    options: tuple[tuple[str, str], ...]
    correct: frozenset[str]
    kind: str = field(default="choice", init=False)

    def __post_init__(self) -> None:
        keys = [k for k, _ in self.options]
        if len(keys) < 2 or len(set(keys)) != len(keys) or not self.correct or not self.correct <= set(keys):
            raise ValueError(f"options {keys} need two or more distinct keys and a right one among them")

    @property
    def letters(self) -> dict[str, str]:
        """Letter (A, B, ...) -> option key, in the options' order."""
        return {chr(ord("A") + i): k for i, (k, _) in enumerate(self.options)}

    def show(self, key: str) -> str:
        return dict(self.options)[key]

    @property
    def expected(self) -> str:
        return tr(" or ").join(self.show(k) for k, _ in self.options if k in self.correct)

    def parse(self, raw: object) -> str:
        """An option: its key, its label (case and width ignored) or its letter (A, B, ...)."""
        if not isinstance(raw, str) or not raw.strip():
            raise AnswerError(tr("pick one of the options"))
        typed = unicodedata.normalize("NFKC", raw).strip()
        want = normalize_label(typed)
        hits = {k for k, label in self.options if k == typed or normalize_label(label) == want}
        letter = self.letters.get(typed.upper()) if len(typed) == 1 else None
        if letter is not None and hits and hits != {letter}:
            raise AnswerError(tr("{answer} names two different options: pick one", answer=repr(typed)))
        if letter is not None:
            hits = {letter}
        if len(hits) != 1:
            raise AnswerError(tr("{answer} is not one of the options: pick one", answer=repr(typed[:40])))
        return hits.pop()

    def check(self, key: str) -> bool:
        return key in self.correct


@dataclass(frozen=True)
class DirectionAnswer:
    """Higher, lower or the same: the direction the model's number moved, the change itself, the
    band within which a change counts as "the same", and the question's own words for each
    direction (``{"lower": "sharper", ...}``)."""

    direction: str
    change: float
    same_within: float
    words: Mapping[str, str]
    kind: str = field(default="direction", init=False)

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS or set(self.words) != set(DIRECTIONS):
            raise ValueError(
                f"direction {self.direction!r} and words {sorted(self.words)} must use {DIRECTIONS}"
            )

    @property
    def options(self) -> tuple[tuple[str, str], ...]:
        return tuple((d, self.words[d]) for d in DIRECTIONS)

    def show(self, direction: str) -> str:
        return self.words[direction]

    @property
    def expected(self) -> str:
        return self.show(self.direction)

    def parse(self, raw: object) -> str:
        if not isinstance(raw, str) or not raw.strip():
            raise AnswerError(tr("pick one of the options"))
        want = normalize_label(raw)
        hits = {
            d
            for d in DIRECTIONS
            if want == d or want == normalize_label(self.words[d]) or want in _DIRECTION_WORDS[d]
        }
        if len(hits) != 1:
            raise AnswerError(
                tr("{answer} is not one of the options: pick one", answer=repr(raw.strip()[:40]))
            )
        return hits.pop()

    def check(self, direction: str) -> bool:
        return direction == self.direction


Answer = TokenAnswer | NumberAnswer | ChoiceAnswer | DirectionAnswer


@dataclass(frozen=True)
class Mark:
    """Where the reveal outlines the answer on the figure: the activation or part shown (its
    short name, e.g. ``pattern``, ``attn_scores``, ``q``, ``mask``, ``params``), the head, the
    query row and the key columns (for token questions: the query's row and the right keys),
    or a named part or setting (``W_Q``, ``mlp``, ``warmup``)."""

    figure: str
    layer: int | None = None
    head: int | None = None
    row: int | None = None
    cols: tuple[int, ...] = ()
    part: str | None = None


@dataclass(frozen=True)
class Grade:
    """The verdict on one response: right or not, the answer as understood, the model's value,
    one line saying so, the explanation with this text's numbers, and the hint (first wrong try
    only). ``value`` is the parsed answer (int position, float, option key or direction), the
    form a progress record keeps."""

    correct: bool
    value: int | float | str
    given: str
    expected: str
    verdict: str
    explanation: str
    hint: str | None


@dataclass(frozen=True)
class Question:
    """One question as shown now: computed from the current text, model, layer and head.

    ``prompt``, ``explanation`` and ``hint`` are plain text in the interface's language at the
    time it was made; ``expected``, ``tolerance`` and a grade's verdict are worded when read
    (so ask again after a language switch, or read them in the same language). ``page`` is the registry key of the page whose figure gives the answer
    away; ``mark`` says what to outline on it. ``params`` are the template's parameters as
    resolved (the layer, head and positions used).
    """

    template: str
    concept: str
    page: str
    prompt: str
    answer: Answer
    explanation: str
    hint: str
    mark: Mark
    params: Mapping[str, object] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return self.answer.kind

    @property
    def expected(self) -> str:
        """The model's value as the feedback shows it."""
        return self.answer.expected

    @property
    def tolerance(self) -> str | None:
        """The stated tolerance of a number question (None for the other kinds)."""
        a = self.answer
        return a.tolerance.describe() if isinstance(a, NumberAnswer) else None

    @property
    def options(self) -> tuple[tuple[str, str], ...]:
        """(key, label) of each option of a choice or direction question (else empty)."""
        a = self.answer
        return a.options if isinstance(a, (ChoiceAnswer, DirectionAnswer)) else ()

    def parse(self, raw: object) -> int | float | str:
        """The response as the canonical value, or `AnswerError` saying how to answer."""
        return self.answer.parse(raw)

    def grade(self, raw: object, *, wrong_tries: int = 0) -> Grade:
        """Grade one response. ``wrong_tries``: how many wrong answers came before; the hint
        comes with the first wrong one. Raises `AnswerError` (not a try) when it cannot be read."""
        a = self.answer
        value = a.parse(raw)
        correct = a.check(value)  # type: ignore[arg-type]  # parse returns the type check takes
        given = a.show(value)  # type: ignore[arg-type]
        if correct:
            verdict = tr("Right: the model's value is {expected}.", expected=a.expected)
        else:
            verdict = tr(
                "Not quite: you said {given}; the model's value is {expected}.",
                given=given,
                expected=a.expected,
            )
        return Grade(
            correct=correct,
            value=value,
            given=given,
            expected=a.expected,
            verdict=verdict,
            explanation=self.explanation,
            hint=None if correct or wrong_tries > 0 else self.hint,
        )


def token_candidates(labels: Sequence[str], pickable: Sequence[bool] | None = None) -> tuple[int, ...]:
    """The positions a learner may pick: every one, or those ``pickable`` marks (bool [pos], a
    choice of answers, not an attention mask)."""
    return tuple(i for i in range(len(labels)) if pickable is None or pickable[i])
