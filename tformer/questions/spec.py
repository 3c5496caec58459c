"""A question as a lesson step writes it, checked against its template, and asked.

See the package docstring (`tformer.questions`) for the format. `check_spec` returns every
problem of one spec as a `SpecError` naming the step and the field at fault; `parse_spec`
raises the first; `ask` computes the `Question` on the current view (or raises `NotAvailable`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .answers import NumberAnswer, Question, Tolerance
from .context import QuestionContext
from .registry import Param, Template, templates

__all__ = ["MAX_TOKEN_CHARS", "QuestionSpec", "SpecError", "ask", "check_spec", "parse_spec"]

SPEC_KEYS = ("template", "kind", "params", "tolerance")
MAX_TOKEN_CHARS = 40
MAX_POSITION = 4095
MAX_INDEX = 63  # layers and heads, as the lesson claims bound them


class SpecError(ValueError):
    """One problem of a lesson's question: ``where`` (the lesson and step), ``field`` (the path
    inside the step, e.g. ``question.params.tau``) and what is wrong."""

    def __init__(self, where: str, field: str, message: str) -> None:
        super().__init__(f"{where}, {field}: {message}")
        self.where, self.field, self.message = where, field, message


@dataclass(frozen=True)
class QuestionSpec:
    """A checked question of a lesson step: its template, parameters and tolerance override."""

    template: str
    params: Mapping[str, Any] = field(default_factory=dict)
    tolerance: Tolerance | None = None

    @property
    def info(self) -> Template:
        return templates()[self.template]

    @property
    def kind(self) -> str:
        return self.info.kind

    @property
    def needs(self) -> tuple[str, ...]:
        """The activations the view's capture must hold (short names, every layer)."""
        return self.info.needs

    @property
    def from_view(self) -> tuple[str, ...]:
        """The template's layer, head and query parameters this spec leaves to the view: the
        step's settings (or the learner) choose them, so a lesson check can require them."""
        return tuple(
            p.name
            for p in self.info.params
            if (p.type in ("layer", "head") or p.name == "query") and p.name not in self.params
        )


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_value(p: Param, value: Any) -> str | None:
    """What is wrong with ``value`` for parameter ``p`` (None: nothing)."""
    if value is None:
        return "null is not a value: leave the parameter out to use its default"
    if p.type in ("layer", "head"):
        if not (_is_int(value) and 0 <= value <= MAX_INDEX):
            return f"must be an integer in 0..{MAX_INDEX}, got {value!r}"
    elif p.type == "token":
        if _is_int(value):
            if not 0 <= value <= MAX_POSITION:
                return f"a position must be in 0..{MAX_POSITION}, got {value}"
        elif isinstance(value, str):
            if not value.strip() or len(value) > MAX_TOKEN_CHARS or not value.isprintable():
                return f"a token is a non-empty printable text of at most {MAX_TOKEN_CHARS} characters, got {value[:50]!r}"
        else:
            return f"must be a token's text or its position, got {value!r}"
    elif p.type == "choice":
        if value not in p.choices:
            return f"must be one of {list(p.choices)}, got {value!r}"
    elif p.type == "bool":
        if not isinstance(value, bool):
            return f"must be true or false, got {value!r}"
    else:
        ok = (
            _is_int(value)
            if p.type == "int"
            else isinstance(value, (int, float)) and not isinstance(value, bool)
        )
        if not ok or not math.isfinite(value):
            return f"must be {'an integer' if p.type == 'int' else 'a number'}, got {value!r}"
        if (p.low is not None and value < p.low) or (p.high is not None and value > p.high):
            return f"must be in {p.low}..{p.high}, got {value!r}"
    return None


def _check_tolerance(data: Any, kind: str, where: str) -> tuple[Tolerance | None, list[SpecError]]:
    f = "question.tolerance"
    if kind != "number":
        return None, [
            SpecError(where, f, f"only number questions have a tolerance (this one is a {kind} question)")
        ]
    if not isinstance(data, dict) or not data or set(data) - {"abs", "rel"}:
        return None, [SpecError(where, f, 'is an object with "abs" and/or "rel", e.g. {"abs": 0.05}')]
    errors = []
    for key, high in (("abs", math.inf), ("rel", 0.5)):
        v = data.get(key, 0.0)
        if not (
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= high
        ):
            errors.append(SpecError(where, f"{f}.{key}", f"must be a number in 0..{high:g}, got {v!r}"))
    if errors:
        return None, errors
    return Tolerance(abs=float(data.get("abs", 0.0)), rel=float(data.get("rel", 0.0))), []


def check_spec(data: Any, where: str) -> list[SpecError]:
    """Every problem of one step's ``"question"`` object (empty: it is valid)."""
    return _parse(data, where)[1]


def parse_spec(data: Any, where: str) -> QuestionSpec:
    """One step's ``"question"`` object as a `QuestionSpec`; the first `SpecError` otherwise."""
    spec, errors = _parse(data, where)
    if errors:
        raise errors[0]
    assert spec is not None
    return spec


def _parse(data: Any, where: str) -> tuple[QuestionSpec | None, list[SpecError]]:
    if not isinstance(data, dict):
        return None, [SpecError(where, "question", "is a JSON object with a template")]
    errors = [
        SpecError(where, f"question.{k}", f"is not a known field; known: {list(SPEC_KEYS)}")
        for k in data
        if k not in SPEC_KEYS
    ]
    registry = templates()
    name = data.get("template")
    if name not in registry:
        shown = name if isinstance(name, str) else repr(name)
        errors.append(
            SpecError(where, "question.template", f"{shown!r} is not a template; known: {sorted(registry)}")
        )
        return None, errors
    t = registry[name]
    if "kind" in data and data["kind"] != t.kind:
        errors.append(
            SpecError(
                where,
                "question.kind",
                f"{data['kind']!r} does not match the template: {name} is a {t.kind} question",
            )
        )
    params = data.get("params", {})
    if not isinstance(params, dict):
        errors.append(SpecError(where, "question.params", "is a JSON object of the template's parameters"))
        params = {}
    known = {p.name for p in t.params}
    errors.extend(
        SpecError(
            where,
            f"question.params.{key}",
            f"{name} has no such parameter; it takes {sorted(known) or 'none'}",
        )
        for key in params
        if key not in known
    )
    for p in t.params:
        if p.name in params:
            problem = _check_value(p, params[p.name])
            if problem:
                errors.append(SpecError(where, f"question.params.{p.name}", problem))
        elif p.required:
            errors.append(SpecError(where, f"question.params.{p.name}", "is required"))
    tolerance = None
    if "tolerance" in data:
        tolerance, problems = _check_tolerance(data["tolerance"], t.kind, where)
        errors += problems
    if errors:
        return None, errors
    return QuestionSpec(name, {k: params[k] for k in params}, tolerance), []


def ask(spec: QuestionSpec, ctx: QuestionContext) -> Question:
    """The question computed now on ``ctx``; raises `NotAvailable` when this text or model
    cannot give its quantity (the message says why)."""
    question = spec.info(ctx, **dict(spec.params))
    if spec.tolerance is not None and isinstance(question.answer, NumberAnswer):
        question = replace(question, answer=replace(question.answer, tolerance=spec.tolerance))
    return question
