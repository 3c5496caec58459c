"""What a page that shows a text gets: the frame drawn, the capture of the activations it asked
for, the chosen head; and the helpers every such page shares."""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import streamlit as st

from ..figures.attention import Kind
from ..figures.colors import WEIGHT_SCALE_NAMES
from ..figures.overview import head_grid_data
from ..formulas import latex_of, localized
from ..i18n import tr
from ..model.capture import ATTENTION, TextCapture, available_names, normalize_names
from ..model.config import EncoderConfig
from ..model.encoder import Encoder
from ..model.tokenizer import UNK_MARK, Encoded, Tokenizer
from .binding import bind, pop_link_asks, set_values, view
from .caches import (
    SCRATCH_MAX_LEN,
    ModelChoice,
    check_capture,
    checked_capture,
    encode_text,
    get_capture,
    get_model,
)
from .guard import plain
from .head_grid import head_grid
from .lesson_questions import figure_hidden
from .opening import chosen_head
from .page_frame import Frame, draw_frame
from .state import ViewState


@st.cache_data(max_entries=16, show_spinner=False)
def row_focus(choice: ModelChoice, text: str, names: tuple[str, ...]) -> tuple[float, float]:
    """Mean of each row's largest weight over every head, and what spreading evenly over the
    allowed keys would give: (focus, even). Once per text, not on every rerun."""
    p = get_capture(choice, text, names).pattern  # [layer, head_index, query_pos, key_pos]
    # keys each row may attend to, counted in int32 (a sum of booleans counts in int64, slower)
    allowed = np.maximum(np.add.reduce(p > 0, axis=-1, dtype=np.int32), 1)
    return float(p.max(-1).mean()), float((1 / allowed).mean())


@dataclass(frozen=True)
class PageContext:
    frame: Frame
    choice: ModelChoice
    model: Encoder
    # the text this page shows: the sidebar's, or its first tokens on a page with a
    # ``max_tokens`` (`tformer.ui.registry.PageSpec`)
    text: str
    encoded: Encoded  # ``text`` tokenized by the model's tokenizer
    names: tuple[str, ...]  # what `capture` holds (normalized, `normalize_names`)
    layers: tuple[int, ...] | None  # the layers `capture`'s per-layer names hold (None: all)
    stored: int  # the bytes `capture` keeps, from the memory guard open_page ran

    @cached_property
    def capture(self) -> TextCapture:
        """The activations ``names`` of the text, run on first use: a page whose view reads none
        (the sinusoid table, the architecture drawing) runs no forward pass on a text edit.
        open_page has run the memory guard (`check_capture`); a model that fails to run stops the
        page with the message open_page gives."""
        try:
            return checked_capture(self.choice, self.text, self.names, self.layers, self.stored)
        except (ValueError, MemoryError, RuntimeError) as err:
            st.error(tr("Could not run {model}: {err}", model=self.choice.label, err=err))
            st.stop()

    @property
    def view(self) -> ViewState:
        return self.frame.view

    @property
    def cfg(self) -> EncoderConfig:
        return self.model.cfg

    @property
    def labels(self) -> list[str]:
        return self.encoded.labels

    @property
    def n_pos(self) -> int:
        return len(self.encoded.ids)

    def chosen(self) -> tuple[int, int]:
        """The layer and head shown: the user's, else the one this model and text open on
        (`tformer.ui.opening`)."""
        return chosen_head(self.choice, self.text, self.cfg.n_layers, self.cfg.n_heads)


