"""The lessons in assets/lessons: they load, speak both languages, name real pages and settings
the app accepts; a broken lesson is refused with a message that says where."""

from __future__ import annotations

import functools
import re

import pytest

from tformer.analysis.head_roles import average_scores, rank_heads, role_scores
from tformer.i18n import LANGUAGES
from tformer.ui.lessons import Claim, check_lesson, lesson_by_id, lessons, local, parse_lesson
from tformer.ui.registry import LESSON_MAP, PAGES


def test_the_lessons_in_order_each_in_both_languages():
    found = lessons()
    assert [lesson.id for lesson in found] == [
        "attention-basics",
        "minilm-heads",
        "positional-encoding",
        "inside-the-encoder",
    ]
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
    assert titles[0] == "Why attention"
    assert titles[-1] == "Running it efficiently"
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
    # every page but the start page, the experiments, the export and the live class is on the map
    assert keys - mapped == {"home", "compare", "export", "classroom"}


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


# --- every claim a lesson or an example makes about a head, checked on MiniLM ------------------

HEAD_EN = re.compile(r"\b[Ll]ayer (\d+), head (\d+)\b")
HEAD_ZH = re.compile(r"第 (\d+) 层第 (\d+) 个头")


@pytest.fixture(scope="module")
def minilm():
    from tformer import load_pretrained

    return load_pretrained("minilm", device="cpu")


@functools.cache
def _scores_over_examples() -> dict:
    return average_scores([_scores(t, True) for t in _english_examples()])


def _english_examples() -> list[str]:
    from tformer.resources import examples

    return [str(e["text"]) for e in examples() if e["lang"] == "en"]


_MODEL: dict = {}


def _scores(text: str, positions: bool) -> dict:
    from tformer import capture_text
    from tformer.model.interventions import patterns_without_positions

    model, tok = _MODEL["minilm"]
    cap = capture_text(model, tok, text, ["pattern"])
    enc = cap.encoded
    pattern = cap.pattern if positions else patterns_without_positions(model, enc.ids)
    return role_scores(
        pattern, enc.ids, cls_pos=enc.leading_special, skip_special=enc.special, unk_id=tok.unk_id
    )


def measured(claim: Claim, text: str) -> float:
    """What MiniLM gives for the claim's number on ``text``; checks a role claim's "top" too."""
    from tformer import capture_text

    model, tok = _MODEL["minilm"]
    if claim.kind == "weight":
        cap = capture_text(model, tok, text, ["pattern"])
        labels = cap.labels
        assert claim.query in labels, (claim, labels)
        assert claim.key in labels, (claim, labels)
        return float(cap.pattern[claim.layer, claim.head, labels.index(claim.query), labels.index(claim.key)])
    assert claim.role is not None
    if claim.over == "examples":
        assert claim.positions, "scores over the examples are with positions"
        scores = _scores_over_examples()
    else:
        scores = _scores(text, claim.positions)
    if claim.top:
        (layer, head, _), *_ = rank_heads(scores, claim.role)
        assert (layer, head) == (claim.layer, claim.head), f"the top {claim.role} head is L{layer}H{head}"
    return float(scores[claim.role][claim.layer, claim.head])


def lesson_steps() -> list[tuple[str, int, object, str]]:
    """(lesson id, step number, step, the English text the step runs on) for every step."""
    out = []
    for lesson in lessons():
        text = None
        for i, s in enumerate(lesson.steps):
            text = s.text_in("en") or text
            out.append((lesson.id, i + 1, s, text))
    return out


STEPS = lesson_steps()


@pytest.mark.parametrize(
    ("lesson_id", "number", "step", "text"), STEPS, ids=[f"{a}-{b}" for a, b, *_ in STEPS]
)
def test_every_head_a_step_names_is_claimed_and_each_claim_holds_on_minilm(
    minilm, lesson_id, number, step, text
):
    _MODEL["minilm"] = minilm
    claimed = {(c.layer, c.head) for c in step.claims}
    for lang, pattern in (("en", HEAD_EN), ("zh", HEAD_ZH)):
        named = {(int(a), int(b)) for a, b in pattern.findall(step.say[lang])}
        assert named == claimed, f"{lang}: the step names {sorted(named)}, claims {sorted(claimed)}"
        for c in step.claims:
            quoted = f"{c.weight if c.weight is not None else c.score:.2f}"
            assert quoted in step.say[lang], f"{lang}: {quoted} (the claim's number) is not in the text"
    for c in step.claims:
        value = measured(c, text)
        quoted = c.weight if c.weight is not None else c.score
        assert abs(value - quoted) < 0.005, f"{c}: MiniLM gives {value:.4f}, the lesson says {quoted:.2f}"


def test_a_lesson_that_asks_about_heads_opens_on_them():
    first = next(s for s in lessons()[0].steps if s.claims)  # after the why-attention step
    assert {(c.layer, c.head) for c in first.claims} >= {(3, 1)}
    assert (first.settings["layer"], first.settings["head"]) == ("3", "1")  # the head it asks about


def test_the_heads_the_examples_open_on_show_what_they_claim(minilm):
    from tformer.resources import examples
    from tformer.ui.caches import ModelChoice
    from tformer.ui.opening import named_opening

    _MODEL["minilm"] = minilm
    named = [(e, named_opening(ModelChoice("minilm"), e["text"])) for e in examples()]
    named = [(e, c) for e, c in named if c is not None]
    assert len(named) >= 2
    assert all((c.layer, c.head) != (0, 0) for _, c in named)
    for example, claim in named:
        value = measured(claim, example["text"])
        quoted = claim.weight if claim.weight is not None else claim.score
        assert abs(value - quoted) < 0.005, (example["label"], value)


@pytest.mark.parametrize(
    ("claim", "message"),
    [
        ({"layer": 3, "head": 1, "query": "it", "key": "animal"}, "a weight"),
        ({"layer": 3, "head": 1, "role": "previous"}, "with a score"),
        ({"layer": 3, "head": 1, "role": "sideways", "score": 0.5}, "with a score"),
        ({"layer": 99, "head": 1, "role": "previous", "score": 0.5}, "layer and head"),
        ({"layer": 3, "head": 1, "role": "previous", "score": 1.5}, "0..1"),
        ({"layer": 3, "head": 1, "role": "previous", "score": 0.5, "over": "everything"}, "over"),
        ({"layer": 3, "head": 1, "role": "previous", "score": 0.5, "colour": "red"}, "unknown"),
    ],
)
def test_a_broken_claim_is_refused_with_where(claim, message):
    with pytest.raises(ValueError, match=message):
        parse_lesson(lesson(step(claims=[claim])))
