"""The Train page's "Compare runs" section: every saved run in a table, two to four of them on
one set of curves labelled by what differs between them, and one click that trains "the same
run without ..." as a comparison (`tformer.training.compare`).

Run folders are untrusted: each is read with the bounded readers of
`tformer.training.checkpoints`, once per folder state and language (a cache keyed on the files'
inode, size and time), and a folder that fails is listed with the reason while the table goes on.
A comparison is a run of the page's `RunManager` (`jobs.manager`): it waits its turn, has the
same memory and time limits as any run, and its curves are drawn live while it trains.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import streamlit as st

from ....figures.labels import safe_label
from ....figures.training import runs_overlay
from ....i18n import language, tr
from ....model.config import EncoderConfig
from ....model.model_files import folder_stamp
from ....timing import watch
from ....training.checkpoints import runs_dir, save_run
from ....training.compare import (
    VARIANTS,
    WARMUP_UPDATES,
    Refused,
    RunsScan,
    SavedRun,
    comparison_title,
    curves_of,
    listed,
    model_text,
    read_or_refuse,
    recipe_changes,
    run_labels,
    saved_history,
    scan_runs,
    task_text,
    variant,
    variant_name,
)
from ....training.recipe import Recipe
from ....training.role_timeline import RoleRecorder
from ....training.runs import Message, Run, RunHandle
from ....training.tasks import example_texts, task_tokenizer
from ....training.trainer import StepStats, Trainer
from ...binding import bind, set_values, view
from ...caches import device
from ...charts import chart
from ...guard import plain
from ...timing_view import busy_method
from .jobs import MAX_RUN_SECONDS, MAX_STEPS, manager, over_budget, session_id

_COMPARE_KEY = "_train_compare"  # session_state: this session's latest comparison run id
_ADDED_KEY = "_train_compare_added"  # the comparison whose saved run was added to the overlay
RUN_FILES = ("run.json", "config.json")  # what the table reads of a run folder
TITLE_CHARS = 110  # the overlay's title (what differs) is cut beyond this
MAX_REASON_CHARS = 300  # of why a run cannot be drawn (the reason may quote its file)
BUSY_MARK = (
    "* Other work ran while it trained (another training run, or other programs using much of the "
    "CPU): its times are slower than on a quiet machine."
)


# --- reading the runs folder (cached per folder state and language) ---------------------------


@st.cache_resource(max_entries=512, show_spinner=False)
def _summary(path: str, stamp: tuple[Any, ...], lang: str) -> SavedRun | Refused:
    """One folder for the table (no curves): shared by every session until a file changes."""
    with st.spinner(tr("Reading the saved runs...")):  # shown only while one is read
        return read_or_refuse(Path(path), curves=False)


@st.cache_resource(max_entries=16, show_spinner=False)
def _with_curves(path: str, stamp: tuple[Any, ...], lang: str) -> SavedRun | Refused:
    """One folder with its curves: only the runs overlaid are read so."""
    return read_or_refuse(Path(path))


def _cached(
    reader: Callable[[str, tuple[Any, ...], str], SavedRun | Refused],
) -> Callable[[Path], SavedRun | Refused]:
    """``reader`` keyed on a folder's files (inode, size, time) and the reader's language."""

    def read(folder: Path) -> SavedRun | Refused:
        return reader(str(folder), folder_stamp(folder, RUN_FILES), language())

    return read


def saved_runs() -> RunsScan:
    """The runs folder now: readable runs, refused folders, how many were left unread."""
    return scan_runs(runs_dir(), read=_cached(_summary))


def read_curves(name: str) -> SavedRun | Refused:
    """The saved run ``name`` with its curves."""
    return _cached(_with_curves)(runs_dir() / name)


# --- the table ------------------------------------------------------------------------------------


def _or_not_recorded(value: float | None, fmt: str) -> str:
    return tr("not recorded") if value is None else fmt.format(value)


def _ms(value: float) -> str:
    """Milliseconds to three figures, without an exponent: 0.812, 12.3, 1,230."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def table_row(r: SavedRun) -> dict[str, str]:
    """One run's row, every cell text (a column of numbers and "not recorded" alike): the
    numbers first, so a narrow screen scrolls past the descriptions, not the results."""
    busy = " *" if r.busy else ""
    q = r.ms_per_update
    per_update = None if q is None else f"{_ms(q[1])} ({_ms(q[0])}–{_ms(q[2])})"
    return {
        tr("run"): r.name,
        tr("recipe: not the default"): listed(recipe_changes(r.recipe)) or tr("the defaults"),
        tr("held-out accuracy"): _or_not_recorded(r.accuracy, "{:.1%}"),
        tr("final loss"): _or_not_recorded(r.loss, "{:.3g}"),
        tr("updates"): _or_not_recorded(r.updates, "{:,}"),
        tr("time (s)"): _or_not_recorded(r.seconds, "{:.1f}") + busy,
        tr("ms per update (quartiles)"): tr("not recorded") if per_update is None else per_update + busy,
        tr("model"): model_text(r),
        tr("task"): task_text(r.task),
    }