def open_page(script: str, names: Iterable[str] | None = None, *, one_layer: bool = False) -> PageContext:
    """The frame drawn and the capture of ``names`` (default: the attention set; names the
    model lacks are left out) made, or a message and st.stop(); `tformer.ui.page_context`
    wraps this for the pages. ``one_layer``: capture the per-layer names for the chosen layer
    only (`TextCapture.at` reads them): a page that looks at one layer at a time holds a sixth
    of a 6-layer capture, and a new text costs a sixth of the page faults."""
    names = ATTENTION if names is None else names
    fr = draw_frame(script)
    if fr.choice is None:
        st.info(tr("Fix the model settings in the sidebar to see the attention."))
        st.stop()
    if not fr.text.strip():
        st.info(tr("Type a sentence in the sidebar (English or Chinese) to see what attention computes."))
        st.stop()
    choice = fr.choice
    try:
        model, tokenizer = get_model(choice)
        has = available_names(model.cfg)  # e.g. only BERT has a segment embedding
        cfg = model.cfg
        if fr.length_note is not None:
            fr.length_note.caption(length_limit_note(choice, cfg))
        limit = fr.spec.max_tokens
        text, n_full = (fr.text, None) if limit is None else shown_text(choice, fr.text, limit)
        layers = (chosen_head(choice, text, cfg.n_layers, cfg.n_heads)[0],) if one_layer else None
        wanted = normalize_names(n for n in names if n in has)
        encoded = encode_text(choice, text)
        stored = check_capture(choice, text, wanted, layers)  # the memory guard, before the page draws
    except (ValueError, MemoryError, RuntimeError) as err:  # a refused folder, a model too big here
        st.error(tr("Could not run {model}: {err}", model=choice.label, err=err))
        st.stop()
    if n_full is not None:
        st.info(
            tr(
                "This page shows the first {shown:,} of the {n:,} tokens the model reads: {why} The "
                "Attention page shows all {n:,}.",
                shown=len(encoded.ids),
                n=n_full,
                why=tr(fr.spec.max_tokens_why, limit=fr.spec.max_tokens, n=n_full),
            ),
            icon="✂️",
        )
    beyond = link_beyond_shape(cfg, len(encoded.ids))
    if beyond:
        st.info(tr("From the link: {listed}.", listed="; ".join(beyond)))
    if choice.source == "scratch":
        whole = "pattern" in wanted and layers is None
        focus = row_focus(choice, text, wanted) if whole else None
        st.info(random_weights_note(choice, focus), icon="🎲")
    unknown = unknown_tokens(encoded, tokenizer)
    if unknown:
        st.warning(unknown, icon="❓")
    if encoded.truncated:
        st.warning(
            tr(
                "The text has {n} tokens; this model reads at most {limit}, so only the first {limit} "
                "are shown.",
                n=f"{encoded.n_input_tokens:,}{'' if encoded.n_input_exact else '+'}",
                limit=f"{len(encoded.ids):,}",
            )
        )
    return PageContext(fr, choice, model, text, encoded, wanted, layers, stored)


@st.cache_data(max_entries=32, show_spinner=False)
def shown_text(choice: ModelChoice, text: str, max_tokens: int) -> tuple[str, int | None]:
    """The part of ``text`` a page that shows at most ``max_tokens`` tokens keeps (its first
    whole words that fit, `Tokenizer.head`), and the number of tokens the model reads of the
    text when it was cut (None: the whole text is shown)."""
    tokenizer = get_model(choice)[1]
    encoded = tokenizer.encode(text)
    if len(encoded.ids) <= max_tokens:
        return text, None
    return tokenizer.head(text, max_tokens), len(encoded.ids)


def length_limit_note(choice: ModelChoice, cfg: EncoderConfig) -> str:
    """How many tokens this model reads, and why no more (under the sidebar's text box)."""
    n = cfg.max_len
    if cfg.pos_encoding == "learned":
        note = tr(
            "At most {n:,} tokens: this model learned one position vector for each of its first {n:,} "
            "positions, and has none beyond.",
            n=n,
        )
        if choice.source != "scratch":
            note += " " + tr(
                "The from-scratch encoder, with sinusoidal positions, reads up to {long:,}.",
                long=SCRATCH_MAX_LEN,
            )
        return note
    if cfg.pos_encoding == "sinusoidal" and choice.source == "scratch":
        return tr(
            "At most {n:,} tokens: sinusoidal positions work at any length; {n:,} keeps one capture "
            "within the server's memory limit.",
            n=n,
        )
    return tr("At most {n:,} tokens for this model.", n=n)


def link_beyond_shape(cfg: EncoderConfig, n_pos: int) -> list[str]:
    """What the session's link asked for beyond this model's shape (a layer it does not have,
    a head, a token past the text's end), each with what is shown instead; said once."""
    asked = pop_link_asks()
    out = []
    layer, head, query = asked.get("layer"), asked.get("head"), asked.get("query")
    if layer is not None and layer >= cfg.n_layers:
        out.append(
            tr(
                "layer {asked} is not in this model ({n} layers, 0–{last}): layer {last} is shown",
                asked=layer,
                n=cfg.n_layers,
                last=cfg.n_layers - 1,
            )
        )
    if head is not None and head >= cfg.n_heads:
        out.append(
            tr(
                "head {asked} is not in this model ({n} heads a layer, 0–{last}): head {last} is shown",
                asked=head,
                n=cfg.n_heads,
                last=cfg.n_heads - 1,
            )
        )
    if query is not None and query >= n_pos:
        out.append(
            tr(
                "token {asked} is past the text's end ({n} tokens, 0–{last}): token {last} is shown",
                asked=query,
                n=n_pos,
                last=n_pos - 1,
            )
        )
    return out


