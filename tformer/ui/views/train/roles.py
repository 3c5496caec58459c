"""The Train page's heads named as they form: the presets for a class (each with what the class
should see), the role timeline of the run training now (under its loss and accuracy, the
snapshot on show marked), and the timeline of a saved run.

The timeline of a run is recorded by its training thread (`tformer.training.role_timeline
.RoleRecorder`, in the run's result as ``"roles"``) and saved in run.json's history beside the
curves (`tformer.ui.views.train.jobs`); a saved run's is read back with every bound checked (`RoleTimeline.from_json`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import streamlit as st

from ....figures.role_timeline import role_timeline_figure
from ....i18n import language, tr
from ....model.model_files import folder_stamp
from ....training.checkpoints import read_run_meta, runs_dir
from ....training.compare import curves_of, listed
from ....training.presets import (
    PRESETS,
    ROLE_PHRASES,
    Preset,
    check_claim,
    claim_sentence,
    first_head_time,
)
from ....training.recipe import model_config
from ....training.role_timeline import MAX_SAVED_SNAPSHOTS, Change, RoleRecorder, RoleTimeline, Rule
from ....training.runs import Run, RunHandle
from ...binding import bind, set_values, view
from ...charts import chart
from ...guard import plain
from ...opening import ROLE_NAMES
from ...sidebar import saved_runs

if TYPE_CHECKING:
    from ....training.trainer import Trainer

# What the role picker offers: the strongest role at the last snapshot, or one role.
ROLE_LABELS = {"auto": "the strongest role at the end", **ROLE_NAMES}
# Each setting a preset sets, named as its widget is (English templates; "d_model" and "d_ff" stay).
SETTING_LABELS = {
    "task": "task", "length": "length", "vocab": "symbols", "shift": "k: rotate right by",
    "held_out": "held out", "n_layers": "layers", "n_heads": "heads", "d_model": "d_model", "d_ff": "d_ff",
    "pos_encoding": "positions", "norm": "LayerNorm", "optimizer": "optimizer", "lr": "peak learning rate",
    "beta1": "β1", "beta2": "β2", "eps": "ε", "weight_decay": "weight decay", "schedule": "schedule",
    "warmup": "warm-up steps", "clip": "clip the gradient norm at", "label_smoothing": "label smoothing",
    "dropout": "dropout", "batch": "batch", "accum": "gradient accumulation", "steps": "most updates",
    "snapshot_every": "snapshot every", "stop_at_99": "stop at 99 % held-out token accuracy",
}  # fmt: skip
# A role's name in the figure's titles ("first anti-diagonal head", "anti-diagonal score").
ROLE_SHORT = {
    "previous": "previous-token", "next": "next-token", "self": "self", "cls": "first-token",
    "duplicate": "duplicate-token", "antidiagonal": "anti-diagonal", "broad": "broad",
}  # fmt: skip
MAX_SENTENCES = 12  # role changes said in words; the rest are counted
MAX_ERROR_CHARS = 300  # of a message about a saved run's file (its text may come from the file)
_OWN = ""  # the preset picker's "your own settings"
Curve = tuple[np.ndarray, np.ndarray]  # (update steps, values)


# --- presets ----------------------------------------------------------------------------------


def _choice(key: str, value: float) -> str:
    """The view state's choice string for a float setting (``"3e-4"`` for 0.0003)."""
    options = view().choices(f"train.{key}")
    found = next((o for o in options if float(o) == value), None)
    if found is None:
        raise ValueError(f"train.{key} offers no choice for {value!r} (choices: {options})")
    return str(found)


def preset_values(preset: Preset) -> dict[str, Any]:
    """The Train page's view-state values that set up ``preset`` (task, model, recipe)."""
    t, r, m = preset.task, preset.recipe, preset.model
    values: dict[str, Any] = {
        "task": t.name, "length": t.length, "vocab": t.vocab, "shift": t.shift,
        "held_out": _choice("held_out", t.held_out),
        "n_layers": m["n_layers"], "n_heads": m["n_heads"], "d_model": m["d_model"],
        "d_ff": m.get("d_ff"), "pos_encoding": m.get("pos_encoding", "sinusoidal"), "norm": m.get("norm", "pre"),
        "optimizer": r.optimizer, "lr": _choice("lr", r.lr), "beta1": _choice("beta1", r.betas[0]),
        "beta2": _choice("beta2", r.betas[1]), "eps": _choice("eps", r.eps),
        "weight_decay": _choice("weight_decay", r.weight_decay), "schedule": r.schedule, "warmup": r.warmup,
        "clip": _choice("clip", r.clip), "label_smoothing": _choice("label_smoothing", r.label_smoothing),
        "dropout": _choice("dropout", r.dropout), "batch": r.batch, "accum": r.accum, "steps": r.steps,
        "snapshot_every": r.snapshot_every, "stop_at_99": preset.stop_at_99,
    }  # fmt: skip
    return {f"train.{k}": v for k, v in values.items()}


