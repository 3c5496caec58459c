"""A learner's progress through a lesson's questions, as the view state (and a share link) keeps it.

One record per question step: ``{step}{status}{wrong tries}`` and, once answered, ``:{value}``
(the answer as graded: a token's position, a number, an option's key), the records joined by
commas: ``"0r0:7,3w2:0.5,4s0"`` is step 1 right at the first try (position 7), step 4 wrong
twice (0.5 the last answer), step 5 skipped. Statuses: ``r`` right, ``w`` wrong (shown after the
second wrong try), ``s`` skipped, ``p`` tried once and wrong (the hint is showing; the figure is
still hidden). A link's string is checked by `QUIZ_PATTERN` (the view state refuses anything
else); a step index past the lesson is ignored where it is read. No Streamlit here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "DONE",
    "QUIZ_CHARS",
    "QUIZ_PATTERN",
    "STATUSES",
    "Record",
    "encode_value",
    "format_progress",
    "parse_progress",
]

STATUSES = ("r", "w", "s", "p")
DONE = ("r", "w", "s")  # the figure is revealed
VALUE = r"[A-Za-z0-9_.+\-]{1,24}"
_ITEM = rf"\d{{1,2}}[rwsp]\d(?::{VALUE})?"
QUIZ_PATTERN = rf"(?:{_ITEM}(?:,{_ITEM}){{0,99}})?"
QUIZ_CHARS = 100 * 30
MAX_TRIES = 9


@dataclass(frozen=True)
class Record:
    """One question step's progress: its status (`STATUSES`), the wrong tries so far, and the
    last answer graded (``value``: as `encode_value` writes it; None when skipped untried)."""

    status: str
    tries: int = 0
    value: str | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES or not 0 <= self.tries <= MAX_TRIES:
            raise ValueError(f"status {self.status!r} must be one of {STATUSES}, tries in 0..{MAX_TRIES}")
        if self.value is not None and not re.fullmatch(VALUE, self.value):
            raise ValueError(f"value {self.value!r} must match {VALUE}")

    @property
    def done(self) -> bool:
        return self.status in DONE

    @property
    def right(self) -> bool:
        return self.status == "r"


def encode_value(value: int | float | str) -> str | None:
    """A graded answer as a record keeps it: an int as is, a float in 6 significant digits, an
    option key or direction as is; None when it does not fit (the record then keeps none)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            return None
        text = f"{value:.6g}"
    else:
        text = value
    return text if re.fullmatch(VALUE, text) else None


def parse_progress(text: str) -> dict[int, Record]:
    """The records of a progress string (step index -> record; a later record of the same step
    wins). ValueError for a string that `QUIZ_PATTERN` refuses."""
    if not re.fullmatch(QUIZ_PATTERN, text):
        raise ValueError(f"not a progress string: {text[:40]!r}")
    out: dict[int, Record] = {}
    for item in filter(None, text.split(",")):
        head, _, value = item.partition(":")
        out[int(head[:-2])] = Record(head[-2], int(head[-1]), value or None)
    return out


def format_progress(records: Mapping[int, Record]) -> str:
    """The progress string of ``records``, by step."""
    return ",".join(
        f"{i}{r.status}{min(r.tries, MAX_TRIES)}" + (f":{r.value}" if r.value is not None else "")
        for i, r in sorted(records.items())
    )