def random_weights_note(choice: ModelChoice, focus: tuple[float, float] | None) -> str:
    """What a from-scratch model's heads show before training, with this text's numbers
    (`row_focus`)."""
    seed = choice.cfg.seed if choice.cfg is not None else 0
    note = tr(
        "This encoder's weights are random (drawn from seed {seed}), not trained: its heads have "
        "learned nothing yet. Random attention puts each row's weight on keys picked by chance, "
        "not by meaning or position: scattered bright cells, with none of the diagonals, columns "
        "or blocks a trained head shows (compare the pretrained MiniLM).",
        seed=seed,
    )
    if focus is not None:
        note += tr(
            " On this text the largest weight in a row is {focus} on average; "
            "spreading evenly over the allowed keys would give {even}.",
            focus=_weight(focus[0]),
            even=_weight(focus[1]),
        )
    return note


def _weight(w: float) -> str:
    """A weight with three decimals, or two significant digits below 0.01 (1/2,048 is 0.00049,
    not 0.000)."""
    return f"{w:.3f}" if w >= 0.01 else f"{w:.2g}"


def unknown_tokens(encoded: Encoded, tokenizer: Tokenizer) -> str | None:
    """A warning when much of the text is outside the model's vocabulary, else None."""
    unk = tokenizer.unk_id
    n = sum(1 for i in encoded.ids if i == unk) if unk is not None else 0
    if n == 0 or n < 0.2 * len(encoded.ids):
        return None
    return (
        tr(
            "{n} of the {total} tokens are unknown to this model's vocabulary (its [UNK] token): "
            "the model sees them all as the same token, so their rows and columns look alike. MiniLM "
            "was trained on English text; the from-scratch encoder's vocabulary has every Chinese "
            "character (its weights are random until trained).",
            n=n,
            total=len(encoded.ids),
        )
        + " "
        + tr(
            "On the axes each of them keeps its characters followed by “{mark}” (“{example}”).",
            mark=UNK_MARK,
            example=plain(next(lab for lab, i in zip(encoded.labels, encoded.ids, strict=True) if i == unk)),
        )
    )


def layer_head(ctx: PageContext, columns: Sequence[Any] | None = None) -> tuple[int, int]:
    """Layer and head pickers, shared by every page (the choice follows the user around), in
    two new columns or the two given."""
    c1, c2 = st.columns(2) if columns is None else columns
    layers, heads = range(ctx.cfg.n_layers), range(ctx.cfg.n_heads)
    first_layer, first_head = ctx.chosen()
    layer = c1.selectbox(tr("layer"), layers, **bind("layer", layers, clamp=True, fallback=first_layer))
    head = c2.selectbox(tr("head"), heads, **bind("head", heads, clamp=True, fallback=first_head))
    return int(layer), int(head)


def query_token(ctx: PageContext, label: str = "query token") -> int:
    """The query token picker (the row a page follows), shared by every page that has one;
    ``label`` is an English template, translated here."""
    n = ctx.n_pos
    labels = ctx.labels
    return int(
        st.selectbox(
            tr(label),
            range(n),
            format_func=lambda i: f"{i} · {labels[i]}",
            **bind("query", range(n), clamp=True),
        )
    )


def layer_head_query(ctx: PageContext) -> tuple[int, int, int]:
    """Layer, head and query token pickers in one row."""
    c1, c2, c3 = st.columns([1, 1, 2])
    layer, head = layer_head(ctx, (c1, c2))
    with c3:
        query = query_token(ctx)
    return layer, head, query


# What the two square matrices of a head are called on screen (English templates, translated
# where shown); keys are the hooks' short names.
MATRIX_LABELS = {"pattern": "softmax weights", "attn_scores": "scaled scores QKᵀ/√d_k"}


def matrix_kind(label: str, key: str) -> Kind:
    """A radio for "pattern" or "attn_scores", bound to the view-state value ``key`` (its
    field's choices give the order); ``label`` is an English template, translated here."""
    choices = view().choices(key)
    names = {c: tr(MATRIX_LABELS[c]) for c in choices}  # translated now (see sidebar.shown)
    picked = st.radio(tr(label), choices, horizontal=True, format_func=names.__getitem__, **bind(key))
    return "attn_scores" if picked == "attn_scores" else "pattern"


