"""Lessons: ordered steps through the app, each a page, the settings it opens with, and what the
teacher says, in English and Chinese.

A lesson is a JSON file in ``assets/lessons/``::

    {"id": "attention-basics", "order": 1,
     "title": {"en": "...", "zh": "..."}, "summary": {"en": "...", "zh": "..."},
     "steps": [{"page": "attention",                      # a registry key
                "settings": {"layer": "0", "head": "2"},  # share-link keys and values
                "text": {"en": "...", "zh": "..."},       # optional: the text to show
                "title": {"en": "...", "zh": "..."},
                "say": {"en": "...", "zh": "..."},
                "question": {"template": "argmax_key",     # optional: asked before the figure
                             "params": {"query": "it"}}}]}

A step's ``question`` is checked by `tformer.questions.parse_spec` (the format is in the
`tformer.questions` docstring; a malformed one names the step and the field); its template's
page must be the step's page, and a layer, head or query the question leaves to the view must
be among the step's settings, so every learner is asked about the same head.

A step that says what a head does names it and carries the claim, so that it can be checked
against the model (tests/test_lessons.py runs every claim on MiniLM)::

    "claims": [{"layer": 3, "head": 1, "query": "it", "key": "animal", "weight": 0.68},
               {"layer": 0, "head": 2, "role": "previous", "over": "examples", "score": 1.0},
               {"layer": 0, "head": 2, "role": "previous", "positions": "off", "score": 0.1,
                "top": false}]

(`Claim`: a weight one query gives one key, or a head's score for a role and whether it is
that role's top head; numbers as the step's text quotes them, to 2 decimals). The example
texts name the head they open on the same way (assets/examples.json, "opens").

The settings use the share links' keys and string values, so they are checked by the same
parser (`ViewState.from_query`); `check_lesson` refuses a lesson whose page or settings the app
would not accept, and the tests run it over every file. No Streamlit here.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from ..i18n import LANGUAGES, language
from ..questions import QuestionSpec, SpecError, parse_spec

LESSON_ID = r"[a-z0-9-]{1,40}"


CLAIM_ROLES = ("previous", "next", "self", "cls", "duplicate", "broad")


@dataclass(frozen=True)
class Claim:
    """What a lesson step or an example says one head does, checkable on the model.

    Either a weight: on the step's text, the query token ``query`` (the first position with
    that label) gives the key token ``key`` the weight ``weight`` (as quoted, 2 decimals); or a
    role (`tformer.analysis.head_roles.ROLES`): the head scores ``score`` (2 decimals) and, with ``top``,
    no head scores more; scored on the step's text or averaged over the example texts
    (``over``), with the positions on or switched off.
    """

    layer: int
    head: int
    query: str | None = None
    key: str | None = None
    weight: float | None = None
    role: str | None = None
    score: float | None = None
    top: bool = True
    over: str = "text"  # "text" | "examples"
    positions: bool = True

    @property
    def kind(self) -> str:
        return "weight" if self.weight is not None else "role"


def _index(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 64


def parse_claim(data: Any, where: str) -> Claim:
    """A `Claim` from its JSON object (ValueError naming ``where`` and the part that is wrong)."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: a claim is a JSON object")
    known = {"layer", "head", "query", "key", "weight", "role", "score", "top", "over", "positions"}
    if set(data) - known:
        raise ValueError(f"{where}: unknown claim fields {sorted(set(data) - known)}")
    layer, head = data.get("layer"), data.get("head")
    if not (_index(layer) and _index(head)):
        raise ValueError(f"{where}: a claim names its head: layer and head in 0..63")
    assert isinstance(layer, int)
    assert isinstance(head, int)
    numbers = [data[k] for k in ("weight", "score") if k in data]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1 for v in numbers):
        raise ValueError(f"{where}: weight and score are numbers in 0..1")
    over, positions, top = data.get("over", "text"), data.get("positions", "on"), data.get("top", True)
    if over not in ("text", "examples") or positions not in ("on", "off") or not isinstance(top, bool):
        raise ValueError(f"{where}: over is 'text' or 'examples', positions 'on' or 'off', top true or false")
    pair = all(isinstance(data.get(k), str) and data.get(k) for k in ("query", "key")) and "weight" in data
    role = data.get("role") in CLAIM_ROLES and "score" in data
    if pair == role or (pair and {"role", "score", "top"} & set(data)):
        raise ValueError(
            f"{where}: a claim is a weight (query, key, weight) or a role ({', '.join(CLAIM_ROLES)}) with a score"
        )
    return Claim(
        layer, head, data.get("query"), data.get("key"),
        None if "weight" not in data else float(data["weight"]), data.get("role"),
        None if "score" not in data else float(data["score"]), top, over, positions == "on",
    )  # fmt: skip


@dataclass(frozen=True)
class Step:
    page: str
    settings: dict[str, str]
    text: dict[str, str] | None
    title: dict[str, str]
    say: dict[str, str]
    claims: tuple[Claim, ...] = ()
    question: QuestionSpec | None = None  # asked before the step's figure (tformer.questions)

    def text_in(self, lang: str) -> str | None:
        return None if self.text is None else self.text.get(lang) or self.text["en"]