def runs_table(scan: RunsScan) -> None:
    if not scan.runs:
        st.info(tr("No saved run yet: train one in the first section (it is saved when it ends)."))
    else:
        st.dataframe(
            [table_row(r) for r in scan.runs],
            hide_index=True,
            width="stretch",
            column_config={tr("run"): st.column_config.TextColumn(pinned=True)},  # seen while scrolling
        )
        st.caption(
            tr(
                "Final loss: the mean of the last 10 updates' batch losses. Time: the updates' own time "
                "added up (evaluations not counted); per update, the median and quartiles, the first "
                "{skip} updates left out. Runs saved before the curves were kept show "
                "\u201cnot recorded\u201d.",
                skip=WARMUP_UPDATES,
            )
            + (" " + tr(BUSY_MARK) if any(r.busy for r in scan.runs) else "")
            + " "
            + busy_method()
        )
    if scan.unread:
        st.caption(
            tr(
                "The newest {most} run folders are shown; {n} older ones are not read.",
                most=len(scan.runs) + len(scan.refused),
                n=scan.unread,
            )
        )
    if scan.refused:
        with st.expander(tr("{n} folder(s) in the runs folder could not be read", n=len(scan.refused))):
            for refused in scan.refused:
                st.text(f"{refused.name}: {refused.reason}")  # file content: shown as text


# --- the overlay ----------------------------------------------------------------------------------


def current_comparison() -> Run | None:
    """This session's latest comparison, if the manager still has it."""
    run_id = st.session_state.get(_COMPARE_KEY)
    return manager().get(run_id) if isinstance(run_id, str) else None


def _live_run(run: Run) -> SavedRun | None:
    """A comparison that is training (or ended without being saved) as a run to draw, from
    what it reported so far; None before it started or once it is saved."""
    info = run.result if isinstance(run.result, dict) else None
    if info is None or "saved" in info or "recipe" not in info:
        return None
    curves = curves_of(run.progress.steps(), run.progress.evals(), "progress")
    return SavedRun.unsaved(str(info["name"]), info["task"], info["cfg"], info["recipe"], curves)


def overlay(chosen: Sequence[str], live: Run | None, smooth: int) -> None:
    """The chosen runs (and a comparison still training) on one set of curves."""
    runs: list[SavedRun] = []
    for name in chosen:
        found = read_curves(name)
        if isinstance(found, Refused):
            # the reason may quote the file (a setting's value): shown inert, never as markdown
            st.warning(
                tr(
                    "{name} cannot be drawn: {reason}",
                    name=plain(name),
                    reason=plain(found.reason, MAX_REASON_CHARS),
                )
            )
        else:
            runs.append(found)
    extra = _live_run(live) if live is not None else None
    if extra is not None:
        runs.append(extra)
    if not runs:
        st.info(tr("Choose two to four runs above to put their curves on one chart."))
        return
    labels = run_labels(runs)
    if extra is not None and not live_final(live):
        labels[-1] = tr("{label} (training)", label=labels[-1])
    curves = [r.curves.smoothed(smooth) for r in runs if r.curves is not None]
    title = comparison_title(runs)
    fig = runs_overlay(
        curves,
        [safe_label(label) for label in labels],
        clips=[r.recipe.clip for r in runs],
        title=safe_label(tr("What differs: {what}", what=title), TITLE_CHARS) if title else None,
    )
    chart(fig, key="runs_overlay")
    if len(runs) == 1:
        st.caption(tr("One run: choose another, or train a comparison below, to see what differs."))


def live_final(run: Run | None) -> bool:
    return run is None or run.is_final


# --- "the same run without ..." -----------------------------------------------------------------


def _updates(base: SavedRun) -> int:
    """The updates a comparison trains: as many as ``base`` took (its recipe's most, if unknown)."""
    return min(base.updates or base.recipe.steps, MAX_STEPS)


