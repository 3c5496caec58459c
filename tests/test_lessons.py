"""The lessons in assets/lessons: they load, speak both languages, name real pages and settings
the app accepts; a broken lesson is refused with a message that says where."""

from __future__ import annotations

import pytest

from tformer.i18n import LANGUAGES
from tformer.ui.lessons import check_lesson, lesson_by_id, lessons, local, parse_lesson
from tformer.ui.registry import LESSON_MAP, PAGES


def test_three_lessons_in_order_each_in_both_languages():
    found = lessons()
    assert [lesson.id for lesson in found] == ["attention-basics", "minilm-heads", "positional-encoding"]
    for lesson in found:
        assert len(lesson.steps) >= 5
        for texts in [lesson.title, lesson.summary] + [s.say for s in lesson.steps]:
            assert set(texts) == set(LANGUAGES)
            assert any("\u4e00" <= ch <= "\u9fff" for ch in texts["zh"]), texts["zh"]
        assert all(set(s.title) == set(LANGUAGES) for s in lesson.steps)
        assert lesson.steps[0].text is not None  # a lesson opens on its own text


def test_local_falls_back_to_english():
    assert local({"en": "a", "zh": "甲"}, "zh") == "甲"
    assert local({"en": "a"}, "zh") == "a"


def test_the_lesson_map_follows_the_seeds_and_covers_every_lesson_page():
    titles = [c.title for c in LESSON_MAP]
    assert titles[0] == "Why attention" and titles[-1] == "Running it efficiently"
    assert (
        titles.index("Q, K, V") < titles.index("Multi-head attention") < titles.index("Positional encoding")
    )
    assert (
        titles.index("Positional encoding")
        < titles.index("FFN, residual and LayerNorm")
        < titles.index("Training")
    )
    keys = {p.key for p in PAGES}
    mapped = {k for c in LESSON_MAP for k in c.pages}
    assert mapped <= keys
    # every page but the start page, the experiments and the export is somewhere on the map
    assert keys - mapped == {"home", "compare", "export"}


def step(**over):
    base = {
        "page": "attention",
        "settings": {"layer": "1"},
        "title": {"en": "t", "zh": "题"},
        "say": {"en": "s", "zh": "说"},
    }
    return base | over


def lesson(*steps):
    return {
        "id": "x",
        "title": {"en": "t", "zh": "题"},
        "summary": {"en": "s", "zh": "概"},
        "steps": list(steps),
    }


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (lesson(step(page="nowhere")), "no page 'nowhere'"),
        (lesson(step(settings={"layer": "lots"})), "layer"),
        (lesson(step(settings={"unknown.key": "1"})), "unknown"),
        (lesson(step(say={"en": "only English"})), "say"),
        (lesson(), "non-empty"),
        ({"id": "Bad Id!"}, "id"),
    ],
)
def test_a_broken_lesson_is_refused_with_where(data, message):
    with pytest.raises(ValueError, match=message):
        check_lesson(parse_lesson(data))


def test_lesson_by_id():
    assert lesson_by_id("minilm-heads").title["en"] == "What MiniLM's heads do"
    assert lesson_by_id("nope") is None
