"""What a question is computed from when it is shown, and the typed refusal when it cannot be.

A `QuestionContext` holds the view's capture (its text through its model), the view's layer,
head and query, and, for the few templates that run the model or read the training settings,
the model and the Train page's recipe and task. Templates read numpy arrays from the capture
and sizes from its config; they never store an answer.

`NotAvailable` says why a quantity cannot be computed here (the token is not in this text, the
layer does not exist after a shape edit, the model has no such part, the capture lacks an
activation) with a message for the reader; the UI offers to restore the step's settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..i18n import tr
from ..model.config import EncoderConfig
from ..training.recipe import Recipe
from ..training.tasks import TaskSpec
from .answers import normalize_label

if TYPE_CHECKING:
    from ..model.capture import TextCapture

__all__ = ["REASONS", "NotAvailable", "QuestionContext"]

# Why a question is not available: which part of the view would have to change back.
REASONS = ("token", "layer", "head", "activation", "model", "part", "engine")


class NotAvailable(Exception):
    """The question's quantity cannot be computed on this text or model. ``message`` is for
    the reader; ``reason`` (one of `REASONS`) and ``field`` (the spec parameter at fault, if
    one) let the UI offer the fix: restore the step's text, model or settings."""

    def __init__(self, message: str, reason: str, field: str | None = None) -> None:
        super().__init__(message)
        if reason not in REASONS:
            raise ValueError(f"reason {reason!r} is not one of {REASONS}")
        self.message, self.reason, self.field = message, reason, field


@dataclass(frozen=True, eq=False)
class QuestionContext:
    """The view a question is asked in.

    ``capture``: the view's text through the view's model, every layer, with at least the
    activations the template needs (`tformer.questions.registry.Template.needs`).
    ``layer``, ``head``, ``query``: the view's, used when a question's spec names none.
    ``model``: the `tformer.Encoder` itself, for templates that run it (positions off, INT8);
    None where the caller has none (those templates are then not available).
    ``recipe``, ``task``: the Train page's settings (None: their defaults).
    """

    capture: TextCapture = field(repr=False)
    layer: int = 0
    head: int = 0
    query: int | None = None
    model: Any = field(default=None, repr=False)
    recipe: Recipe | None = None
    task: TaskSpec | None = None

    @property
    def cfg(self) -> EncoderConfig:
        return self.capture.cfg

    @property
    def labels(self) -> list[str]:
        return self.capture.labels

    @property
    def n_pos(self) -> int:
        return self.capture.n_pos

    @property
    def training(self) -> Recipe:
        return self.recipe if self.recipe is not None else Recipe()

    @property
    def task_spec(self) -> TaskSpec:
        return self.task if self.task is not None else TaskSpec()

    def head_at(self, layer: int | None, head: int | None) -> tuple[int, int]:
        """The spec's layer and head, or the view's; `NotAvailable` beyond this model."""
        chosen_layer = self.layer if layer is None else layer
        chosen_head = self.head if head is None else head
        if not 0 <= chosen_layer < self.cfg.n_layers:
            raise NotAvailable(
                tr(
                    "layer {layer} does not exist: this model has {n} layers (0 to {last})",
                    layer=chosen_layer,
                    n=self.cfg.n_layers,
                    last=self.cfg.n_layers - 1,
                ),
                "layer",
                "layer",
            )
        if not 0 <= chosen_head < self.cfg.n_heads:
            raise NotAvailable(
                tr(
                    "head {head} does not exist: this model has {n} heads per layer (0 to {last})",
                    head=chosen_head,
                    n=self.cfg.n_heads,
                    last=self.cfg.n_heads - 1,
                ),
                "head",
                "head",
            )
        return chosen_layer, chosen_head

    def position(self, token: str | int | None, field: str = "query") -> int:
        """A position of this text: the spec's token (its text, the first position whose label
        reads the same, ignoring case, a word piece's ## and an unknown token's ?; or its
        position), else the view's query (for ``field="query"``)."""
        if token is None:
            if field == "query" and self.query is not None and 0 <= self.query < self.n_pos:
                return self.query
            raise NotAvailable(
                tr("this question needs a {field} token: pick one in the sentence", field=field),
                "token",
                field,
            )
        if isinstance(token, int):
            if 0 <= token < self.n_pos:
                return token
            raise NotAvailable(
                tr(
                    "position {pos} is beyond this text, which has {n} tokens (0 to {last})",
                    pos=token,
                    n=self.n_pos,
                    last=self.n_pos - 1,
                ),
                "token",
                field,
            )
        want = normalize_label(token)
        for i, label in enumerate(self.labels):
            if normalize_label(label) == want:
                return i
        raise NotAvailable(tr("the token {token} is not in this text", token=repr(token)), "token", field)

    def array(self, name: str, layer: int) -> np.ndarray:
        """Activation ``name`` of ``layer`` from the capture; `NotAvailable` if it was not captured."""
        try:
            return self.capture.at(name, layer)
        except KeyError:
            raise NotAvailable(
                tr("this view did not capture {name} for layer {layer}", name=name, layer=layer), "activation"
            ) from None

    def stacked(self, name: str) -> np.ndarray:
        """Activation ``name`` over every layer, [layer, ...]; `NotAvailable` if not all captured."""
        if name not in self.capture or self.capture.layers is not None:
            raise NotAvailable(
                tr("this view did not capture {name} for every layer", name=name), "activation"
            )
        return self.capture[name]

    def need_model(self) -> Any:
        """The model, for templates that run it; `NotAvailable` when the view passed none."""
        if self.model is None:
            raise NotAvailable(tr("this question runs the model, which this view did not provide"), "model")
        return self.model

    def attn_mask(self, layer: int, head: int) -> np.ndarray:
        """bool [query_pos, key_pos]: the cells the model let this head attend to (its causal
        mask, padding and any extra mask of the run), read off the scores' −∞."""
        return np.asarray(np.isfinite(self.array("attn_scores", layer)[head]))
