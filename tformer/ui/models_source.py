"""The sidebar's "your own model" source: the models the folders of ``TFORMER_MODELS_DIR`` hold.

They are listed from their config.json alone (`tformer.model.models_dir.find_models`: family,
size, parameter count, or why a folder is refused); the one chosen is named in the view state
by its folder name (``?source=folder&model=tiny-gpt2``), never by a path, so a link cannot
point the server at a folder of its own choosing. The chosen model is loaded here, in the
sidebar, so that a folder the full check refuses (a tensor of the wrong shape, a tokenizer
of another model) is said next to the picker, and the page shows no half-loaded model.
"""

from __future__ import annotations

import os
import re

import streamlit as st

from ..i18n import language, tr
from ..model.models_dir import MODELS_DIR_ENV, ModelEntry, find_models, models_dirs
from .binding import bind, view
from .caches import ModelChoice, get_model
from .guard import plain

__all__ = ["folder_choice", "local_models", "model_label", "models_dir_set", "usable_models"]

MAX_ERROR_CHARS = 600  # a refusal names a path and a problem; longer ones are cut
_LOADED = "_folder_model_loaded"  # session_state: the models-folder entry that loaded last


def models_dir_set() -> bool:
    """Does this server name a models folder (``TFORMER_MODELS_DIR``)?"""
    return bool(models_dirs())


def local_models() -> list[ModelEntry]:
    """Every model folder found, with why each refused one is refused (in the session's
    language); read again at most every 10 seconds, so a folder copied in shows up soon."""
    raw = os.environ.get(MODELS_DIR_ENV, "")
    if not raw.strip():
        return []
    return _listed(raw, language())


@st.cache_data(ttl=10, max_entries=8, show_spinner=False)
def _listed(raw: str, lang: str) -> list[ModelEntry]:
    return find_models(models_dirs(raw))


def usable_models(entries: list[ModelEntry]) -> dict[str, ModelEntry]:
    """The loadable entries by the name a link uses: the folder's name (signs a link's
    `state.MODEL_NAME` does not allow become ``_``), with ``-2``, ``-3``... when two models
    folders hold folders of the same name (the first keeps the plain name)."""
    out: dict[str, ModelEntry] = {}
    for entry in entries:
        if not entry.ok:
            continue
        base = re.sub(r"[^\w.+-]", "_", entry.name)[:90] or "model"  # fits state.MODEL_NAME
        name, n = base, 1
        while name in out:
            n += 1
            name = f"{base}-{n}"
        out[name] = entry
    return out


def model_label(name: str, entry: ModelEntry) -> str:
    """``tiny-gpt2 · GPT-2 · 0.04 M`` : the name, the family and the parameter count."""
    params = (entry.n_params or 0) / 1e6
    return tr("{name} · {family} · {params:.2f} M", name=name, family=entry.family_label, params=params)


def _refusals(refused: list[ModelEntry], *, expanded: bool) -> None:
    """Each refused folder with its reason, as plain text (a folder name or a message may hold
    markdown signs: both are escaped); open when nothing else could be loaded."""
    sb = st.sidebar
    with sb.expander(tr("Not loaded from TFORMER_MODELS_DIR: {n}", n=len(refused)), expanded=expanded):
        for entry in refused:
            st.caption(
                tr(
                    "{name}: {reason}",
                    name=plain(entry.name),
                    reason=plain(entry.error or "", MAX_ERROR_CHARS),
                )
            )


def _load(usable: dict[str, ModelEntry], name: str) -> str | None:
    """Load ``name`` (the full check: shapes, tokenizer, values); None when it loaded (it is then
    the session's last loaded model), else why not, as plain text."""
    try:
        get_model(ModelChoice("folder", path=str(usable[name].path)))
    except (ValueError, MemoryError, RuntimeError) as err:
        return tr("{name} cannot be loaded: {err}", name=plain(name), err=plain(str(err), MAX_ERROR_CHARS))
    st.session_state[_LOADED] = name
    return None


def folder_choice() -> ModelChoice | None:
    """The models-folder picker; the model chosen (loaded), or None with the reason shown. A
    pick that the full check refuses is said, and the session stays on the model it had."""
    sb = st.sidebar
    entries = local_models()
    usable = usable_models(entries)
    refused = [e for e in entries if not e.ok]
    v = view()
    choice: ModelChoice | None = None
    if not usable:
        sb.warning(
            tr(
                "No folder in TFORMER_MODELS_DIR holds a model this app can load (config.json, "
                "model.safetensors or pytorch_model.bin, tokenizer.json of BERT, RoBERTa, XLM-RoBERTa, "
                "ELECTRA, DistilBERT or GPT-2)."
            )
        )
    else:
        names = list(usable)
        if v.model not in usable:
            if v.model is not None:
                sb.info(
                    tr(
                        "The model {name} is not in this server's TFORMER_MODELS_DIR; {first} is shown.",
                        name=plain(v.model),
                        first=plain(names[0]),
                    )
                )
            v.set("model", names[0])
        refusal = _load(usable, str(v.model))
        if refusal is not None:  # stay on the model that loaded last, if it is still listed
            previous = st.session_state.get(_LOADED)
            if isinstance(previous, str) and previous in usable and previous != v.model:
                refusal += " " + tr("{previous} is still shown.", previous=plain(previous))
                v.set("model", previous)
        labels = {n: model_label(n, e) for n, e in usable.items()}  # translated now (see sidebar.shown)
        sb.selectbox(tr("local model"), names, format_func=labels.__getitem__, **bind("model", names))
        if refusal is not None:
            sb.error(refusal)
        name = str(v.model)
        entry = usable[name]
        if name == st.session_state.get(_LOADED):
            sb.caption(
                tr(
                    "{family}: {size} (layers x heads x d_model), {params:,} parameters",
                    family=entry.family_label,
                    size=entry.size,
                    params=entry.n_params or 0,
                )
            )
            choice = ModelChoice("folder", path=str(entry.path))
    if refused:
        _refusals(refused, expanded=not usable)
    return choice