@dataclass(frozen=True)
class Lesson:
    id: str
    order: int
    title: dict[str, str]
    summary: dict[str, str]
    steps: tuple[Step, ...]


def local(texts: dict[str, str], lang: str | None = None) -> str:
    """``texts`` in ``lang`` (default: the interface's language), else in English."""
    return texts.get(lang or language()) or texts["en"]


def _both(value: Any, where: str) -> dict[str, str]:
    if (
        not isinstance(value, dict)
        or set(value) != set(LANGUAGES)
        or not all(isinstance(v, str) and v for v in value.values())
    ):
        raise ValueError(f"{where} must give a non-empty text for each of {sorted(LANGUAGES)}")
    return dict(value)


def parse_lesson(data: Any) -> Lesson:
    """A lesson from its JSON object (ValueError naming the part that is wrong)."""
    if not isinstance(data, dict):
        raise ValueError("a lesson is a JSON object")
    lid = data.get("id")
    if not isinstance(lid, str) or not re.fullmatch(LESSON_ID, lid):
        raise ValueError(f"lesson id {lid!r} must match {LESSON_ID}")
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps:
        raise ValueError(f"lesson {lid}: steps must be a non-empty list")
    parsed = []
    for i, s in enumerate(steps):
        where = f"lesson {lid}, step {i + 1}"
        if not isinstance(s, dict) or not isinstance(s.get("page"), str):
            raise ValueError(f"{where}: a step needs a page")
        settings = s.get("settings", {})
        if not isinstance(settings, dict) or not all(isinstance(v, str) for v in settings.values()):
            raise ValueError(f"{where}: settings map keys to string values")
        text = _both(s["text"], f"{where} text") if "text" in s else None
        claims = s.get("claims", [])
        if not isinstance(claims, list):
            raise ValueError(f"{where}: claims must be a list")
        parsed.append(
            Step(
                s["page"],
                dict(settings),
                text,
                _both(s.get("title"), f"{where} title"),
                _both(s.get("say"), f"{where} say"),
                tuple(parse_claim(c, f"{where}, claim {k + 1}") for k, c in enumerate(claims)),
                parse_spec(s["question"], where) if "question" in s else None,
            )
        )
    order = data.get("order", 99)
    return Lesson(
        lid,
        int(order),
        _both(data.get("title"), f"lesson {lid} title"),
        _both(data.get("summary"), f"lesson {lid} summary"),
        tuple(parsed),
    )


def check_lesson(lesson: Lesson) -> None:
    """Raise ValueError if a step names a page the registry lacks or a setting the view state
    would not accept (the same check a share link gets)."""
    from .registry import PAGES
    from .state import ViewState

    keys = {p.key for p in PAGES}
    for i, step in enumerate(lesson.steps):
        where = f"lesson {lesson.id}, step {i + 1}"
        if step.page not in keys:
            raise ValueError(f"{where}: no page {step.page!r}")
        _, notices = ViewState.from_query(step.settings)
        if notices:
            raise ValueError(f"{where}: {'; '.join(notices)}")
        if step.question is not None:
            check_question(step, where)
        for lang in LANGUAGES:
            text = step.text_in(lang)
            if text is not None:
                _, notices = ViewState.from_query({"text": text})
                if notices:
                    raise ValueError(f"{where} text: {'; '.join(notices)}")


def check_question(step: Step, where: str) -> None:
    """Raise `SpecError` if a step's question is asked on another page than the one whose figure
    gives it away, or leaves its layer, head or query to a view the step does not set (the
    answer would then depend on where the learner came from)."""
    spec = step.question
    assert spec is not None
    if step.page not in spec.info.pages:
        pages = " or ".join(repr(p) for p in spec.info.pages)
        raise SpecError(
            where,
            "question.template",
            f"{spec.template} is answered by the page {pages}, but the step is on {step.page!r}",
        )
    for name in spec.from_view:
        if name not in step.settings:
            raise SpecError(
                where,
                f"question.params.{name}",
                f"neither the question nor the step's settings choose the {name}: give one of them",
            )


@functools.cache
def lessons() -> tuple[Lesson, ...]:
    """Every lesson in assets/lessons/, checked, in their order."""
    folder = files("tformer.assets").joinpath("lessons")
    found = []
    for path in sorted((p for p in folder.iterdir() if p.name.endswith(".json")), key=lambda p: p.name):
        try:
            lesson = parse_lesson(json.loads(path.read_text(encoding="utf-8")))
            check_lesson(lesson)
        except (ValueError, json.JSONDecodeError) as err:
            raise ValueError(f"{path.name}: {err}") from None
        found.append(lesson)
    ids = [lesson.id for lesson in found]
    if len(set(ids)) != len(ids):
        raise ValueError(f"two lessons share an id: {ids}")
    return tuple(sorted(found, key=lambda lesson: (lesson.order, lesson.id)))


def lesson_by_id(lesson_id: str) -> Lesson | None:
    return next((lesson for lesson in lessons() if lesson.id == lesson_id), None)
