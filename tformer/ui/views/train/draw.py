"""The Train page's controls (task, model, recipe, each setting with one sentence on what it
does) and its live view of a run (progress, curves, attention snapshots).

Every word shown goes through `tformer.i18n.tr` here, in the script run: the task and recipe
texts of the core modules are English templates, and a run's messages are worded when read
(`tformer.training.runs.Message`)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import streamlit as st

from ....figures.attention import attention_heatmap
from ....figures.layout import HALF_WIDTH
from ....figures.training import schedule_figure, training_curves
from ....i18n import tr
from ....model.config import EncoderConfig
from ....timing import Load
from ....training.recipe import Recipe, model_config, recipe_help, schedule_curve
from ....training.runs import Run
from ....training.tasks import TASKS, TaskSpec, as_text, held_out_set, task_targets
from ...binding import bind, bind_number, set_values, view
from ...caches import run_meta
from ...charts import chart
from ...timing_view import busy_method, load_note
from .jobs import (
    MAX_RUN_SECONDS,
    MAX_TRAIN_BYTES,
    MAX_TRAIN_PARAMS,
    RACE_WARMUP_UPDATES,
    describe_queue,
    last_summary,
    max_running,
    memory_needed,
    over_budget,
)
from .roles import roles_view

HELP = recipe_help()  # English templates: shown as tr(HELP[name])
TASK_NAMES = {"copy": "copy", "reverse": "reverse", "sort": "sort", "shift": "shift", "lookup": "lookup"}
POSITIONS = {"sinusoidal": "sinusoidal", "learned": "learned", "none": "none"}
NORMS = {"pre": "pre-norm", "post": "post-norm"}
SCHEDULE_NAMES = {"noam": "warm-up, then 1/√step", "constant": "warm-up, then constant"}
# the progress bar's line: (state, whether an accuracy was measured) -> template
PROGRESS_LINES = {
    ("running", False): "training (running): update {step}",
    ("running", True): "training (running): update {step} · held-out accuracy {accuracy:.1%}",
    ("stopping", False): "training (stopping): update {step}",
    ("stopping", True): "training (stopping): update {step} · held-out accuracy {accuracy:.1%}",
}
STATE_NAMES = {"done": "done", "stopped": "stopped", "failed": "failed", "running": "running"}


def _s(key: str) -> str:
    return f"train.{key}"


def _labels(names: dict[str, str]) -> Any:
    """A widget's ``format_func``: each stored value's label, translated now (in the script
    run: a format_func may be called later from a thread that has no reader's language)."""
    shown = {value: tr(label) for value, label in names.items()}
    return lambda value: shown.get(value, str(value))


def _pick(col: Any, label: str, key: str, help_key: str | None = None) -> Any:
    """A select slider over a field's choices, with the recipe's sentence under it."""
    options = list(view().choices(_s(key)))
    value = col.select_slider(label, options, **bind(_s(key), options))
    if help_key:
        col.caption(tr(HELP[help_key]))
    return value


def task_controls() -> TaskSpec | None:
    c1, c2, c3, c4 = st.columns([2, 1, 1, 1])
    names = list(TASKS)
    task = c1.selectbox(tr("task"), names, format_func=_labels(TASK_NAMES), **bind(_s("task"), names))
    length = c2.number_input(tr("length"), **bind_number(_s("length")))
    vocab = c3.number_input(tr("symbols"), **bind_number(_s("vocab")))
    held = c4.select_slider(
        tr("held out"),
        list(view().choices(_s("held_out"))),
        **bind(_s("held_out"), list(view().choices(_s("held_out")))),
    )
    shift = 1
    if task == "shift":
        shift = st.number_input(tr("k: rotate right by"), **bind_number(_s("shift")))
    st.caption(tr(TASKS[str(task)]))
    try:
        spec = TaskSpec(str(task), int(length), int(vocab), min(int(shift), int(length) - 1), float(held))
    except ValueError as err:
        st.error(tr("This task cannot be made: {error}.", error=err))
        return None
    x, _ = held_out_set(spec, 3)
    source, target = tr("input"), tr("target")
    rows = [{source: as_text(a), target: as_text(task_targets(spec, a[None])[0])} for a in x]
    st.dataframe(rows, hide_index=True, width="stretch")
    return spec


def model_controls(spec: TaskSpec) -> EncoderConfig | None:
    st.markdown(
        tr("**The model** (the same settings as the sidebar's from-scratch encoder, sized for training)")
    )
    c1, c2, c3, c4, c5, c6 = st.columns(6)
    n_layers = c1.number_input(tr("layers"), **bind_number(_s("n_layers")))
    n_heads = c2.number_input(tr("heads"), **bind_number(_s("n_heads")))
    d_model = c3.number_input("d_model", **bind_number(_s("d_model")))
    d_ff = c4.number_input("d_ff", placeholder="4 x d_model", **bind_number(_s("d_ff")))
    pos = c5.selectbox(
        tr("positions"),
        tuple(POSITIONS),
        format_func=_labels(POSITIONS),
        **bind(_s("pos_encoding")),
    )
    norm = c6.selectbox("LayerNorm", tuple(NORMS), format_func=_labels(NORMS), **bind(_s("norm")))
    try:
        cfg = model_config(
            spec,
            int(n_layers),
            int(n_heads),
            int(d_model),
            None if d_ff is None else int(d_ff),
            str(pos),
            str(norm),
        )
    except ValueError as err:
        st.error(tr("This shape is not valid: {error}.", error=err))
        return None
    if cfg.n_params() > MAX_TRAIN_PARAMS:
        st.error(
            tr(
                "{millions:.1f} M parameters: the limit for training here is {limit:.0f} M.",
                millions=cfg.n_params() / 1e6,
                limit=MAX_TRAIN_PARAMS / 1e6,
            )
        )
        return None
    st.caption(tr("{n:,} parameters, d_head = {d_head}", n=cfg.n_params(), d_head=cfg.d_head))
    return cfg


def recipe_controls() -> Recipe | None:
    with st.expander(
        tr("The recipe: optimizer, schedule, clipping, label smoothing, dropout, batch"), expanded=False
    ):
        c1, c2, c3 = st.columns(3)
        opt = c1.radio(
            tr("optimizer"), ("adamw", "adam"), horizontal=True, **bind(_s("optimizer"), ["adamw", "adam"])
        )
        c1.caption(tr(HELP["optimizer"]))
        lr = _pick(c2, tr("peak learning rate"), "lr", "lr")
        sched = c3.radio(
            tr("schedule"),
            tuple(SCHEDULE_NAMES),
            horizontal=True,
            format_func=_labels(SCHEDULE_NAMES),
            **bind(_s("schedule"), list(SCHEDULE_NAMES)),
        )
        c3.caption(tr(HELP["schedule"]))
        c1, c2, c3 = st.columns(3)
        b1 = _pick(c1, "β1", "beta1")
        b2 = _pick(c2, "β2", "beta2")
        eps = _pick(c3, "ε", "eps")
        st.caption(tr(HELP["betas"]) + " " + tr(HELP["eps"]))
        c1, c2, c3 = st.columns(3)
        warmup = c1.number_input(tr("warm-up steps"), **bind_number(_s("warmup")))
        c1.caption(tr(HELP["warmup"]))
        clip = _pick(c2, tr("clip the gradient norm at"), "clip", "clip")
        wd = _pick(c3, tr("weight decay"), "weight_decay", "weight_decay")
        c1, c2, c3 = st.columns(3)
        smooth = _pick(c1, tr("label smoothing"), "label_smoothing", "label_smoothing")
        drop = _pick(c2, tr("dropout"), "dropout", "dropout")
        steps = c3.number_input(tr("most updates"), **bind_number(_s("steps")))
        c3.caption(tr(HELP["steps"]))
        c1, c2, c3 = st.columns(3)
        batch = c1.number_input(tr("batch"), **bind_number(_s("batch")))
        c1.caption(tr(HELP["batch"]))
        accum = c2.number_input(tr("gradient accumulation"), **bind_number(_s("accum")))
        c2.caption(tr(HELP["accum"]))
        snap = c3.number_input(tr("snapshot every"), **bind_number(_s("snapshot_every")))
        c3.caption(tr(HELP["snapshot_every"]))
        try:
            recipe = Recipe(
                optimizer=str(opt), lr=float(lr), betas=(float(b1), float(b2)), eps=float(eps),
                weight_decay=float(wd), schedule=str(sched), warmup=int(warmup), clip=float(clip),
                label_smoothing=float(smooth), dropout=float(drop), batch=int(batch), accum=int(accum),
                steps=int(steps), snapshot_every=int(snap),
            )  # fmt: skip
        except ValueError as err:
            st.error(tr("This recipe cannot be used: {error}.", error=err))
            return None
        x, y = schedule_curve(recipe)
        chart(schedule_figure(x, y, warmup=recipe.warmup, width=HALF_WIDTH), key="schedule")
    st.checkbox(tr("stop at 99 % held-out token accuracy"), **bind(_s("stop_at_99")))
    return recipe


def run_budget(cfg: EncoderConfig, recipe: Recipe, kind: str = "train") -> bool:
    """The run's memory estimate against its limit, and the time limit, in one line; an
    error instead when the estimate is over the limit. True when the run may start."""
    problem = over_budget(cfg, recipe, kind)
    if problem:
        st.error(problem)
        return False
    st.caption(
        tr(
            "Needs about {needed:,.0f} MB while training (the limit for one run here is {limit:,.0f} MB; "
            "at most {most} runs train at once). A run stops after {minutes:g} minutes, watched or not, "
            "and is saved.",
            needed=memory_needed(cfg, recipe, kind) / 2**20,
            limit=MAX_TRAIN_BYTES / 2**20,
            most=max_running(),
            minutes=MAX_RUN_SECONDS / 60,
        )
    )
    return True


def open_saved_run(name: str) -> None:
    """Make the saved run ``name`` the model of every page, with its first task input as the
    text, and open the Attention page (does not return)."""
    from ...sidebar import mark_run_text

    values: dict[str, Any] = {"source": "run", "run": name}
    try:
        examples = run_meta(name).get("examples") or []
    except ValueError:
        examples = []
    if examples and isinstance(examples[0], str):
        values["text"] = examples[0]
    set_values(**values)
    mark_run_text(name)
    st.switch_page("pages/attention.py")


def run_status(run: Run) -> None:
    """The run's state in one line, and its progress bar."""
    summary = last_summary(run)
    state = run.state
    if state == "queued":
        st.info(describe_queue(run), icon="⏳")
        return
    acc = summary["accuracy"]
    if state in ("running", "stopping"):
        last = run.result.get("last") if isinstance(run.result, dict) else None
        line = tr(PROGRESS_LINES[state, acc is not None], step=summary["step"], accuracy=acc)
        st.progress(min(1.0, summary["step"] / last) if last else 0.0, text=line)
    elif state == "failed":
        st.error(tr("The run stopped: {message}", message=run.message), icon="⚠️")
    else:
        st.success(run.message or tr(STATE_NAMES.get(state, state)), icon="✅" if state == "done" else "⏹️")


def live_view(run: Run) -> None:
    """Curves and the attention snapshots of ``run``."""
    steps, evals = run.progress.steps(), run.progress.evals()
    recipe = (
        run.result["trainer"].recipe if isinstance(run.result, dict) and "trainer" in run.result else None
    )
    chart(training_curves(steps, evals, clip=recipe.clip if recipe else None, target=0.99), key="curves")
    roles_view(run, steps, evals)  # every head's role over the snapshots, under the same curves
    snaps = run.progress.snapshots()
    if not snaps:
        return
    trainer = run.result["trainer"] if isinstance(run.result, dict) and "trainer" in run.result else None
    labels = (
        list(trainer.probe_text.split())
        if trainer is not None
        else [str(i) for i in range(snaps[0].array.shape[-1])]
    )
    n_layers, n_heads = snaps[0].array.shape[:2]
    c1, c2, c3 = st.columns([3, 1, 1])
    index = len(snaps) - 1
    if len(snaps) > 1:  # the newest by default; slide back to watch the head form
        index = c1.slider(tr("snapshot"), 0, len(snaps) - 1, len(snaps) - 1, key="train.snap_slider")
    layer = int(c2.selectbox(tr("layer"), range(n_layers), key="train.snap_layer") or 0)
    head = int(c3.selectbox(tr("head"), range(n_heads), key="train.snap_head") or 0)
    snap = snaps[min(int(index), len(snaps) - 1)]
    pattern = np.asarray(snap.array)[layer, head]
    chart(
        attention_heatmap(
            pattern,
            labels,
            title=tr(
                "after {step} updates: layer {layer}, head {head} on a held-out input",
                step=snap.step,
                layer=layer,
                head=head,
            ),
        ),
        key="snapshot",
    )


# --- the Train page's heads race ----------------------------------------------------------------


def race_times(
    evals: list[dict[str, Any]],
) -> tuple[dict[int, float], dict[int, tuple[float, float]], list[str]]:
    """From a heads race's evaluations (`tformer.ui.views.train.jobs` reports each head count's
    update times so far): each head count's median seconds per update, its quartiles, and the
    notes to show under the chart (other work that ran; head counts whose spreads overlap)."""
    last: dict[int, dict[str, Any]] = {}
    for e in evals:
        if "seconds_per_step" in e:
            last[int(e["heads"])] = e
    seconds = {h: float(e["seconds_per_step"]) for h, e in last.items()}
    spread = {
        h: (float(e["seconds_q1"]), float(e["seconds_q3"]))
        for h, e in last.items()
        if "seconds_q1" in e and "seconds_q3" in e
    }
    load = Load()
    for e in last.values():
        work = tuple(_work_item(k) for k in str(e.get("other_work", "")).split("|") if k)
        share = e.get("other_cpu")
        load = load.merge(
            Load(float(e.get("seconds_watched", 0.0)), None if share is None else float(share), work)
        )
    notes = [n for n in (load_note(load),) if n]
    heads = sorted(spread)
    overlaps = [
        tr("{a} and {b} heads", a=a, b=b)
        for a, b in itertools.pairwise(heads)
        if spread[a][0] <= spread[b][1] and spread[b][0] <= spread[a][1]
    ]
    if overlaps:
        notes.append(
            tr(
                "The error bars of {pairs} overlap: their time per update does not differ measurably on "
                "this machine.",
                pairs=", ".join(overlaps),
            )
        )
    return seconds, spread, notes


def _work_item(text: str) -> tuple[int, str]:
    """One "id:kind" entry of a race evaluation's ``other_work``."""
    head, _, kind = text.partition(":")
    return (int(head), kind) if head.isdigit() and kind else (0, text)


def race_caption() -> str:
    """How the race's time per update is measured."""
    return (
        tr(
            "Time per update: the median of each update's own time (evaluations not counted), leaving "
            "out the first {skip} updates (the warm-up); the error bars span the quartiles.",
            skip=RACE_WARMUP_UPDATES,
        )
        + " "
        + busy_method()
    )
