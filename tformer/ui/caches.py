"""Process-wide caches: the device, models shared by every session, captures, examples.

Keys are plain values (a frozen dataclass, text, a tuple of names); tensors and modules never are.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import streamlit as st
import torch

from ..i18n import language, tr
from ..model.capture import TextCapture, capture_ids, capture_memory, normalize_names
from ..model.config import EncoderConfig
from ..model.device import pick_device
from ..model.encoder import Encoder, unscaled_as_scaled
from ..model.pretrained import load_pretrained
from ..model.tokenizer import Encoded, Tokenizer, scratch_tokenizer
from ..training.checkpoints import load_run, read_run_meta
from .process import (
    app_threads,
    blas_threads,
    keep_freed_memory,
    plain_pages_for_arrays,
    recycle_capture_memory,
)
from .state import SOURCES, ViewState

log = logging.getLogger("tformer.app")

SCRATCH_MAX_LEN = 2048
# Memory guard for the from-scratch encoder's weights and for any one capture (its arrays and
# the forward that fills them, at its peak: `tformer.model.capture.CaptureMemory`): both must fit
# comfortably on a 2-core, 24 GB laptop-class machine shared by a classroom.
MAX_PARAMS = 64_000_000
MAX_CAPTURE_BYTES = 768 * 2**20
# Captures of at least this many bytes (every head's pattern and scores past ~330 tokens) are
# cached apart, LARGE_CAPTURES at a time (`get_capture`).
LARGE_CAPTURE_BYTES = 64 * 2**20
LARGE_CAPTURES = 3


class CaptureTooLarge(ValueError):
    """The requested capture would pass MAX_CAPTURE_BYTES at its peak; the message gives the
    figures (`tformer.ui.memory.refusal`)."""


@dataclass(frozen=True)
class ModelChoice:
    """Plain, hashable description of the model in use: the key of every cache.

    ``source`` takes the view state's values (`tformer.ui.state.SOURCES`), as a link writes
    them (``?source=run&run=tiny-copy``): ``"minilm"``, ``"scratch"`` with its ``cfg``,
    ``"run"`` with the trained run's name in ``run``, ``"local"`` (TFORMER_MODEL_DIR) and
    ``"folder"`` (a model of TFORMER_MODELS_DIR) with the model folder in ``path``.
    """

    source: str
    cfg: EncoderConfig | None = None  # from-scratch only
    run: str | None = None  # source "run": the run's name (`tformer.training.checkpoints`)
    path: str | None = None  # sources "local" and "folder": the model folder

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"source={self.source!r} is not one of {SOURCES}")
        needs = {"scratch": "cfg", "run": "run", "local": "path", "folder": "path"}.get(self.source)
        if needs is not None and getattr(self, needs) is None:
            raise ValueError(f"source={self.source!r} needs {needs}")

    @property
    def label(self) -> str:
        """The model's name on screen, in the session's language."""
        if self.source == "minilm":
            return tr("all-MiniLM-L6-v2 (pretrained BERT)")
        if self.source == "scratch" and self.cfg is not None:
            c = self.cfg
            return tr(
                "from-scratch encoder: {n_layers} layers x {n_heads} heads, d_model {d_model}",
                n_layers=c.n_layers,
                n_heads=c.n_heads,
                d_model=c.d_model,
            )
        if self.source == "run":
            return tr("trained run {name}", name=self.run)
        return tr("local checkpoint {path}", path=self.path)


# The view's from-scratch settings: its top-level fields named like EncoderConfig's (layers,
# heads, d_model, d_ff, positions, norm, causal, seed). Found by name, so a config field given a
# view field of the same name reaches the model without another line here.
SCRATCH_SETTINGS = tuple(
    f.name
    for f in dataclasses.fields(EncoderConfig)
    if f.name in {g.name for g in dataclasses.fields(ViewState)}
)


def scratch_config_of(view: ViewState) -> EncoderConfig:
    """The from-scratch encoder the view's shape describes (the sidebar's settings; ValueError if
    it is invalid): the scratch tokenizer's vocabulary, `SCRATCH_MAX_LEN`, and the view's
    `SCRATCH_SETTINGS`."""
    return EncoderConfig(
        vocab_size=scratch_tokenizer().vocab_size,
        max_len=SCRATCH_MAX_LEN,
        **{name: view.get(name) for name in SCRATCH_SETTINGS},
    )


# --- caches -----------------------------------------------------------------------------------


@st.cache_resource(show_spinner=False)
def device() -> tuple[torch.device, str | None]:
    """The device in use and, if TFORMER_DEVICE could not be honoured, why."""
    try:
        return pick_device(), None
    except ValueError as err:
        return torch.device("cpu"), str(err)


@st.cache_resource(show_spinner=False)
def set_threads() -> int:
    """Once per server, from whichever page its first visitor opens: torch's thread count (and
    numpy's BLAS's, `blas_threads`), the
    allocator keeping freed activation buffers (`keep_freed_memory`), numpy's large arrays on
    plain pages (`plain_pages_for_arrays`), large capture arrays in recycled memory
    (`recycle_capture_memory`), and gc.freeze() so that
    Python's full collections skip the long-lived objects of torch, transformers and plotly."""
    import gc

    keep_freed_memory()
    plain_pages_for_arrays()  # fresh capture arrays faster to fill (see its docstring)
    recycle_capture_memory()  # and large ones filled into memory already mapped
    try:
        n = app_threads()
    except ValueError as err:
        log.warning("%s; keeping torch's default", err)
        n = torch.get_num_threads()
    torch.set_num_threads(n)
    blas_threads(n)  # numpy's matrix products too
    gc.freeze()
    return n


