"""The Train page's "Heads and overfitting" section: a grid of training-set sizes × head counts
(`tformer.training.overfit`), trained in the background over a few seeds, its train / held-out
gap plotted as the cells arrive, and the sentence the finished grid says.

The grid runs in the training manager (`jobs.manager`: at most a few runs at once, the rest
queued, a run nobody watches stops): first one update of each head count is timed and the grid's
time predicted; over `GRID_SECONDS`, or over `BUDGET_BYTES` by its memory estimate (checked in
the page before anything is built), it does not start. Cells go into one process-wide `Board`
keyed by the settings (the device included), so every visitor with the same settings sees the
same measurement and a stopped grid goes on where it stopped. Every string goes through
`tformer.i18n.tr`; the job's messages are English templates, worded when a page reads them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import streamlit as st

from ....figures.overfit import overfit_figure
from ....i18n import tr
from ....training.overfit import (
    Cell,
    CellKey,
    GridSettings,
    grid_refusal,
    run_grid,
    summarize,
    verdict,
)
from ....training.runs import Run, RunHandle
from ...binding import bind, bind_number, view
from ...caches import device
from ...charts import chart
from ...context import formula, source
from ...singletons import shared
from .board import Board, experiment

BUDGET_BYTES = 1 << 30  # one cell's memory estimate (cells train one after another)
GRID_SECONDS = 8 * 60  # the grid's predicted training time; the run itself stops at MAX_RUN_SECONDS
TASK_NAMES = {"copy": "copy", "reverse": "reverse", "sort": "sort", "shift": "shift", "lookup": "lookup"}

Cells = dict[CellKey, Cell]


def board() -> Board[GridSettings, Cells]:
    """The process's grid results (a singleton: no cache clear forgets what was trained)."""
    return shared("train.overfit", Board)


def grid_settings(task: str, seeds: int) -> GridSettings:
    """The page's grid: its sizes, head counts and model (`GridSettings`' defaults) for this task,
    seed count and the app's device."""
    return GridSettings(task=task, seeds=seeds, device=str(device()[0]))


def _job(settings: GridSettings) -> Callable[[RunHandle], None]:
    def job(handle: RunHandle) -> None:
        handle.set_message("timing one update of each head count")
        plan = {"minutes": 0.0}

        def planned(seconds: float) -> None:
            plan["minutes"] = seconds / 60

        def started(i: int, key: CellKey) -> None:
            seed, size, n_heads = key
            handle.set_message(
                "training model {i} of {n}: {size} sequences, {heads} heads, seed {seed} (about {minutes:.1f} min "
                "in all)",
                i=i,
                n=settings.n_cells,
                size=size,
                heads=n_heads,
                seed=seed,
                minutes=plan["minutes"],
            )

        def trained(cell: Cell) -> None:
            key = (cell.seed, cell.size, cell.n_heads)
            board().update(settings, lambda old: {**(old or {}), key: cell})

        refusal = run_grid(
            settings,
            budget_bytes=BUDGET_BYTES,
            budget_s=GRID_SECONDS,
            done=board().get(settings) or {},
            stop=handle.should_stop,
            on_plan=planned,
            on_cell=started,
            on_done=trained,
        )
        if refusal is not None:
            handle.fail(refusal.template, **dict(refusal.values))
        elif not handle.should_stop():
            handle.set_message("every model trained")

    return job


def start_grid(settings: GridSettings) -> Run:
    """The grid's run: the one still going for these settings, or a new one for the cells they
    lack. ValueError (worded for the reader) when the manager's queue is full."""
    return board().start(
        settings, f"heads and overfitting: {settings.task}, {settings.seeds} seed(s)", _job(settings)
    )


# --- the section ---------------------------------------------------------------------------------


def _intro() -> None:
    st.markdown(
        tr(
            "More heads give a layer more attention patterns to fit its data with. On a small data set that "
            "capacity can go to memorising the training sequences instead of learning the task: the model "
            "scores well on what it trained on and worse on sequences it never saw. This experiment measures "
            "that gap: each model trains for the same number of updates on a fixed set of training sequences "
            "(small sets are seen many times over), then answers its own training sequences and held-out ones."
        )
    )
    formula("training.overfit.gap", code=False)


def _same_weights(settings: GridSettings) -> None:
    """Why the head count alone changes no parameter count: said with this grid's numbers."""
    st.caption(
        tr(
            "At one d_model every head count has the same weights: W_Q, W_K, W_V and W_O are d_model × d_model "
            "whatever the number of heads, so each model here has {params:,} parameters. More heads cut the "
            "same matrices into more, narrower patterns (d_head = {d} / heads).",
            params=settings.config(settings.head_counts[0]).n_params(),
            d=settings.d_model,
        )
    )


def _controls() -> GridSettings:
    c1, c2 = st.columns(2)
    tasks = list(view().choices("train.overfit_task"))
    task = c1.selectbox(
        tr("task"),
        tasks,
        format_func={t: tr(TASK_NAMES[t]) for t in tasks}.__getitem__,
        **bind("train.overfit_task", tasks),
    )
    seeds = int(
        c2.number_input(tr("seeds (each trains the whole grid)"), **bind_number("train.overfit_seeds"))
    )
    settings = grid_settings(str(task), seeds)
    m1, m2, m3, m4 = st.columns(4)
    m1.metric(tr("training sequences"), f"{settings.sizes[0]} … {settings.sizes[-1]}")
    m2.metric(tr("heads (d_model {d})", d=settings.d_model), " · ".join(str(h) for h in settings.head_counts))
    m3.metric(tr("updates (batch) per model"), f"{settings.updates} ({settings.batch})")
    m4.metric(tr("models to train"), str(settings.n_cells))
    _same_weights(settings)
    return settings


