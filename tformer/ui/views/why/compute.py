"""The Why-attention page's data: the recurrent layers and the attention layer on the text's token
vectors (cached per text and scale), the timing sweep (the costs page's, sized for this chapter),
and the long-range recall trained in the background, once per settings and shared by every
visitor.

The recall training is a background run of the Train page's `RunManager` (at most a few runs at
once on a server, the rest queued; a run nobody watches stops): each model kind trains for at
most `RECALL_SECONDS` and its result goes into one process-wide board (`RecallBoard`, a
`tformer.ui.singletons` object, not a cache), where every later visitor with the same settings
finds it without training again. A run's job hands its messages over as English templates
(`RunHandle.set_message`), worded when a page reads them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import streamlit as st

from ....analysis.why import KINDS, LayerRun, LayerSpec, run_layer, timing_settings
from ....efficiency.rnn import RnnSettings, path_lengths
from ....i18n import tr
from ....training.recall import RecallResult, RecallSettings, train_recall
from ....training.runs import Run, RunHandle
from ....training.tasks import as_text
from ...caches import ModelChoice, get_capture
from ...singletons import shared
from ..train.jobs import manager, session_id

WHY_SECTIONS = {
    "steps": "Sequential or parallel",
    "gradients": "Gradients over distance",
    "recall": "Long-range recall, trained",
}  # English templates (ui.section translates)
D_HIDDEN = 16  # every layer's width on the text: 16 units a strip
RECALL_KINDS = ("gru", "attention", "rnn")  # trained in this order: the tanh RNN last
RECALL_SECONDS = 30.0  # each kind's training stops there (its updates' time summed)
KEEP_RESULTS = 16  # settings whose results the board keeps (the oldest go first)
RUN_LIMIT_S = 5 * 60  # the whole run's wall-clock limit (three kinds and their evaluations)
LONGEST_PATH = 4096  # the path-length chart's longest n


def token_vectors(choice: ModelChoice, text: str) -> np.ndarray:
    """The text's token vectors [pos, d_model]: the model's token embedding (``hook_embed``),
    before positions are added: the same inputs for every layer on the page."""
    return get_capture(choice, text, ["embed"])["embed"]


@st.cache_resource(max_entries=16, show_spinner=False)
def why_layers(choice: ModelChoice, text: str, scale: float) -> dict[str, LayerRun]:
    """`tformer.analysis.why.run_layer` of the tanh RNN and the GRU (recurrent weights ``scale``
    times an orthogonal matrix) and of one attention head, each ``D_HIDDEN`` wide, on the text's
    token vectors: states, gradient profile, pattern and steps. Shared, read-only."""
    x = token_vectors(choice, text)
    return {
        kind: run_layer(
            x, LayerSpec(kind=kind, d_hidden=D_HIDDEN, scale=1.0 if kind == "attention" else scale)
        )
        for kind in KINDS
    }


def sweep_settings() -> RnnSettings:
    """The time-against-length sweep of this page: the tanh RNN, the GRU and one attention layer
    of width 64 (`tformer.analysis.why.timing_settings`)."""
    return timing_settings()


def why_path_lengths(n_text: int) -> tuple[np.ndarray, dict[str, dict[str, np.ndarray]]]:
    """The path-length chart's lengths (powers of two up to `LONGEST_PATH`, and the text's n)
    and `tformer.efficiency.rnn.path_lengths` of them."""
    n = np.array(sorted({2**e for e in range(1, 13)} | {max(2, n_text)}), dtype=np.int64)
    return n, path_lengths(n)


# --- the recall task, trained once per settings ----------------------------------------------------


def recall_settings(protocol: str, seed: int) -> RecallSettings:
    """The page's recall settings: the task and recipe of `RecallSettings` with this protocol and
    seed, and each kind's training bounded by `RECALL_SECONDS`."""
    base = RecallSettings()
    return replace(
        base, protocol=protocol, recipe=replace(base.recipe, seed=int(seed)), time_limit_s=RECALL_SECONDS
    )