def weight_scale(container: Any = None, *, disabled: bool = False) -> str:
    """The color scale of the attention weights (0 to 1, log, per row), bound to the view's
    ``weight_scale`` (so a share link keeps it), in ``container`` (default: the page)."""
    choices = view().choices("weight_scale")
    names = {c: tr(WEIGHT_SCALE_NAMES[c]) for c in choices}  # translated now (see sidebar.shown)
    picked = (container or st).segmented_control(
        tr("color scale"),
        choices,
        required=True,
        format_func=names.__getitem__,
        disabled=disabled,
        help=tr(
            "0 to 1: a weight's color is the same on every head and text. Log: weights from 0.0001 "
            "to 1 on a log scale, so a head that spreads its weight over hundreds of tokens still "
            "shows where it leans. Per row: each row divided by its largest weight, so every "
            "query's favourite key is bright (rows then no longer compare)."
        ),
        **bind("weight_scale"),
    )
    return str(picked) if picked in choices else "linear"


def section(key: str, labels: dict[str, str], *, label: str = "show") -> str:
    """One concept at a time: a segmented control over a page's sections, bound to the
    view-state value ``key``. Only the chosen section is computed and drawn, which keeps a long
    page fast and a projected screen focused. ``labels``: section -> its name on screen (the
    sections offered, in order; a subset of the field's choices). ``label`` and the names are
    English templates, translated here (`tformer.i18n.tr`)."""
    options = list(labels)
    names = {s: tr(name) for s, name in labels.items()}  # translated now (see sidebar.shown)
    picked = st.segmented_control(
        tr(label), options, required=True, format_func=names.__getitem__, **bind(key, options)
    )
    return str(picked if picked in labels else options[0])


def select_head(layer: int, head: int) -> None:
    """Make (layer, head) the chosen head on every page (e.g. after a click on the overview)."""
    set_values(layer=layer, head=head)


# cache_resource: the dict is shared, not unpickled on every rerun; nothing changes it
# (grid_selection returns a new dict).
@st.cache_resource(max_entries=16, show_spinner=False)
def _overview_data(choice: ModelChoice, text: str, names: tuple[str, ...]) -> dict[str, Any]:
    return head_grid_data(get_capture(choice, text, names).pattern)


def overview(ctx: PageContext, selected: tuple[int, int], *, key: str = "overview") -> None:
    """Every layer x head of the current text as one clickable grid; a click chooses that head
    on every page. The PNG is made once per text (cached); the outline moves on its own.
    Hidden while a lesson's question waits for its answer."""
    if figure_hidden():
        return
    head_grid(
        _overview_data(ctx.choice, ctx.text, ctx.capture.names), selected, key=key, on_select=select_head
    )


def resolve(fn: Callable[..., Any] | str) -> Callable[..., Any]:
    """A function, or the name of one in tformer (``"MultiHeadAttention.forward"``, or a module's
    under its package: ``"efficiency.tiled.tiled_attention"``): pages name the torch functions
    they show, so that their own imports stay free of torch."""
    if not isinstance(fn, str):
        return fn
    import importlib

    import tformer

    first, *rest = fn.split(".")
    # a name tformer exports ("MultiHeadAttention.forward") or a module's ("analysis.layouts.attend")
    obj: object = (
        getattr(tformer, first) if first in dir(tformer) else importlib.import_module(f"tformer.{first}")
    )
    while rest and isinstance(obj, types.ModuleType) and not hasattr(obj, rest[0]):
        obj = importlib.import_module(f"{obj.__name__}.{rest.pop(0)}")  # a package's submodule
    for part in rest:
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"tformer.{fn} is not a function")
    return obj


def formula(
    fn: Callable[..., Any] | str, *, code: bool = True, label: str = "The code that computed it"
) -> None:
    """The formula in ``fn``'s docstring, and (collapsed) ``fn``'s source: written once, beside
    the function that computes it, so the page and the code cannot drift apart. ``label``: an
    English template, translated here, as are the formula's words (`localized`)."""
    st.latex(localized(latex_of(resolve(fn))))
    if code:
        source(fn, label=label)


def source(fn: Callable[..., Any] | str, *, label: str = "The code that computed it") -> None:
    """``fn``'s source in a collapsed box (``label``: an English template, translated here)."""
    with st.expander(tr(label)):
        st.code(source_text(fn), language="python")


def source_text(fn: Callable[..., Any] | str) -> str:
    """The source code of a function or class (or its name in tformer, see `resolve`)."""
    return inspect.getsource(resolve(fn))