def _comparison(
    base: SavedRun, key: str, cfg: EncoderConfig, recipe: Recipe, updates: int
) -> Callable[[RunHandle], None]:
    dev = str(device()[0])

    def free(name: str) -> str:
        return variant_name(name, key, taken=lambda n: os.path.lexists(runs_dir() / n))

    def job(handle: RunHandle) -> None:
        info = {"base": base.name, "key": key, "name": free(base.name), "updates": updates}
        info |= {"task": base.task, "cfg": cfg, "recipe": recipe}
        handle.set_result(info)
        trainer = Trainer(cfg, base.task, recipe, device=dev)  # the seed's weights, batches, held-out set
        roles = RoleRecorder(trainer.probe, trainer.probe_text)  # its heads named as they form, as any run's
        handle.report_eval(step=0, accuracy=trainer.evaluate())
        last: StepStats | None = None
        evaluated = 0

        def on_step(stats: StepStats) -> None:
            nonlocal last
            handle.report_step(**dataclasses.asdict(stats))
            last = stats

        def on_eval(step: int, accuracy: float) -> None:
            nonlocal evaluated
            handle.report_eval(step=step, accuracy=accuracy)
            evaluated = step

        def stop() -> bool:
            return handle.should_stop() or trainer.step_count >= updates

        with watch() as watching:  # what else ran while it trained (saved with the times)
            summary = trainer.run(stop=stop, on_step=on_step, on_eval=on_eval, on_snapshot=roles.add)
        problem = trainer.divergence(last) if summary.reason == "diverged" and last is not None else None
        if problem is not None:  # not saved: its weights are broken; the curves stay on the chart
            handle.fail(problem[0], **problem[1])
            return
        if trainer.step_count == 0:
            return
        acc = trainer.evaluate()
        if evaluated != trainer.step_count:
            handle.report_eval(step=trainer.step_count, accuracy=acc)
        saved = free(base.name)  # free now: another session may have saved one meanwhile
        save_run(
            saved,
            trainer.model.eval(),
            task_tokenizer(base.task),
            task=dataclasses.asdict(base.task),
            recipe=dataclasses.asdict(recipe),
            history={
                **saved_history(
                    handle.progress.steps(),
                    handle.progress.evals(),
                    accuracy=acc,
                    step=trainer.step_count,
                    load=watching.load,
                ),
                "roles": roles.timeline().to_json(),
            },
            examples=example_texts(base.task, 6),
        )
        handle.set_result({**info, "saved": saved})
        handle.set_message(
            "{what}: {accuracy:.1%} held-out accuracy after {n} updates; saved as {name}",
            what=Message(VARIANTS[key]),
            accuracy=acc,
            n=trainer.step_count,
            name=saved,
        )

    return job


def start_comparison(base: SavedRun, key: str) -> Run:
    """Queue ``base`` trained again without ``key`` (`VARIANTS`). ValueError (worded for the
    reader) when it has that off already or its memory estimate is over the limit."""
    change = variant(base, key)
    if change is None:
        raise ValueError(tr("{name} has it off already.", name=base.name))
    cfg, recipe = change
    problem = over_budget(cfg, recipe)
    if problem:
        raise ValueError(problem)
    job = _comparison(base, key, cfg, recipe, _updates(base))
    run = manager().submit(
        f"{base.name}: {VARIANTS[key]}", job, owner=session_id(), time_limit_s=MAX_RUN_SECONDS
    )
    st.session_state[_COMPARE_KEY] = run.id
    return run


def _with(chosen: Sequence[str], name: str) -> list[str]:
    """``chosen`` with ``name`` added at the end (the oldest choices dropped past the limit)."""
    most = view().max_items("train.runs")
    kept = [n for n in chosen if n != name]
    return [*kept[-(most - 1) :], name] if most > 1 else [name]


def _variant_buttons(base: SavedRun | None, active: bool) -> None:
    row = st.container(horizontal=True, gap="small")
    for key, text in VARIANTS.items():
        change = variant(base, key) if base is not None else None
        off = base is not None and change is None
        clicked = row.button(
            tr(text),
            key=f"train.without.{key}",
            disabled=change is None or active,
            help=tr("This run has it off already.") if off else None,
        )
        if clicked and base is not None:
            try:
                start_comparison(base, key)
            except ValueError as err:
                st.warning(str(err))  # worded where it was raised
            else:
                set_values(
                    **{
                        "train.runs": _with(view().get("train.runs") or [], base.name),
                        "train.base": base.name,
                    }
                )
                st.rerun()