def _apply_preset() -> None:
    """The preset picker's follow-up: set every setting the chosen preset names."""
    key = view().get("train.preset")
    if key in PRESETS:
        set_values(**preset_values(PRESETS[key]))


def _differs(preset: Preset) -> list[str]:
    """The settings (view-state keys, without ``train.``) that no longer match ``preset``."""
    v = view()
    return [k.removeprefix("train.") for k, value in preset_values(preset).items() if v.get(k) != value]


def preset_controls() -> Preset | None:
    """The preset picker, what its preset lets the class see, and whether the settings below
    still are the preset's. Returns the preset while they are."""
    options = [_OWN, *PRESETS]
    shown = {_OWN: tr("your own settings (below)")} | {k: tr(p.title) for k, p in PRESETS.items()}
    key = st.selectbox(
        tr("a run for a class"),
        options,
        format_func=lambda k: shown.get(k, k),
        **bind("train.preset", options, then=_apply_preset),
    )
    preset = PRESETS.get(str(key))
    if preset is None:
        return None
    differs = _differs(preset)
    if differs:
        st.warning(
            tr(
                "The settings below differ from the preset ({settings}): what it says the class will "
                "see may not happen.",
                settings=listed([f"“{tr(SETTING_LABELS[k])}”" for k in differs]),
            )
        )
        st.button(tr("Use the preset's settings again"), key="train.preset_restore", on_click=_apply_preset)
        return None
    template, values = claim_sentence(preset)
    values["role"] = tr(values["role"])
    st.info(
        tr(
            "**What the class should see.** {claim} {shows}",
            claim=tr(template, **values),
            shows=tr(preset.shows),
        ),
        icon="🎓",
    )
    first, whole = preset.cpu_seconds
    st.caption(
        tr(
            "This preset trains {steps:,} updates without stopping at 99 % (the heads keep sharpening), "
            "a snapshot every {every} updates, seed {seed}: a run of it repeats the run the sentence "
            "was measured on. On a core of its own the first head forms after about {first:.0f} s and "
            "the run ends after about {whole:.0f} s (the training thread's CPU time, measured when the "
            "preset was made); a busy server takes longer, and the page says how long this run took.",
            steps=preset.recipe.steps,
            every=preset.recipe.snapshot_every,
            seed=preset.recipe.seed,
            first=first,
            whole=whole,
        )
    )
    return preset


def _run_preset(run: Run) -> Preset | None:
    """The preset whose task, model and recipe ``run`` trained with, if any."""
    trainer = run.result.get("trainer") if isinstance(run.result, dict) else None
    if trainer is None:
        return None
    for preset in PRESETS.values():
        cfg = model_config(preset.task, **preset.model)
        cfg = dataclasses.replace(cfg, dropout=preset.recipe.dropout, seed=preset.recipe.seed)
        if trainer.task == preset.task and trainer.recipe == preset.recipe and trainer.cfg == cfg:
            return preset
    return None


# --- the timeline -------------------------------------------------------------------------------


def role_recorder(
    handle: RunHandle, old: Mapping[str, Any] | None, trainer: Trainer
) -> tuple[RoleRecorder, Callable[[int, Any], None]]:
    """For a training job: the run's role record (a continued run's goes on with its
    predecessor's) and the function that reports a snapshot and scores it."""
    found = old.get("roles") if old else None
    roles = found if isinstance(found, RoleRecorder) else RoleRecorder(trainer.probe, trainer.probe_text)

    def snapshot(step: int, array: Any) -> None:
        handle.report_snapshot(step, array)
        roles.add(step, array)

    return roles, snapshot