def overfit_view() -> None:
    """The section: the lesson, the settings, the button that trains the grid in the background,
    and the gaps as they arrive."""
    _intro()
    settings = _controls()
    refusal = grid_refusal(settings, budget_bytes=BUDGET_BYTES)  # memory: before anything is built
    if refusal is not None:
        st.warning(refusal.render(tr))
    cells = board().get(settings) or {}
    experiment(
        board(),
        settings,
        label=tr("▶ Train the grid"),
        button="train.overfit.start",
        finished=len(cells) == settings.n_cells,
        refused=refusal is not None,
        start=lambda: start_grid(settings),
        status=lambda run: st.progress(len(board().get(settings) or {}) / settings.n_cells, text=run.message),
        draw=lambda done, run: _draw(settings, done, run),
    )
    source("training.overfit.train_cell", label="How each model was trained and scored: the code")


def _draw(settings: GridSettings, cells: Cells | None, run: Run | None) -> None:
    """The grid so far (drawn in the fragment that polls while the run trains)."""
    if cells and len(cells) < settings.n_cells and (run is None or run.is_final):
        st.info(
            tr(
                "{done} of {n} models trained: press the button to train the rest (a grid stops when nobody "
                "watches it).",
                done=len(cells),
                n=settings.n_cells,
            )
        )
    if cells:
        _results(settings, list(cells.values()))
    elif run is None:
        st.info(tr("Not trained yet with these settings: press the button."))


def _grid_arrays(settings: GridSettings, cells: list[Cell]) -> dict[str, np.ndarray]:
    stats = summarize(cells)
    shape = (len(settings.head_counts), len(settings.sizes))
    out = {k: np.full(shape, np.nan) for k in ("gap", "gap_low", "gap_high", "loss_gap")}
    for i, h in enumerate(settings.head_counts):
        for j, n in enumerate(settings.sizes):
            s = stats.get((n, h))
            if s is not None:
                out["gap"][i, j], out["gap_low"][i, j], out["gap_high"][i, j] = s.gap, s.gap_min, s.gap_max
                out["loss_gap"][i, j] = s.gap_loss
    return out


def _results(settings: GridSettings, cells: list[Cell]) -> None:
    arrays = _grid_arrays(settings, cells)
    figure = overfit_figure(
        settings.sizes,
        settings.head_counts,
        arrays["gap"],
        arrays["gap_low"],
        arrays["gap_high"],
        arrays["loss_gap"],
        d_model=settings.d_model,
    )
    chart(figure, key="overfit")
    complete = {(c.size, c.n_heads) for c in cells} == {
        (n, h) for n in settings.sizes for h in settings.head_counts
    }
    if complete:
        said = " ".join(note.render(tr) for note in verdict(settings, cells))
        if len(cells) < settings.n_cells:  # every size and head count, not yet every seed
            said = tr("So far ({done} of {n} models):", done=len(cells), n=settings.n_cells) + " " + said
        st.markdown(said)
    else:
        st.caption(
            tr("The sentence that says what the grid shows comes once every size and head count has a model.")
        )
    st.dataframe(_table(settings, cells), hide_index=True)
    seeds_done = len({c.seed for c in cells})
    st.caption(
        tr(
            "Task {task}, {length} tokens from {vocab} symbols; {layers}, d_model {d}, the Train page's "
            "recipe with batch {batch} for {updates} updates. Training accuracy on the model's own training "
            "sequences, held-out accuracy on {held} sequences that no training set contains (the split is a hash "
            "of the sequence). {done} of {n} models trained, {seeds} seed(s) so far; a seed fixes the weights, "
            "the training sequences and the batches. Points: the mean over seeds; bars: the smallest to the "
            "largest seed's gap.",
            task=tr(TASK_NAMES[settings.task]),
            length=settings.length,
            vocab=settings.vocab,
            layers=tr("one layer") if settings.n_layers == 1 else tr("{n} layers", n=settings.n_layers),
            d=settings.d_model,
            batch=settings.batch,
            updates=settings.updates,
            held=settings.n_held_out,
            done=len(cells),
            n=settings.n_cells,
            seeds=seeds_done,
        )
    )


def _table(settings: GridSettings, cells: list[Cell]) -> list[dict[str, str]]:
    rows = []
    for (size, n_heads), s in summarize(cells).items():
        rows.append(
            {
                tr("training sequences"): str(size),
                tr("heads"): str(n_heads),
                tr("d_head"): str(settings.d_model // n_heads),
                tr("training accuracy"): f"{s.train_accuracy:.1%}",
                tr("held-out accuracy"): f"{s.held_out_accuracy:.1%}",
                tr("accuracy gap (seeds' range)"): f"{s.gap:.1%} ({s.gap_min:.1%} … {s.gap_max:.1%})",
                tr("loss gap"): f"{s.gap_loss:.3f}",
                tr("seeds"): str(s.seeds),
            }
        )
    return rows
