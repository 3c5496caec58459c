"""The question templates by name: each a small typed function with its declared parameters.

A template function takes the `QuestionContext` and its parameters as keyword arguments and
returns a `Question` computed now; `template` registers it with what a lesson file may set
(`Param`: type, range, choices, default). The spec check (`tformer.questions.spec`) reads the
declarations; a test holds each declaration to its function's signature.
"""

from __future__ import annotations

import importlib
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .answers import KINDS, Question
from .context import QuestionContext

__all__ = [
    "CONCEPTS",
    "HEAD",
    "LAYER",
    "PARAM_TYPES",
    "QUERY",
    "Param",
    "Template",
    "quoted",
    "template",
    "templates",
]

# The lesson order of the seed documents: concept key -> its name (a catalog template).
CONCEPTS: dict[str, str] = {
    "why": "Why attention",
    "qkv": "Q, K, V",
    "scaling": "Scaled dot product and √d_k",
    "masks": "Masks",
    "heads": "Multi-head attention",
    "positions": "Positional encoding",
    "ffn": "FFN, residual and LayerNorm",
    "encoder": "The whole encoder",
    "training": "Training",
    "efficiency": "Running it efficiently",
}

# "token": a token's text (str) or a position (int). "layer" and "head": an int in 0..63 (checked
# against the model when the question is shown).
PARAM_TYPES = ("int", "float", "bool", "choice", "token", "layer", "head")
REQUIRED = object()


@dataclass(frozen=True)
class Param:
    """One parameter a lesson may set: its type (`PARAM_TYPES`), bounds, choices, default, and a
    line of help. A parameter without a default is required."""

    name: str
    type: str
    help: str
    default: Any = None
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.type not in PARAM_TYPES:
            raise ValueError(f"param {self.name}: type {self.type!r} is not one of {PARAM_TYPES}")
        if (self.type == "choice") != bool(self.choices):
            raise ValueError(f"param {self.name}: a choice has choices, other types none")
        if self.low is not None and self.high is not None and not self.low <= self.high:
            raise ValueError(f"param {self.name}: low {self.low} > high {self.high}")

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class Template:
    name: str
    concept: str  # a key of CONCEPTS
    kind: str  # one of KINDS
    page: str  # the registry key of the page whose figure gives the answer away
    params: tuple[Param, ...]
    needs: tuple[str, ...]  # activations the capture must hold (short names, every layer)
    runs_model: bool  # True: needs QuestionContext.model and runs it (seconds on MiniLM)
    summary: str  # one line: the quantity asked
    fn: Callable[..., Question]
    also: tuple[str, ...] = ()  # other pages whose figures give the same answer away

    @property
    def pages(self) -> tuple[str, ...]:
        """Every page a lesson step may ask this template on: ``page`` first."""
        return (self.page, *self.also)

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    def __call__(self, ctx: QuestionContext, **params: Any) -> Question:
        return self.fn(ctx, **params)


# The parameters most templates share: a head, and a query named by its text or position.
LAYER = Param("layer", "layer", "the layer (default: the view's)")
HEAD = Param("head", "head", "the head (default: the view's)")
QUERY = Param("query", "token", "the query token: its text or its position (default: the view's query)")


def quoted(label: str) -> str:
    """A token as a question quotes it: in double quotes, as the lessons do ("it")."""
    return f'"{label}"'


_REGISTRY: dict[str, Template] = {}


def template(
    *,
    concept: str,
    kind: str,
    page: str,
    summary: str,
    params: tuple[Param, ...] = (),
    needs: tuple[str, ...] = (),
    runs_model: bool = False,
    also: tuple[str, ...] = (),
) -> Callable[[Callable[..., Question]], Callable[..., Question]]:
    """Register the decorated function as the template of its name."""
    if concept not in CONCEPTS or kind not in KINDS:
        raise ValueError(f"concept {concept!r} or kind {kind!r} is unknown")

    def register(fn: Callable[..., Question]) -> Callable[..., Question]:
        name = fn.__name__
        if name in _REGISTRY:
            raise ValueError(f"two templates are named {name!r}")
        _REGISTRY[name] = Template(name, concept, kind, page, params, needs, runs_model, summary, fn, also)
        return fn

    return register


_MODULES = ("attention", "blocks", "training", "efficiency")


def templates() -> dict[str, Template]:
    """Every template by name (importing the modules that define them, numpy only)."""
    for module in _MODULES:
        importlib.import_module(f"{__package__}.{module}")
    return dict(_REGISTRY)


def signature_problems(t: Template) -> list[str]:
    """Where a template's declared parameters and its function's keyword arguments differ."""
    sig = inspect.signature(t.fn)
    names = [n for n, p in sig.parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    declared = [p.name for p in t.params]
    problems = []
    if sorted(names) != sorted(declared):
        problems.append(f"{t.name}: function takes {names}, declared {declared}")
    for p in t.params:
        arg = sig.parameters.get(p.name)
        if arg is None:
            continue
        default = arg.default
        if p.required != (default is inspect.Parameter.empty):
            problems.append(f"{t.name}.{p.name}: required in one place only")
        elif (
            not p.required
            and default != p.default
            and not (
                isinstance(default, float)
                and isinstance(p.default, float)
                and math.isclose(default, p.default)
            )
        ):
            problems.append(f"{t.name}.{p.name}: default {default!r} vs declared {p.default!r}")
    return problems