@dataclass
class RecallBoard:
    """Every visitor's recall results, by settings: the kinds trained so far and the run (its id
    in the training manager) that trains the rest. Thread-safe."""

    results: OrderedDict[RecallSettings, dict[str, RecallResult]] = field(default_factory=OrderedDict)
    runs: dict[RecallSettings, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, settings: RecallSettings) -> dict[str, RecallResult]:
        with self.lock:
            return dict(self.results.get(settings, {}))

    def add(self, settings: RecallSettings, result: RecallResult) -> None:
        with self.lock:
            self.results.setdefault(settings, {})[result.kind] = result
            self.results.move_to_end(settings)
            while len(self.results) > KEEP_RESULTS:
                self.results.popitem(last=False)

    def run_of(self, settings: RecallSettings) -> str | None:
        with self.lock:
            return self.runs.get(settings)

    def set_run(self, settings: RecallSettings, run_id: str) -> None:
        with self.lock:
            self.runs[settings] = run_id


def recall_board() -> RecallBoard:
    """The process's one board (a singleton: no cache clear forgets what was trained)."""
    return shared("why.recall", RecallBoard)


def recall_run(settings: RecallSettings) -> Run | None:
    """The run that trains (or trained) these settings, if the manager still knows it."""
    run_id = recall_board().run_of(settings)
    return manager().get(run_id) if run_id is not None else None


def _recall_job(settings: RecallSettings, shared_board: RecallBoard) -> Any:
    def job(handle: RunHandle) -> None:
        for i, kind in enumerate(RECALL_KINDS, start=1):
            if kind in shared_board.get(settings):
                continue
            if handle.should_stop():
                return
            handle.set_message("training model {i} of {n}", i=i, n=len(RECALL_KINDS))

            def step(s: int, loss: float, kind: str = kind) -> None:
                handle.report_step(kind=kind, step=s, loss=loss)

            result = train_recall(settings, kind, stop=handle.should_stop, on_step=step)
            if result.stopped == "stopped":  # asked to stop (or nobody watched): not kept
                return
            shared_board.add(settings, result)
        handle.set_message("every model trained")

    return job


def start_recall(settings: RecallSettings) -> Run:
    """Queue the training of the kinds these settings lack; ValueError (worded for the reader)
    when the manager's queue is full."""
    b = recall_board()
    run = manager().submit(
        f"recall: {settings.protocol}, seed {settings.recipe.seed}",
        _recall_job(settings, b),
        owner=session_id(),
        time_limit_s=RUN_LIMIT_S,
    )
    b.set_run(settings, run.id)
    return run


def recall_progress(run: Run) -> str:
    """What the run is doing, in the reader's language."""
    last = run.progress.last_step() or {}
    kind = last.get("kind")
    if run.is_final or kind is None:
        return run.message
    names = {"rnn": tr("tanh RNN"), "gru": tr("GRU"), "attention": tr("attention")}
    return tr(
        "{message}: the {model}, update {step} of {steps}",
        message=run.message,
        model=names.get(str(kind), str(kind)),
        step=int(last.get("step", 0)),
        steps=RecallSettings().recipe.steps,
    )


def probe_tokens(ids: np.ndarray, distance: int) -> list[str]:
    """The probe sequence at ``distance`` as tokens (its first d + 1: the pads cut off)."""
    return as_text(ids[: distance + 1]).split(" ")


# --- the page's wording ------------------------------------------------------------------------

KIND_NAMES = {"rnn": "tanh RNN", "gru": "GRU", "attention": "attention"}  # English templates
PROTOCOLS = {
    "separate": "one model per distance",
    "mixed": "one model for every distance",
}  # English templates


def numbers(row: object, k: int = 4) -> str:
    values = [float(v) for v in list(row)[:k]]  # type: ignore[call-overload]
    return ", ".join(f"{v:+.2f}" for v in values) + ", …"


def power(log10: float) -> str:
    """A norm given by its log10: 0.42 near 1, 10^−5.3 far from it, 0 when exactly 0."""
    if log10 == float("-inf"):
        return "0"
    if -2 <= log10 <= 2:
        return f"{10**log10:.2g}"
    return f"10^{log10:.1f}".replace("-", "−")