def comparisons(scan: RunsScan, chosen: Sequence[str]) -> None:
    """Pick a run; each button trains it again with one thing switched off."""
    st.subheader(tr("The same run, one thing switched off"))
    names = list(chosen) or [r.name for r in scan.runs]
    if not names:
        st.caption(tr("Save a run first: a comparison starts from a saved run."))
        return
    picked = st.selectbox(tr("start from"), names, **bind("train.base", names, fallback=names[0]))
    base = scan.by_name().get(str(picked))
    run = current_comparison()
    active = run is not None and not run.is_final
    if base is not None:
        st.caption(
            tr(
                "Trains {name} again for {n:,} updates (as many as it took) with the same seed, task "
                "and held-out set and one setting switched off, saves it and adds it to the chart.",
                name=base.name,
                n=_updates(base),
            )
        )
    _variant_buttons(base, active)
    if active and st.button(tr("■ Stop the comparison"), key="train.compare.stop"):
        assert run is not None
        run.stop()  # it saves what it trained so far, as a stopped training run does
    if run is not None and not active and run.state == "failed":
        st.caption(
            tr(
                "A comparison that blew up is not saved: its curves stay on the chart while this server keeps the run."
            )
        )


# --- the section ------------------------------------------------------------------------------------


def _status(run: Run) -> None:
    """The comparison's state: queued, its progress, or how it ended."""
    if run.state == "queued":
        st.info(run.message, icon="⏳")
        return
    info = run.result if isinstance(run.result, dict) else {}
    what = tr(VARIANTS.get(str(info.get("key")), "comparison"))
    if run.state in ("running", "stopping"):
        step = (run.progress.last_step() or {}).get("step", 0)
        last = int(info.get("updates", 0) or 0) or max(1, int(step))
        st.progress(
            min(1.0, int(step) / last), text=tr("training {what}: update {step}", what=what, step=step)
        )
    elif run.state == "failed":
        st.error(tr("The comparison stopped: {message}", message=run.message), icon="⚠️")
    else:
        st.success(run.message, icon="✅" if run.state == "done" else "⏹️")


def _adopt_saved(run: Run | None) -> None:
    """Once this session's comparison is saved, put it on the chart beside its base (once)."""
    info = run.result if run is not None and isinstance(run.result, dict) else {}
    saved = info.get("saved")
    if run is None or not isinstance(saved, str) or st.session_state.get(_ADDED_KEY) == run.id:
        return
    st.session_state[_ADDED_KEY] = run.id
    set_values(**{"train.runs": _with(view().get("train.runs") or [], saved)})
    st.rerun()  # the table and the chart read the new folder


def compare_view() -> None:
    st.markdown(
        tr(
            "Every run saved on this server, and two to four of them on one set of curves, each "
            "labelled by what differs between them. Switch one thing off (warm-up, clipping, label "
            "smoothing, dropout, the 1/√d_k scaling), train again with the same seed and data, and "
            "the chart shows what that one thing does."
        )
    )
    scan = saved_runs()
    runs_table(scan)
    names = [r.name for r in scan.runs]
    asked = view().get("train.runs") or []
    missing = [n for n in asked if n not in names]
    if missing:
        st.warning(tr("Not saved on this server: {names}", names=listed([plain(n) for n in missing])))
    kwargs = bind("train.runs", names, fallback=[])
    if st.session_state.get("train.runs") is None:
        st.session_state["train.runs"] = []
    c1, c2 = st.columns([3, 1])
    chosen = c1.multiselect(
        tr("runs on the chart (two to four)"),
        names,
        max_selections=view().max_items("train.runs"),
        placeholder=tr("choose runs"),
        **kwargs,
    )
    smooth_options = list(view().choices("train.smooth"))
    smooth = c2.select_slider(
        tr("average the loss over (updates)"), smooth_options, **bind("train.smooth", smooth_options)
    )

    run = current_comparison()
    active = run is not None and not run.is_final

    @st.fragment(run_every=1.0 if active else None)
    def live() -> None:
        run = current_comparison()
        if run is not None:
            run.heartbeat()
            _status(run)
            _adopt_saved(run)
        overlay([str(n) for n in chosen], run, int(smooth))
        if run is not None and run.is_final and st.session_state.get("_train_compare_was_active"):
            st.session_state["_train_compare_was_active"] = False
            st.rerun()  # the buttons follow the comparison's end
        st.session_state["_train_compare_was_active"] = run is not None and not run.is_final

    live()
    comparisons(scan, [str(n) for n in chosen])
