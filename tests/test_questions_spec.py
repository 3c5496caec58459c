"""A lesson's question spec is checked against its template: every problem names the step and
the field at fault. The registry holds its declarations to the functions, covers every concept
of the lesson order at least twice, and every string a question shows is translated."""

from __future__ import annotations

import ast
import string
from pathlib import Path

import pytest

from tformer.i18n import catalog, use_language
from tformer.model.capture import available_names, capture_text
from tformer.model.encoder import Encoder
from tformer.model.tokenizer import scratch_tokenizer
from tformer.questions import (
    CONCEPTS,
    KINDS,
    NotAvailable,
    QuestionContext,
    QuestionSpec,
    SpecError,
    ask,
    check_spec,
    parse_spec,
    templates,
)
from tformer.questions.registry import Param, Template, signature_problems

from ._i18n_check import english_words
from ._models import tiny

WHERE = "lesson attention-basics, step 2"


def errors(data) -> list[tuple[str, str]]:
    return [(e.field, e.message) for e in check_spec(data, WHERE)]


def test_a_valid_spec_parses():
    spec = parse_spec(
        {"template": "argmax_key", "kind": "token", "params": {"query": "it", "layer": 3}}, WHERE
    )
    assert spec == QuestionSpec("argmax_key", {"query": "it", "layer": 3})
    assert spec.kind == "token"
    assert spec.needs == ("pattern", "attn_scores")
    assert spec.from_view == ("head",)  # the step's settings or the learner choose the head


@pytest.mark.parametrize("name", sorted(templates()))
def test_every_template_parses_with_its_defaults(name):
    assert check_spec({"template": name}, WHERE) == []
    assert parse_spec({"template": name, "kind": templates()[name].kind}, WHERE).template == name


BAD = [
    ("not an object", "question", "JSON object"),
    ({"params": {}}, "question.template", "not a template"),
    ({"template": "argmax"}, "question.template", "'argmax' is not a template"),
    ({"template": 3}, "question.template", "not a template"),
    ({"template": "argmax_key", "answer": "animal"}, "question.answer", "not a known field"),
    ({"template": "argmax_key", "kind": "number"}, "question.kind", "is a token question"),
    ({"template": "argmax_key", "params": [3]}, "question.params", "JSON object"),
    ({"template": "argmax_key", "params": {"token": "it"}}, "question.params.token", "no such parameter"),
    ({"template": "argmax_key", "params": {"layer": "3"}}, "question.params.layer", "integer in 0..63"),
    ({"template": "argmax_key", "params": {"layer": 64}}, "question.params.layer", "integer in 0..63"),
    ({"template": "argmax_key", "params": {"head": True}}, "question.params.head", "integer"),
    (
        {"template": "argmax_key", "params": {"layer": None}},
        "question.params.layer",
        "leave the parameter out",
    ),
    ({"template": "argmax_key", "params": {"query": ""}}, "question.params.query", "non-empty"),
    ({"template": "argmax_key", "params": {"query": "a\nb"}}, "question.params.query", "printable"),
    ({"template": "argmax_key", "params": {"query": "x" * 41}}, "question.params.query", "at most 40"),
    ({"template": "argmax_key", "params": {"query": 5000}}, "question.params.query", "0..4095"),
    ({"template": "argmax_key", "params": {"query": 1.5}}, "question.params.query", "text or its position"),
    ({"template": "entropy_change", "params": {"tau": 0}}, "question.params.tau", "must be in 0.05..20.0"),
    ({"template": "entropy_change", "params": {"tau": "0.2"}}, "question.params.tau", "a number"),
    ({"template": "entropy_change", "params": {"tau": float("nan")}}, "question.params.tau", "a number"),
    ({"template": "entropy_change", "params": {"scaled": "yes"}}, "question.params.scaled", "true or false"),
    ({"template": "allowed_cells", "params": {"mask": "diagonal"}}, "question.params.mask", "one of"),
    ({"template": "allowed_cells", "params": {"window": 2.5}}, "question.params.window", "an integer"),
    ({"template": "allowed_cells", "params": {"window": -1}}, "question.params.window", "must be in 0..512"),
    ({"template": "warmup_lr", "params": {"step": 0}}, "question.params.step", "must be in 1..1000000"),
    ({"template": "n_params", "params": {"group": "W_X"}}, "question.params.group", "one of"),
    ({"template": "argmax_key", "tolerance": {"abs": 0.1}}, "question.tolerance", "only number questions"),
    ({"template": "pe_value", "tolerance": 0.1}, "question.tolerance", '"abs" and/or "rel"'),
    (
        {"template": "pe_value", "tolerance": {"abs": 0.1, "max": 1}},
        "question.tolerance",
        '"abs" and/or "rel"',
    ),
    ({"template": "pe_value", "tolerance": {"abs": -0.1}}, "question.tolerance.abs", "0..inf"),
    ({"template": "pe_value", "tolerance": {"rel": 0.9}}, "question.tolerance.rel", "0..0.5"),
]


