r"""The seeds' last step, "Linear -> Softmax -> Output": scores, probabilities, the top tokens.

.. math::
    \mathrm{logits} = \mathrm{Linear}(h_i), \qquad
    p = \mathrm{softmax}(\mathrm{logits} / T), \qquad
    \mathrm{output} = \text{the tokens with the largest } p

For a model with an output head: GPT-2's tied LM head (position i's scores are for the token at
i + 1), a masked-LM head of a BERT-family checkpoint (position i's scores are for the token at
i, usually a ``[MASK]``), or the task head of a from-scratch encoder (one class per position).
`generate_greedy` appends, for a causal LM, the most likely next token a few times, keeping each
step's attention of the position that predicted it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..i18n import tr
from .encoder import Encoder, Ids
from .hooks import HookFn, HookPoint, act_name
from .tokenizer import Tokenizer, visible_label

__all__ = [
    "MAX_NEW_TOKENS",
    "MAX_TOP_K",
    "Generation",
    "Prediction",
    "generate_greedy",
    "has_output_head",
    "output_head_kind",
    "output_logits",
    "predict",
    "softmax_with_temperature",
    "top_k",
]

MAX_NEW_TOKENS = 32  # each step reruns the whole text: a few tokens show the idea
MAX_TOP_K = 100
# Below this the softmax is a hard argmax in float32; above it the distribution is flat.
MIN_TEMPERATURE, MAX_TEMPERATURE = 0.01, 100.0


def output_head_kind(model: Encoder) -> str | None:
    """``"lm"`` (scores over the vocabulary), ``"task"`` (the task head's classes) or None."""
    if model.lm_head is not None:
        return "lm"
    if model.head is not None:
        return "task"
    return None


def has_output_head(model: Encoder) -> bool:
    return output_head_kind(model) is not None


def output_logits(model: Encoder, ids: Ids, attention_mask: Ids | None = None) -> torch.Tensor:
    """The output head's scores before the softmax: [batch, pos, n_outputs or vocab]."""
    with torch.inference_mode():
        if model.lm_head is not None:
            hidden = model.hidden(ids, attention_mask)  # [batch, pos, d_model]
            logits: torch.Tensor = model.lm_head(hidden, model.embed.weight)  # [batch, pos, vocab]
            return logits
        if model.head is not None:
            return model.logits(ids, attention_mask)  # [batch, pos, n_outputs]
    raise ValueError(tr("this model has no output head, so it predicts no tokens"))


def _check_temperature(temperature: float) -> float:
    t = float(temperature)
    if not (math.isfinite(t) and MIN_TEMPERATURE <= t <= MAX_TEMPERATURE):
        raise ValueError(
            tr(
                "temperature={value} must be between {lo} and {hi}",
                value=repr(temperature),
                lo=MIN_TEMPERATURE,
                hi=MAX_TEMPERATURE,
            )
        )
    return t


def softmax_with_temperature(logits: torch.Tensor | np.ndarray, temperature: float = 1.0) -> np.ndarray:
    r""":math:`p_j = e^{z_j/T} / \sum_k e^{z_k/T}` over the last axis, in float64 (small
    probabilities of a 50,000-token vocabulary stay exact). T < 1 sharpens, T > 1 flattens."""
    t = _check_temperature(temperature)
    z = torch.as_tensor(np.asarray(logits), dtype=torch.float64) / t
    return torch.softmax(z, dim=-1).numpy()


def top_k(probs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest entries of a [n] vector: (ids, values), largest first; ties by id."""
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_TOP_K:
        raise ValueError(tr("k={value} must be an integer from 1 to {hi}", value=repr(k), hi=MAX_TOP_K))
    p = np.asarray(probs)
    order = np.lexsort((np.arange(p.shape[-1]), -p))[: min(k, p.shape[-1])]  # stable: equal p by id
    return order, p[order]


def token_label(tokenizer: Tokenizer, token_id: int) -> str:
    """How a predicted token reads: its text (GPT-2's "Ġthe" reads " the", shown "␣the"); a
    byte-level piece of a character (which decodes to "\ufffd" alone) reads as its vocabulary entry."""
    text = tokenizer.backend.decode([int(token_id)], skip_special_tokens=False)
    if text and "\ufffd" not in text:
        return visible_label(text)
    return tokenizer.id_to_token(int(token_id)) or str(token_id)


@dataclass(frozen=True)
class Prediction:
    """What the output head says at one position of one text."""

    position: int
    predicts_next: bool  # True: the scores are for the token at position + 1 (a causal LM)
    temperature: float
    logits: np.ndarray  # [n_outputs] before the softmax, float32
    probs: np.ndarray  # [n_outputs] softmax(logits / temperature), float64
    top_ids: tuple[int, ...]
    top_labels: tuple[str, ...]
    top_probs: tuple[float, ...]


def predict(
    model: Encoder,
    tokenizer: Tokenizer,
    text: str,
    position: int,
    temperature: float = 1.0,
    k: int = 10,
    labels: Sequence[str] | None = None,
) -> Prediction:
    r"""Logits, softmax(logits / T) and the top ``k`` outputs at ``position`` of ``text``.

    .. math::
        z = \mathrm{Linear}(h_i), \qquad p_j = \frac{e^{z_j / T}}{\sum_k e^{z_k / T}}, \qquad
        \mathrm{output} = \operatorname{top}_k(p)

    ``labels`` names the task head's classes (default: the tokenizer's tokens, for LM heads).
    Negative positions count from the end (-1: the last token).
    """
    t = _check_temperature(temperature)
    ids = tokenizer.encode(text).ids
    if not -len(ids) <= position < len(ids):
        raise ValueError(
            tr("position={position} is outside the text's {n} tokens", position=position, n=len(ids))
        )
    pos = position % len(ids)
    logits = output_logits(model, [ids])[0, pos].float().cpu().numpy()  # [n_outputs]
    probs = softmax_with_temperature(logits, t)
    top, values = top_k(probs, k)
    if labels is not None and len(labels) != logits.shape[0]:
        raise ValueError(tr("{n} labels given for {m} outputs", n=len(labels), m=logits.shape[0]))
    names = [labels[i] if labels is not None else token_label(tokenizer, int(i)) for i in top]
    return Prediction(
        position=pos,
        predicts_next=model.cfg.causal and model.lm_head is not None,
        temperature=t,
        logits=logits,
        probs=probs,
        top_ids=tuple(int(i) for i in top),
        top_labels=tuple(names),
        top_probs=tuple(float(v) for v in values),
    )


@dataclass(frozen=True)
class Generation:
    """Greedy continuation of a prompt: each new token, its probability and attention.

    ``attention[s]`` is step s's pattern of the last position (the one whose scores chose
    token s) over every position before the new token: [layer, head_index, key_pos] with
    ``key_pos = len(prompt_ids) + s``.
    """

    prompt_ids: tuple[int, ...]
    new_ids: tuple[int, ...]
    new_labels: tuple[str, ...]
    new_probs: tuple[float, ...]  # softmax at T = 1 of the chosen token
    attention: tuple[np.ndarray, ...]  # [layer, head_index, key_pos] per step
    stopped_at_max_len: bool  # the model's max_len ended generation early


def generate_greedy(model: Encoder, tokenizer: Tokenizer, text: str, n_new: int = 5) -> Generation:
    """Append the argmax token ``n_new`` times (a causal LM only); no cache, so every step is
    the same full forward pass the other views capture, run through the explicit attention."""
    if not (model.cfg.causal and model.lm_head is not None):
        raise ValueError(tr("greedy generation needs a causal model with an LM head, such as GPT-2"))
    if not isinstance(n_new, int) or isinstance(n_new, bool) or not 1 <= n_new <= MAX_NEW_TOKENS:
        raise ValueError(
            tr("n_new={value} must be an integer from 1 to {hi}", value=repr(n_new), hi=MAX_NEW_TOKENS)
        )
    ids = list(tokenizer.encode(text).ids)
    if not ids:
        raise ValueError(tr("the tokenizer produced no tokens"))
    prompt = tuple(ids)
    new_ids: list[int] = []
    probs: list[float] = []
    attention: list[np.ndarray] = []
    while len(new_ids) < n_new and len(ids) < model.cfg.max_len:
        logits, rows = _step(model, ids)
        p = softmax_with_temperature(logits, 1.0)
        nxt = int(np.argmax(p))  # the first of equal maxima, as torch.argmax and transformers
        new_ids.append(nxt)
        probs.append(float(p[nxt]))
        attention.append(rows)
        ids.append(nxt)
    return Generation(
        prompt_ids=prompt,
        new_ids=tuple(new_ids),
        new_labels=tuple(token_label(tokenizer, i) for i in new_ids),
        new_probs=tuple(probs),
        attention=tuple(attention),
        stopped_at_max_len=len(new_ids) < n_new,
    )


def _step(model: Encoder, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Last position's logits [vocab] and its attention rows [layer, head_index, key_pos]."""
    n_layers = model.cfg.n_layers
    rows = np.empty((n_layers, model.cfg.n_heads, len(ids)), np.float32)

    def keep(layer: int) -> HookFn:
        def hook(pattern: torch.Tensor, hook: HookPoint) -> None:
            rows[layer] = pattern[0, :, -1, :].float().cpu().numpy()  # [head_index, key_pos]

        return hook

    hooks = [(act_name("pattern", layer), keep(layer)) for layer in range(n_layers)]
    with torch.inference_mode(), model.hooks(hooks):  # hooked: the explicit attention path
        logits = output_logits(model, [ids])[0, -1]  # [vocab]
    return logits.float().cpu().numpy(), rows
