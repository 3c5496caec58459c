"""Lessons: ordered steps through the app, each a page, the settings it opens with, and what the
teacher says, in English and Chinese.

A lesson is a JSON file in ``assets/lessons/``::

    {"id": "attention-basics", "order": 1,
     "title": {"en": "...", "zh": "..."}, "summary": {"en": "...", "zh": "..."},
     "steps": [{"page": "attention",                      # a registry key
                "settings": {"layer": "0", "head": "2"},  # share-link keys and values
                "text": {"en": "...", "zh": "..."},       # optional: the text to show
                "title": {"en": "...", "zh": "..."},
                "say": {"en": "...", "zh": "..."}}]}

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

LESSON_ID = r"[a-z0-9-]{1,40}"


@dataclass(frozen=True)
class Step:
    page: str
    settings: dict[str, str]
    text: dict[str, str] | None
    title: dict[str, str]
    say: dict[str, str]

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
        parsed.append(
            Step(
                s["page"],
                dict(settings),
                text,
                _both(s.get("title"), f"{where} title"),
                _both(s.get("say"), f"{where} say"),
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
        for lang in LANGUAGES:
            text = step.text_in(lang)
            if text is not None:
                _, notices = ViewState.from_query({"text": text})
                if notices:
                    raise ValueError(f"{where} text: {'; '.join(notices)}")


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
