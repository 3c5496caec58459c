"""How the step-by-step page draws one step: the step bar, the formula, the shape in words, what
the step does, its tensor with the query's row outlined, the check against the model's hook,
and the code. Long texts and wide tensors show a window of 16 rows and columns around the query
(with every number) unless the user asks for everything."""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import streamlit as st

from ....analysis.walkthrough import Step
from ....figures.layout import FULL_WIDTH
from ....figures.walkthrough import row_bars, step_heatmap
from ....formulas import latex_of, localized
from ....i18n import tr
from ....model.config import EncoderConfig
from ...binding import bind, set_values, view
from ...charts import chart
from ...guard import plain
from ...lesson_mode import in_lesson
from .notes import note, short
from .walk import Walk

WINDOW = 16  # rows and columns with their numbers: readable on a projector
# The score steps also get the query's whole row as bars.
ROW_STEPS = ("raw", "scale", "mask", "softmax")
# Axis titles by axis name (English; translated where drawn).
AXIS_WORDS = {
    "pos": "token",
    "query_pos": "query token",
    "key_pos": "key token",
    "d_model": "dimension (d_model)",
    "d_head": "dimension (d_head)",
    "d_mlp": "hidden unit (d_ff)",
}
# The zoom switch's labels: templates, shown as ``tr(ZOOMS[z], w=WINDOW)``.
ZOOMS = {"window": "{w} × {w} window, with numbers", "all": "everything"}


def axis_word(axis: str) -> str:
    """An axis name (``query_pos``, ``d_head``...) in words, in the interface's language."""
    return tr(AXIS_WORDS[axis]) if axis in AXIS_WORDS else axis