def _curves(steps: object, evals: object) -> tuple[Curve | None, Curve | None, str | None]:
    """The loss and the held-out accuracy of a run's records, read by `curves_of` (the runs
    table's reader: every entry's type, range and order checked; a saved history is untrusted),
    and why they cannot be drawn, worded for the reader, when they cannot."""
    try:
        c = curves_of(steps, evals)
    except (ValueError, TypeError, OverflowError) as err:  # OverflowError: an int past float's range
        return None, None, str(err)
    loss = (c.step, c.loss) if c.loss is not None and c.step.size else None
    accuracy = (c.eval_step, c.accuracy) if c.accuracy is not None and c.eval_step.size else None
    return loss, accuracy, None


def change_sentence(c: Change) -> str:
    """One role change in words, in the reader's language."""
    if c.kind == "formed":
        template = "layer {layer} head {head} became {role} at update {step:,} (score {score:.2f})"
    else:
        template = "layer {layer} head {head} stopped being {role} at update {step:,} (score {score:.2f})"
    role = tr(ROLE_PHRASES.get(c.role, c.role))
    return tr(template, layer=c.layer, head=c.head, role=role, step=c.step, score=c.score)


def _role_picker(key: str) -> str:
    """The role picker bound to the view state's ``key`` (a share link opens the same role)."""
    options = list(view().choices(key))
    # labels translated now, in the script run: a format_func may be called later, elsewhere
    shown = {role: tr(ROLE_LABELS[role]) for role in options}
    return str(
        st.selectbox(tr("color the heads by"), options, format_func=shown.__getitem__, **bind(key, options))
    )


def draw_timeline(
    timeline: RoleTimeline,
    *,
    loss: tuple[np.ndarray, np.ndarray] | None,
    accuracy: tuple[np.ndarray, np.ndarray] | None,
    final: bool,
    current: int | None,
    key: str,
    role_key: str,
) -> list[Change]:
    """The role picker (bound to the view state's ``role_key``), the timeline figure (``key``),
    the role changes in words and the rule; returns the changes (under the default `Rule`)."""
    choice = _role_picker(role_key)
    role = (timeline.strongest_role() or "previous") if choice == "auto" else choice
    changes = timeline.changes(final=final)
    formed = [
        (c.layer, c.head, c.step, change_sentence(c))
        for c in changes
        if c.role == role and c.kind == "formed"
    ]
    fig = role_timeline_figure(
        np.array(timeline.steps), timeline.scores[role], role=tr(ROLE_SHORT[role]), formed=formed,
        loss=loss, accuracy=accuracy, current=current,
    )  # fmt: skip
    chart(fig, key=key)
    if changes:
        lines = [change_sentence(c) for c in changes[:MAX_SENTENCES]]
        if len(changes) > MAX_SENTENCES:
            lines.append(tr("… and {n} more", n=len(changes) - MAX_SENTENCES))
        st.markdown("\n".join(f"- {line}" for line in lines))
    else:
        st.caption(tr("No head has taken a role yet."))
    rule = Rule()
    st.caption(
        tr(
            "A head's score for a role is the Head finder's: the mean weight its rows put on the key the "
            "role names, on the input the snapshots show ({n} snapshots). A head takes a role when its "
            "score reaches {on} and stays at {off} or more for {held} snapshots in a row (or until a "
            "finished run's end), so one spike names nothing; it gives the role up by falling under "
            "{off} and staying under {on} as long. “broad” is every untrained head's and is never named.",
            n=len(timeline),
            on=rule.on,
            off=rule.off,
            held=rule.held,
        )
    )
    return changes


