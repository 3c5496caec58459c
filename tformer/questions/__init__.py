"""Questions a lesson asks before a reveal, graded against the live model.

A lesson step may hold one question. Its right answer is never written in the lesson: the step
names a *template* (the quantity) and its parameters, and the answer is computed from the
current text, model, layer and head when the question is shown, so a changed text changes the
answer with it. numpy only at import; the few templates that run the model (``runs_model``)
or use torch's positional and capture helpers import them when asked.

The format, in a lesson step (``assets/lessons/*.json``)::

    {"page": "attention", "settings": {...}, "title": {...}, "say": {...},
     "question": {
        "template": "argmax_key",                 # required: a name in `templates()`
        "kind": "token",                          # optional: must be the template's kind
        "params": {"layer": 3, "head": 1,         # optional: the template's parameters
                   "query": "it"},
        "tolerance": {"abs": 0.05, "rel": 0.1}    # optional, number questions only
     }}

- ``template``: one of `templates()`; each declares its concept (the lesson order's
  ``CONCEPTS``), its kind, the page whose figure gives the answer away, and its parameters
  (`Param`: type, bounds, choices, default). ``kind`` is ``token`` (pick a token), ``number``
  (within a stated tolerance), ``choice`` (one of several options) or ``direction`` (higher,
  lower or the same).
- ``params``: a ``layer`` or ``head`` is an integer 0..63; left out, the view's is used (the
  step's settings or the learner's choice), and a layer or head the model lacks makes the
  question not available. A token (``query``, ``key``, ``source``, ``target``) is named by its
  text, matched to the first position whose label reads the same (case, a word piece's ``##``
  and an unknown token's ``?`` ignored: ``"it"``, ``"[CLS]"``), or by its position (an
  integer); left out, ``query`` is the view's query. Other parameters are ints, numbers,
  booleans or one of a list of choices, each within its declared range. ``null`` is refused:
  leave a parameter out to get its default.
- ``tolerance``: how far a typed number may be from the model's value, ``abs`` (≥ 0) and/or
  ``rel`` (0..0.5 of the value), whichever is wider; it replaces the template's own.

`check_spec` (every problem) and `parse_spec` (the first) refuse unknown fields and
parameters, a kind that does not match, wrong types and out-of-range values, each as a
`SpecError` that names the step and the field (``lesson attention-basics, step 2,
question.params.tau: must be in 0.05..20.0, got 0``).

Asking and grading::

    spec = parse_spec(step["question"], "lesson x, step 2")
    ctx = QuestionContext(capture, layer=3, head=1, query=10, model=model)
    question = ask(spec, ctx)          # or NotAvailable, with a message and a reason
    question.prompt, question.options, question.tolerance
    grade = question.grade("0.7", wrong_tries=0)   # AnswerError if it cannot be read
    grade.correct, grade.verdict, grade.explanation, grade.hint, question.mark

Every string a reader sees is plain text (never markup) in the interface's language
(`tformer.i18n.tr`; Chinese in ``assets/i18n/zh/questions.json``).
"""

from __future__ import annotations

from .answers import (
    DIRECTIONS,
    KINDS,
    Answer,
    ChoiceAnswer,
    DirectionAnswer,
    Grade,
    Mark,
    NumberAnswer,
    Question,
    TokenAnswer,
    Tolerance,
)
from .context import REASONS, NotAvailable, QuestionContext
from .numbers import UNITS, AnswerError, ParsedNumber, parse_number
from .registry import CONCEPTS, Param, Template, templates
from .spec import QuestionSpec, SpecError, ask, check_spec, parse_spec

__all__ = [
    "CONCEPTS",
    "DIRECTIONS",
    "KINDS",
    "REASONS",
    "UNITS",
    "Answer",
    "AnswerError",
    "ChoiceAnswer",
    "DirectionAnswer",
    "Grade",
    "Mark",
    "NotAvailable",
    "NumberAnswer",
    "Param",
    "ParsedNumber",
    "Question",
    "QuestionContext",
    "QuestionSpec",
    "SpecError",
    "Template",
    "TokenAnswer",
    "Tolerance",
    "ask",
    "check_spec",
    "parse_number",
    "parse_spec",
    "templates",
]