def window(n: int, center: int, size: int = WINDOW) -> range:
    """``size`` consecutive indices of ``0..n-1`` around ``center`` (all of them when n <= size)."""
    if n <= size:
        return range(n)
    start = min(max(center - size // 2, 0), n - size)
    return range(start, start + size)


def dim_window(d: int, start: int, size: int = WINDOW) -> range:
    if d <= size:
        return range(d)
    start = min(max(start, 0), d - size)
    return range(start, start + size)


# A step title that is a formula of weights (Q = XW_Q, W_O, W_1): set as math.
_WEIGHT_FORMULA = re.compile(r"[A-Za-z0-9 =+]*_[A-Za-z0-9]+[A-Za-z0-9_ =+]*")


def step_title(step: Step) -> str:
    """A step's title in the interface's language; a title that is a formula of weights
    (``Q = XW_Q``, ``W_O``) is set as inline math, so that its subscript is not shown as an
    underscore (``√d_k`` stays as the app writes it everywhere)."""
    title = tr(step.title)
    return f"${title}$" if _WEIGHT_FORMULA.fullmatch(title) else title


def shape_words(step: Step) -> str:
    """``[query_pos × key_pos] = 16 × 16``."""
    rows, cols = step.axes
    n, m = step.value.shape
    return f"[{rows} × {cols}] = {n} × {m}"


def step_bar(walk: Walk) -> int:
    """The step bar (every step of the layer, in order) with previous / next; the index chosen.
    In a lesson the lesson bar's Previous / Next are the only ones (two "Next" buttons on one
    projected page leave a class guessing which one the teacher means): the pills remain."""
    keys = [s.key for s in walk.steps]
    current = view().get("steps.step")
    i = keys.index(current) if current in keys else keys.index("q") if "q" in keys else 0
    # labels made here, in the session's language (a format_func may be called outside the run)
    shown = {k: f"{n} {short(k)}" for n, k in enumerate(keys, 1)}
    if in_lesson():
        return _step_pills(keys, shown, i)
    # One row that does not wrap: the buttons as wide as their labels in any language (fixed
    # columns cut "◀ 上一步" to "◀ 上…"), the pills take the rest and wrap inside it.
    row = st.container(horizontal=True, wrap=False, vertical_alignment="center", key="step_bar")
    row.button(
        tr("◀ back"), key="steps.prev", on_click=set_values, kwargs={"steps.step": keys[max(i - 1, 0)]},
        disabled=i == 0, width="content",
    )  # fmt: skip
    with row.container(width="stretch"):
        picked = _step_pills(keys, shown, i)
    row.button(
        tr("next ▶"), key="steps.next", on_click=set_values, kwargs={"steps.step": keys[min(i + 1, len(keys) - 1)]},
        disabled=i == len(keys) - 1, width="content",
    )  # fmt: skip
    return picked


def _step_pills(keys: list[str], shown: dict[str, str], i: int) -> int:
    picked = st.pills(
        tr("step"),
        keys,
        required=True,
        wrap=True,
        format_func=shown.__getitem__,
        label_visibility="collapsed",
        **bind("steps.step", keys, fallback=keys[i]),
    )
    return keys.index(picked) if picked in keys else i


def step_facts(
    cfg: EncoderConfig, walk: Walk, layer: int, head: int, query: int, labels: Sequence[str]
) -> dict[str, Any]:
    """The live numbers the step notes quote."""
    by_key = {s.key: s for s in walk.steps}
    n = len(labels)
    q = tr("“{token}” (position {i})", token=plain(labels[query], 24), i=query)
    f: dict[str, Any] = {
        "n": n, "d_model": cfg.d_model, "d_head": cfg.d_head, "d_ff": cfg.d_mlp, "heads": cfg.n_heads,
        "head": head, "layer": layer, "act": cfg.activation, "norm": cfg.norm, "query": q,
        "vocab": f"{cfg.vocab_size:,}", "head_from": head * cfg.d_head, "head_to": (head + 1) * cfg.d_head - 1,
    }  # fmt: skip
    f["positions"] = {
        "sinusoidal": tr("fixed sinusoids, PE(pos, 2i) = sin(pos / 10000^(2i/d)) and cos for 2i+1"),
        "learned": tr("a learned vector for each of the first {max_len} positions", max_len=cfg.max_len),
        "none": tr("none here (`pos_encoding = none`): this model cannot tell word order"),
    }[cfg.pos_encoding]
    f["input"] = (
        tr("X, what layer {layer} reads: the output of layer {previous}.", layer=layer, previous=layer - 1)
        if layer > 0
        else tr("X = token embedding + position: what layer 0 reads.")
    )
    masked = int(np.isneginf(by_key["mask"].value).sum())
    f["mask"] = (
        tr(
            "This model is causal: a query may not see the keys after it, so {masked} of the {total} "
            "scores become −∞.",
            masked=masked,
            total=n * n,
        )
        if cfg.causal
        else tr(
            "Nothing is masked: this model reads in both directions and one text has no padding, "
            "so the scores pass unchanged. (A causal model would set every score above the diagonal to −∞.)"
        )
    )
    row = by_key["softmax"].value[query]
    top = int(np.argmax(row))
    f["top_share"] = float(row[top])
    f["top_key"] = tr("“{token}” (position {i})", token=plain(labels[top], 24), i=top)
    f["zero_share"] = float((np.abs(by_key["act"].value) < 1e-2).mean())
    return f


def _labels(labels: Sequence[str], idx: range, numbered: bool) -> list[str]:
    return [f"{i} {labels[i]}" if numbered else labels[i] for i in idx]


def show_step(
    walk: Walk, index: int, labels: Sequence[str], query: int, facts: dict[str, Any], *, zoom: str, dim: int
) -> None:
    """Draw step ``index`` of ``walk`` for the query token ``query``."""
    step = walk.steps[index]
    n_steps = len(walk.steps)
    st.subheader(tr("Step {i} of {n}: {title}", i=index + 1, n=n_steps, title=step_title(step)))
    st.latex(localized(latex_of(step.fn)))
    extra = {}
    if "mean" in step.extra:
        extra = {"mu": float(step.extra["mean"][query, 0]), "sigma": float(step.extra["scale"][query, 0])}
    st.markdown(f"**{shape_words(step)}**. " + note(step.key, {**facts, **extra}))

    value = step.value
    n, m = value.shape
    row_axis, col_axis = step.axes
    keys_across = col_axis == "key_pos"
    if zoom == "window":
        rows = window(n, query)
        cols = window(m, query) if keys_across else dim_window(m, dim)
    else:
        rows, cols = range(n), range(m)
    numbers = len(rows) <= WINDOW and len(cols) <= WINDOW
    part = value[rows.start : rows.stop, cols.start : cols.stop]
    numbered = len(rows) < n
    col_labels = _labels(labels, cols, len(cols) < m) if keys_across else [str(j) for j in cols]
    chart(
        step_heatmap(
            part,
            _labels(labels, rows, numbered),
            col_labels,
            highlight=query - rows.start if query in rows else None,
            numbers=numbers,
            weights=step.key == "softmax",
            row_title=axis_word(row_axis),
            col_title=axis_word(col_axis),
            width=FULL_WIDTH,  # the page's whole width: the larger the cells, the larger the numbers
        ),
        key="step_tensor",
    )
    if len(rows) < n or len(cols) < m:
        st.caption(
            tr(
                "Rows {r0}–{r1} of {n} and columns {c0}–{c1} of {m} are shown. Show everything with "
                "the switch above, or move the window with the query token or the first dimension.",
                r0=rows.start,
                r1=rows.stop - 1,
                n=n,
                c0=cols.start,
                c1=cols.stop - 1,
                m=m,
            )
        )
    if step.key in ROW_STEPS:
        weights = step.key == "softmax"
        chart(
            row_bars(
                value[query],
                list(labels),
                numbers=n <= WINDOW,
                weights=weights,
                value_title=tr("weight") if weights else tr("score"),
                title=(
                    tr("row {i}: every key's weight", i=query)
                    if weights
                    else tr("row {i}: every key's score", i=query)
                ),
            ),
            key="step_row",
        )
    for check in walk.checks.get(step.key, ()):
        ok = check.max_diff <= 1e-4
        template = (
            "✓ equals the model's own `{hook}` (largest difference {diff})"
            if ok
            else "✗ differs from the model's own `{hook}` (largest difference {diff})"
        )
        st.caption(tr(template, hook=check.hook, diff=f"{check.max_diff:.1e}"))
    with st.expander(tr("The code that computed it")):
        st.code(inspect.getsource(step.fn), language="python")