# Spinners are shown from inside the cached bodies (so only while one computes), in the
# session's language: a cache's own show_spinner text is fixed when the module is imported.
@st.cache_resource(max_entries=6, show_spinner=False)
def get_model(choice: ModelChoice) -> tuple[Encoder, Tokenizer]:
    """One shared model per choice, read by every session (capture is thread-safe)."""
    with st.spinner(tr("Building the model...")):
        return _build_model(choice)


def _build_model(choice: ModelChoice) -> tuple[Encoder, Tokenizer]:
    dev = device()[0]
    if choice.source == "scratch":
        assert choice.cfg is not None
        model = Encoder(choice.cfg).eval().to(dev)
        return model, scratch_tokenizer(max_len=choice.cfg.max_len)
    if choice.source == "run":
        assert choice.run is not None
        model, tokenizer, _ = load_run(choice.run, device=str(dev))
        # every page's formula divides the scores by √d_head: a run trained without it (the Train
        # page's comparison) is shown as the same function in that form
        return unscaled_as_scaled(model).eval(), tokenizer
    where = choice.path if choice.path is not None else choice.source  # "minilm": the installed one
    model, tokenizer = load_pretrained(where, device=dev)
    return model.eval(), tokenizer


def get_capture(
    choice: ModelChoice, text: str, names: Iterable[str], layers: Iterable[int] | None = None
) -> TextCapture:
    """The activations ``names`` of ``text`` (per-layer ones for ``layers`` only, if given),
    cached per (model, text, set of names, layers).

    Refuses (CaptureTooLarge) before running anything when the capture would pass
    MAX_CAPTURE_BYTES for this text's length, the forward's working memory included. A capture
    that keeps LARGE_CAPTURE_BYTES or more is kept in a cache of its own, of LARGE_CAPTURES
    entries: so a long text's arrays are let go after a few edits (their memory is then recycled
    for the next capture, `tformer.model.buffers`) while many short texts stay cached.
    """
    wanted = normalize_names(names)
    only = None if layers is None else tuple(sorted(set(layers)))
    return checked_capture(choice, text, wanted, only, check_capture(choice, text, wanted, only))