@pytest.mark.parametrize(("data", "field", "message"), BAD, ids=[f"{i}-{b[1]}" for i, b in enumerate(BAD)])
def test_a_bad_spec_names_the_step_and_the_field(data, field, message):
    found = check_spec(data, WHERE)
    assert [e.field for e in found] == [field], found
    assert message in found[0].message
    with pytest.raises(SpecError) as err:
        parse_spec(data, WHERE)
    assert str(err.value).startswith(f"{WHERE}, {field}: ")


def test_every_problem_of_a_spec_is_reported_at_once():
    found = errors({"template": "masked_weight", "kind": "token", "extra": 1,
                    "params": {"mask": "none", "window": 999, "colour": "red"}})  # fmt: skip
    assert [f for f, _ in found] == [
        "question.extra",
        "question.kind",
        "question.params.colour",
        "question.params.mask",
        "question.params.window",
    ]


def test_a_required_parameter_must_be_given():
    from tformer.questions import registry

    t = Template("needs_x", "why", "number", "costs", (Param("x", "int", "x", registry.REQUIRED, 0, 9),), (), False, "", lambda ctx, *, x: None)  # type: ignore[arg-type, return-value]  # fmt: skip
    registry._REGISTRY["needs_x"] = t
    try:
        assert errors({"template": "needs_x"}) == [("question.params.x", "is required")]
        assert errors({"template": "needs_x", "params": {"x": 3}}) == []
    finally:
        del registry._REGISTRY["needs_x"]


# --- the registry ---------------------------------------------------------------------------


def test_each_templates_declaration_matches_its_function():
    assert [p for t in templates().values() for p in signature_problems(t)] == []


def test_the_signature_check_finds_a_mismatch():
    t = templates()["argmax_key"]
    wrong = Template(t.name, t.concept, t.kind, t.page, t.params[:2], t.needs, False, t.summary, t.fn)
    assert signature_problems(wrong)
    default = Template(t.name, t.concept, t.kind, t.page, (Param("layer", "layer", "", 1), *t.params[1:]), t.needs, False, t.summary, t.fn)  # fmt: skip
    assert signature_problems(default) == ["argmax_key.layer: default None vs declared 1"]


def test_every_concept_of_the_lesson_order_has_at_least_two_templates():
    by_concept = {c: [n for n, t in templates().items() if t.concept == c] for c in CONCEPTS}
    assert all(len(names) >= 2 for names in by_concept.values()), by_concept
    assert {t.kind for t in templates().values()} == set(KINDS)


def test_every_template_names_a_page_of_the_app():
    from tformer.ui.registry import PAGES

    keys = {p.key for p in PAGES}
    assert {n: t.page for n, t in templates().items() if t.page not in keys} == {}


# --- translations ---------------------------------------------------------------------------

PACKAGE = Path(__file__).resolve().parent.parent / "tformer" / "questions"


def literal_templates() -> list[str]:
    found = []
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "tr":
                arg = node.args[0]
                assert isinstance(arg, ast.Constant), (path.name, ast.dump(arg))
                assert isinstance(arg.value, str), (path.name, ast.dump(arg))
                found.append(arg.value)
    return found


def fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_every_string_a_question_shows_is_translated_with_the_same_fields():
    zh = catalog("zh")
    found = literal_templates()
    assert len(found) > 150
    assert [t for t in found if t not in zh] == []
    assert [t for t in found if fields(zh[t]) != fields(t)] == []


TOK = scratch_tokenizer(max_len=64)


@pytest.fixture(scope="module")
def ctx():
    model = Encoder(tiny(vocab_size=TOK.vocab_size)).eval()
    cap = capture_text(
        model, TOK, "the cat sat on the mat because the cat was tired", available_names(model.cfg)
    )
    return QuestionContext(cap, layer=1, head=1, query=2, model=model)


def shown_strings(question) -> list[str]:
    out = [question.prompt, question.explanation, question.hint, question.expected]
    out += [label for _, label in question.options] + ([question.tolerance] if question.tolerance else [])
    return out


@pytest.mark.parametrize("name", sorted(templates()))
def test_a_question_in_chinese_leaves_no_english(ctx, name):
    with use_language("zh"):
        question = ask(parse_spec({"template": name}, WHERE), ctx)
        wrong = {"token": 0, "number": "12345", "choice": question.options[-1][0] if question.options else ""}
        grade = question.grade(wrong.get(question.kind, "higher"))
        strings = shown_strings(question) + [grade.verdict] + ([grade.hint] if grade.hint else [])
    assert english_words(strings, tokens=ctx.labels) == {}


def test_not_available_speaks_chinese(ctx):
    with use_language("zh"), pytest.raises(NotAvailable) as err:
        ask(parse_spec({"template": "argmax_key", "params": {"layer": 5}}, WHERE), ctx)
    assert err.value.message == "第 5 层不存在：这个模型有 2 层（0 到 1）"