def roles_view(run: Run, steps: Sequence[Mapping[str, Any]], evals: Sequence[Mapping[str, Any]]) -> None:
    """The role timeline of ``run`` (this session's training run), under its curves (``steps``
    and ``evals``: what it reported, as the page's curves read it; polled every second while it
    trains, so not copied again here); with the snapshot the slider below shows marked, and for a
    preset's run whether its claim held."""
    recorder = run.result.get("roles") if isinstance(run.result, dict) else None
    if not isinstance(recorder, RoleRecorder) or not len(recorder):
        return
    timeline = recorder.timeline()
    snaps = run.progress.snapshots()
    picked = st.session_state.get("train.snap_slider")
    current = snaps[min(int(picked), len(snaps) - 1)].step if isinstance(picked, int) and snaps else None
    st.markdown(tr("**Heads named as they form**"))
    loss, accuracy, _ = _curves(steps, evals)  # this server's own records
    draw_timeline(
        timeline,
        loss=loss,
        accuracy=accuracy,
        final=run.is_final,
        current=current if current is not None else (timeline.steps[-1] if timeline.steps else None),
        key="roles",
        role_key="train.role",
    )
    preset = _run_preset(run)
    if preset is not None and run.is_final:
        problems = check_claim(preset.claim, timeline, evals)
        if problems:
            st.warning(
                tr(
                    "This run did not do all the preset says: {problems}.",
                    problems=tr("; ").join(tr(t, **v) for t, v in problems),
                )
            )
        else:
            st.success(tr("This run did what the preset says."))
        took = first_head_time(preset.claim, timeline, steps)
        if took is not None:
            st.caption(
                tr(
                    "Here the first head of layer {layer} took the role at update {step:,}, after {seconds:.0f} s "
                    "of training (the updates' own times added up; evaluations and snapshots left out).",
                    layer=preset.claim.layer,
                    step=took[0],
                    seconds=took[1],
                )
            )


@dataclass(frozen=True)
class SavedTimeline:
    """What "Heads of a saved run" draws of one run.json: its timeline (None: saved without one),
    its loss and accuracy, and why its file or its curves cannot be read (worded for the reader)."""

    timeline: RoleTimeline | None = None
    loss: Curve | None = None
    accuracy: Curve | None = None
    error: str | None = None  # the file or its timeline cannot be read: nothing is drawn
    curves_error: str | None = None  # the curves cannot be read: the timeline is drawn alone


@st.cache_resource(max_entries=16, show_spinner=False)
def _saved_timeline(name: str, stamp: tuple[Any, ...], lang: str) -> SavedTimeline:
    """Run ``name``'s timeline and curves, parsed once per state of its run.json (``stamp``)
    and language and shared by every session: a rerun of the page reads nothing again."""
    try:
        history = read_run_meta(name).get("history")
        data = history.get("roles") if isinstance(history, dict) else None
        timeline = None if data is None else RoleTimeline.from_json(data)
    except (ValueError, OSError) as err:  # CheckpointError is a ValueError
        return SavedTimeline(error=str(err))
    if timeline is None or not len(timeline):
        return SavedTimeline()
    assert isinstance(history, dict)
    loss, accuracy, problem = _curves(history.get("steps"), history.get("evals"))
    return SavedTimeline(timeline, loss, accuracy, curves_error=problem)


def saved_timeline(name: str) -> SavedTimeline:
    """The saved run ``name``'s `SavedTimeline`, read again only when its run.json changed."""
    return _saved_timeline(name, folder_stamp(runs_dir() / name, ("run.json",)), language())


def saved_roles_view() -> None:
    """A saved run's role timeline, under its loss and accuracy when its file keeps them."""
    names = saved_runs()  # the sidebar's list: read again only when the runs folder changed
    with st.expander(tr("Heads of a saved run"), expanded=bool(view().get("train.roles_run"))):
        if not names:
            st.caption(tr("No run is saved yet: a run is saved when it ends."))
            return
        options = [_OWN, *names]
        none = tr("none")
        name = st.selectbox(
            tr("saved run"),
            options,
            format_func=lambda n: none if n == _OWN else n,
            **bind("train.roles_run", options),
        )
        if not name:
            return
        saved = saved_timeline(str(name))
        if saved.error is not None:  # its text may come from the file: shown inert
            st.error(tr("This run's file cannot be read: {error}", error=plain(saved.error, MAX_ERROR_CHARS)))
            return
        if saved.timeline is None:
            st.info(tr("This run was saved without a role timeline (before they were recorded)."))
            return
        draw_timeline(
            saved.timeline,
            loss=saved.loss,
            accuracy=saved.accuracy,
            final=True,
            current=None,
            key="saved_roles",
            role_key="train.saved_role",
        )
        if saved.curves_error is not None:
            st.caption(
                tr(
                    "Its loss and accuracy are not drawn: {error}",
                    error=plain(saved.curves_error, MAX_ERROR_CHARS),
                )
            )
        st.caption(
            tr("Scored on this input (a saved run keeps at most {n} snapshots):", n=MAX_SAVED_SNAPSHOTS)
        )
        st.code(saved.timeline.text, language=None)  # from the run's file: shown as text, never as markdown


__all__ = ["draw_timeline", "preset_controls", "roles_view", "saved_roles_view"]
