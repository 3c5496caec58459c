"""Train a small encoder on a task that needs attention and watch its heads form: the whole
recipe switchable, live curves and attention snapshots, and the trained model saved for every
page to open."""

import streamlit as st

from tformer import ui
from tformer.figures.training import heads_race_figure
from tformer.i18n import tr

SECTIONS = {
    "train": "Train one model",
    "heads": "How many heads?",
    "memory": "Memory of a step",
    "compare": "Compare runs",
    "overfit": "Heads and overfitting",
    "precision": "Mixed precision",
}  # English templates (ui.section translates)

with ui.frame(__file__) as fr:
    from tformer.ui.views import train as view  # after the frame: a view loads torch

    part = ui.section("train.section", SECTIONS, label="what to train")
    if part == "memory":
        view.memory_view()  # measured on request; nothing of a run
    elif part == "compare":
        view.compare_view()  # the saved runs side by side
    elif part == "overfit":
        view.overfit_view()  # a grid trained in the background, shared by every visitor
    elif part == "precision":
        view.precision_view()  # measured on request, in the background
    else:
        if part == "train":
            view.preset_controls()  # a run for a class: fills the settings below, says what to watch for
        spec = view.task_controls()
        cfg = view.model_controls(spec) if spec is not None else None
        recipe = view.recipe_controls()
        stop_at = 0.99 if fr.view.get("train.stop_at_99") else None
        kind = "train" if part == "train" else "race"
        ready = (
            spec is not None and cfg is not None and recipe is not None and view.run_budget(cfg, recipe, kind)
        )
        run = view.current_run(kind)
        active = run is not None and not run.is_final

        c1, c2, c3, c4 = st.columns(4)
        start_label = tr("▶ Start training") if part == "train" else tr("▶ Train 1, 2, 4 and 8 heads")
        if c1.button(
            start_label, key="train.start", disabled=not ready or active, type="primary", width="stretch"
        ):
            assert spec is not None
            assert cfg is not None
            assert recipe is not None
            try:
                if part == "train":
                    view.start_training(cfg, spec, recipe, stop_at)
                else:
                    view.start_race(cfg, spec, recipe, stop_at)
            except ValueError as err:
                st.warning(str(err))  # worded in the reader's language where it was raised
            else:
                st.rerun()
        if c2.button(tr("■ Stop"), key="train.stop", disabled=not active, width="stretch"):
            assert run is not None
            run.stop()
        resumable = part == "train" and run is not None and run.is_final and isinstance(run.result, dict)
        if c3.button(
            tr("Continue training"),
            key="train.continue",
            disabled=not resumable or not ready,
            width="stretch",
        ):
            assert spec is not None
            assert cfg is not None
            assert recipe is not None
            try:
                view.start_training(cfg, spec, recipe, stop_at, resume=True)
            except ValueError as err:
                st.warning(str(err))
            else:
                st.rerun()
        saved = view.saved_name(run) if part == "train" else None
        if c4.button(tr("Open this model"), key="train.open", disabled=saved is None, width="stretch"):
            assert saved is not None
            view.open_saved_run(saved)  # the Attention page, with the run and its first task input

        @st.fragment(run_every=1.0 if active else None)
        def live() -> None:
            run = view.current_run(kind)
            if run is None:
                st.info(
                    tr(
                        "Press start. Training runs on this server in the background: switch pages, come back."
                    )
                )
                return
            run.heartbeat()
            view.run_status(run)
            if part == "train":
                view.live_view(run)
            else:
                evals = run.progress.evals()
                by_heads: dict[int, list[tuple[int, float]]] = {}
                for e in evals:
                    by_heads.setdefault(int(e["heads"]), []).append((int(e["step"]), float(e["accuracy"])))
                seconds, spread, notes = view.race_times(evals)
                ui.chart(heads_race_figure(by_heads, seconds, spread_by_heads=spread), key="race")
                for note in notes:
                    st.info(note)
                st.caption(
                    tr(
                        "The same task, d_model and recipe with 1, 2, 4 and 8 heads: more heads are more "
                        "subspaces to attend in, each smaller (d_head = d_model / heads). Held-out accuracy "
                        "against updates, and the time one update takes."
                    )
                    + " "
                    + view.race_caption()
                )
            if run.is_final and st.session_state.get("_train_was_active"):
                st.session_state["_train_was_active"] = False
                st.rerun()  # the buttons follow the run's end
            st.session_state["_train_was_active"] = not run.is_final

        live()
        if part == "train":
            view.saved_roles_view()  # a saved run's heads, named as they formed