def checked_capture(
    choice: ModelChoice, text: str, names: tuple[str, ...], layers: tuple[int, ...] | None, stored: int
) -> TextCapture:
    """`get_capture` past its guard: ``names`` and ``layers`` normalized as it does, ``stored``
    what `check_capture` returned for them (it picks the cache that keeps this capture)."""
    cache = _large_capture if stored >= LARGE_CAPTURE_BYTES else _capture
    return cache(choice, text, names, layers)


def check_capture(
    choice: ModelChoice, text: str, names: Iterable[str], layers: Iterable[int] | None = None
) -> int:
    """The memory guard of `get_capture` alone (nothing runs): raises CaptureTooLarge when the
    capture of ``names`` for ``text`` would pass MAX_CAPTURE_BYTES, else returns the bytes it keeps."""
    from .memory import refusal  # it reads this module's limit

    wanted = normalize_names(names)
    only = None if layers is None else tuple(sorted(set(layers)))
    model, _ = get_model(choice)
    memory = capture_memory(model.cfg, len(encode_text(choice, text).ids), wanted, only)
    refused = refusal(memory, wanted)
    if refused is not None:
        raise CaptureTooLarge(refused)
    return memory.stored


@st.cache_resource(max_entries=16, show_spinner=False)
def encode_text(choice: ModelChoice, text: str) -> Encoded:
    """``text`` tokenized by ``choice``'s tokenizer (once per model and text: a page and its
    capture both need it)."""
    return get_model(choice)[1].encode(text)


# cache_resource, not cache_data: a 512-token capture holds ~170 MB of float32, and cache_data
# would pickle a copy on every rerun. The arrays are read-only, so sharing them is safe.
@st.cache_resource(max_entries=8, ttl=3600, show_spinner=False)
def _capture(
    choice: ModelChoice, text: str, names: tuple[str, ...], layers: tuple[int, ...] | None = None
) -> TextCapture:
    return _run_capture(choice, text, names, layers)


@st.cache_resource(max_entries=LARGE_CAPTURES, ttl=3600, show_spinner=False)
def _large_capture(
    choice: ModelChoice, text: str, names: tuple[str, ...], layers: tuple[int, ...] | None = None
) -> TextCapture:
    return _run_capture(choice, text, names, layers)


def _run_capture(
    choice: ModelChoice, text: str, names: tuple[str, ...], layers: tuple[int, ...] | None
) -> TextCapture:
    model, _ = get_model(choice)
    with st.spinner(tr("Running the model...")):
        return capture_ids(model, encode_text(choice, text), names, layers)


@st.cache_data(ttl=30, show_spinner=False)
def run_meta(name: str) -> dict[str, Any]:
    """A saved run's run.json (task, recipe, example texts) without its ``history``; ValueError (a
    `tformer.training.checkpoints.CheckpointError`) for a name that is not a readable saved run.

    cache_data hands every call a copy (a pickle round trip), and the sidebar asks on every rerun
    of every page: the history (each update's curves, the heads' role timeline: a few hundred kB)
    is read by the Train page's own views, cached per state of the file."""
    return {key: value for key, value in read_run_meta(name).items() if key != "history"}


F = TypeVar("F")


def shared_figure(build: Callable[..., F], *args: Any, **kwargs: Any) -> F:
    """``build(*args, **kwargs)``, built once per argument values and shared by every session.

    For figures that do not depend on the text (the positional page's sinusoid plots): a
    rerun after a text edit then skips building them. The figure is shared, not copied, so
    it must not be changed after this call; st.plotly_chart only serialises it. Arguments are
    hashed by value (numpy arrays by content).
    """
    # The language is part of the key: a figure's titles are translated when it is built.
    name = f"{build.__module__}.{build.__qualname__}"
    return _shared_figure(name, language(), build, args, kwargs)


@st.cache_resource(max_entries=64, show_spinner=False)
def _shared_figure(
    name: str, lang: str, _build: Callable[..., F], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> F:
    return _build(*args, **kwargs)
