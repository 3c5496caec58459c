"""How the Why-attention page draws its three sections: the layers stepping through the text
and their measured time, the gradients over distance, and the long-range recall trained in the
background with the attention head looking back."""

from __future__ import annotations

import streamlit as st

from ....analysis.why import LayerRun
from ....figures.why import (
    StripPanel,
    first_weight_figure,
    gradient_figure,
    look_back_figure,
    path_length_figure,
    recall_figure,
    state_strip_figure,
    time_figure,
)
from ....i18n import tr
from ....training.recall import RecallResult, RecallSettings
from ...binding import bind, bind_number, view
from ...charts import chart
from ...context import PageContext, formula, source
from ...guard import plain
from ...state import WHY_SCALES
from ...stepper import step_slider
from ...timing_view import busy_method
from .. import costs
from . import compute
from .compute import (
    D_HIDDEN,
    KIND_NAMES,
    PROTOCOLS,
    RECALL_KINDS,
    numbers,
    power,
    probe_tokens,
    recall_board,
    recall_progress,
    recall_run,
    recall_settings,
    start_recall,
    sweep_settings,
    why_path_lengths,
)

LAYERS = ("rnn", "gru", "attention")


def intro(ctx: PageContext) -> None:
    """The page's opening paragraph, with the text's length and width."""
    st.markdown(
        tr(
            "Before attention, sequence models were recurrent: an RNN reads a sentence one token at a "
            "time and carries everything it has read in one state vector. Three things follow, each "
            "measured below on your text's {n} tokens (the model's token vectors, {d} numbers each): the "
            "steps must run one after another; the gradient that trains the early tokens crosses every "
            "step in between and shrinks or grows on the way; and a token far back is hard to recall. "
            "One attention layer links any two positions in one step.",
            n=ctx.capture.n_pos,
            d=int(ctx.capture["embed"].shape[1]),
        )
    )


def steps_section(ctx: PageContext, runs: dict[str, LayerRun], scale: float) -> None:
    """Sequential or parallel: the three layers' formulas, their states after step k, and the
    measured time against length."""
    n, labels = ctx.capture.n_pos, ctx.labels
    st.markdown(tr("**tanh RNN**: step t needs the state of step t − 1"))
    formula("analysis.why.rnn_cell", label="The tanh RNN's step: the code")
    st.markdown(tr("**GRU**: the same order, with gates"))
    formula("analysis.why.gru_cell", label="The GRU's step: the code")
    st.markdown(tr("**Attention**: every position at once"))
    formula("model.attention.scaled_dot_product_attention", label="The attention layer: the code")
    k = step_slider(
        "why.step",
        n,
        label="step of the recurrent layers",
        single="One token: every layer needs a single step.",
    )
    panels = [
        StripPanel("rnn", runs["rnn"].states, k),
        StripPanel("gru", runs["gru"].states, k),
        StripPanel("attention", runs["attention"].states, n),
    ]
    chart(state_strip_figure(panels, labels), key="why_strips")
    st.caption(
        tr(
            "Each column is one position, each row one of the {d} units of the layer's state "
            "(blue below 0, red above). After step {k} of {n} the recurrent layers have read tokens "
            "0 to {last} (“{token}”): the tanh RNN's state after step {k} begins {rnn}, the GRU's "
            "{gru}; the {rest} positions to the right need {rest} more steps, one after another. The "
            "attention layer computed all {n} positions in one step. Sequential steps for this text: "
            "tanh RNN {rnn_steps}, GRU {gru_steps}, attention {att_steps}. Recurrent weight scale "
            "s = {scale:g} (the Gradients section sets it).",
            d=D_HIDDEN,
            k=k,
            n=n,
            last=k - 1,
            token=plain(labels[k - 1]),
            rnn=numbers(runs["rnn"].states[k - 1]),
            gru=numbers(runs["gru"].states[k - 1]),
            rest=n - k,
            rnn_steps=runs["rnn"].steps,
            gru_steps=runs["gru"].steps,
            att_steps=runs["attention"].steps,
            scale=scale,
        )
    )
    source("analysis.why.hidden_states", label="How the strips were computed: the code")
    _time_against_length()


def _time_against_length() -> None:
    """The tanh RNN, the GRU and one attention layer timed on this server against length."""
    st.subheader(tr("Time against length, measured"))
    st.markdown(
        tr(
            "Counting steps is not timing. Below, a tanh RNN, a GRU and one attention layer of the "
            "same width (64) are timed on this server at n = 16, 32, 64, ... tokens. The recurrent "
            "layers' n steps are small matrix products that leave most of the hardware idle; the "
            "attention layer's n² work runs as a few large products."
        )
    )
    sweep = costs.run_cost_sweep("rnn", sweep_settings())
    st.caption(costs.cost_device_line(sweep))
    if sweep is not None:
        busy = costs.cost_load_note(sweep)
        if busy:
            st.warning(busy)
        lines = {c.method: (c.n, c.time_s, c.q1_s, c.q3_s) for c in sweep.curves if len(c.points)}
        if lines:
            chart(time_figure(lines), key="why_time")
        noisy = costs.cost_fit_note(sweep)
        if noisy:
            st.info(noisy)
        st.markdown("\n".join(costs.cost_stops(sweep)))
        st.caption(costs.cost_budget_line(sweep) + " " + busy_method())
    source("efficiency.rnn.rnn_sweep", label="The layers that are timed: the code")


def gradients_section(ctx: PageContext, runs: dict[str, LayerRun], scale: float) -> None:
    """Gradients over distance: ||dh_n/dx_i|| for the three layers, the scale control, and the
    path length a signal takes."""
    n = ctx.capture.n_pos
    st.markdown(
        tr(
            "Training moves each input's weights by the gradient that reaches it. In a recurrent "
            "layer the gradient of the last output hₙ with respect to an early input xᵢ is a "
            "product of n − i step Jacobians, each a copy of W_hh damped by tanh's slope (at most 1):"
        )
    )
    formula("analysis.why.gradient_profile", code=False)
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    c1.select_slider(
        tr(
            "recurrent weight scale s: W_hh = s × an orthogonal matrix (below 1 vanishes, above 1 can explode)"
        ),
        WHY_SCALES,
        **bind("why.scale", WHY_SCALES),
    )
    bound = c2.toggle(tr("show the tanh RNN's bound"), **bind("why.bound"))
    profiles = [runs[kind].profile for kind in LAYERS]
    chart(gradient_figure(profiles, bounds=bool(bound)), key="why_gradients")
    far = {kind: float(runs[kind].profile.log10_norm[-1]) for kind in LAYERS}
    near = {kind: float(runs[kind].profile.log10_norm[0]) for kind in LAYERS}
    st.caption(
        tr(
            "On this text (n = {n}), s = {scale:g}: from the last token back to the first (distance "
            "{far_d}) the gradient's norm goes from {rnn_near} to {rnn_far} in the tanh RNN, from "
            "{gru_near} to {gru_far} in the GRU, and from {att_near} to {att_far} in attention, which "
            "reads every input through one softmax: no product over the positions in between. Each "
            "legend names the factor one more step back multiplies the gradient by (a line fitted to "
            "the log norms).",
            n=n,
            scale=scale,
            far_d=n - 1,
            rnn_near=power(near["rnn"]),
            rnn_far=power(far["rnn"]),
            gru_near=power(near["gru"]),
            gru_far=power(far["gru"]),
            att_near=power(near["attention"]),
            att_far=power(far["attention"]),
        )
    )
    n_path, paths = why_path_lengths(n)
    chart(path_length_figure(n_path, paths), key="why_path")
    st.caption(
        tr(
            "The path a signal takes from the first token to the last: n − 1 steps in a recurrent "
            "layer, each one more factor in the product above; 1 step in attention, whatever n. "
            "This text's n = {n} is among the lengths drawn.",
            n=n,
        )
    )
    source("analysis.why.run_layer", label="How the gradients were computed: the code")
    source("analysis.why.input_jacobians", label="The reference the tests hold it to: autograd end to end")


def recall_section() -> None:
    """Long-range recall: the task, its settings, the button that trains the three models in the
    background, their held-out accuracy by distance as it arrives, and the attention head."""
    st.markdown(
        tr(
            "A task whose answer lies far back: a sequence starts with a symbol, then d − 1 random "
            "symbols, then the blank _ that asks for the first symbol, d positions back "
            "(`a x y ... z _` → `a`), at d = 4, 8, 16, 32, 64 and 128. A tanh RNN, a GRU and a "
            "one-layer attention model of about the same parameter count train on it with the same "
            "recipe and the same batches, then answer held-out sequences they never saw. Training "
            "runs on this server in the background, at most {seconds:.0f} s per model; the result is "
            "kept for every visitor with the same settings.",
            seconds=compute.RECALL_SECONDS,  # read when drawn: tests lower it
        )
    )
    settings = _recall_controls()
    done = recall_board().get(settings)
    run = recall_run(settings)
    active = run is not None and not run.is_final
    missing = [k for k in RECALL_KINDS if k not in done]
    if st.button(
        tr("▶ Train the GRU, the attention model and the tanh RNN"),
        key="why.train",
        type="primary",
        disabled=active or not missing,
    ):
        try:
            start_recall(settings)
        except ValueError as err:
            st.warning(str(err))  # worded in the reader's language where it was raised
        else:
            st.rerun()

    @st.fragment(run_every=1.0 if active else None)
    def live() -> None:
        _recall_live(settings)

    live()
    attention = done.get("attention")
    if attention is not None and attention.look_back is not None:
        _look_back(attention)
    source("training.recall.train_recall", label="How the models were trained: the code")


def _recall_controls() -> RecallSettings:
    """The protocol and seed pickers, and the settings they make, shown as four metrics."""
    c1, c2 = st.columns(2)
    protocols = list(view().choices("why.protocol"))
    protocol = c1.radio(
        tr("training"),
        protocols,
        horizontal=True,
        format_func={p: tr(PROTOCOLS[p]) for p in protocols}.__getitem__,
        **bind("why.protocol", protocols),
    )
    seed = int(c2.number_input(tr("seed (weights and batches)"), **bind_number("why.seed")))
    settings = recall_settings(str(protocol), seed)
    m1, m2, m3, m4 = st.columns(4)
    m1.metric(tr("distances"), f"{settings.spec.distances[0]} … {settings.spec.distances[-1]}")
    m2.metric(tr("symbols (chance)"), f"{settings.spec.vocab} ({settings.spec.chance:.1%})")
    m3.metric(tr("updates (batch) per model"), f"{settings.recipe.steps} ({settings.recipe.batch})")
    m4.metric(tr("time limit per model"), f"{settings.time_limit_s:.0f} s")
    return settings


def _recall_live(settings: RecallSettings) -> None:
    """The run's progress and the accuracy by distance so far (drawn in a fragment that polls
    while the run trains)."""
    run = recall_run(settings)
    done = recall_board().get(settings)
    if run is not None:
        run.heartbeat()
        if run.state == "failed":
            st.warning(run.message)
        elif not run.is_final:
            st.info(recall_progress(run))
    if not done:
        if run is None:
            st.info(tr("Not trained yet with these settings: press the button."))
    else:
        _recall_results(done)
    if run is not None and run.is_final and st.session_state.get("_why_was_active"):
        st.session_state["_why_was_active"] = False
        st.rerun()  # the button and the look-back follow the run's end
    st.session_state["_why_was_active"] = run is not None and not run.is_final


def _recall_results(done: dict[str, RecallResult]) -> None:
    """Held-out accuracy by distance for the kinds trained so far, with what each one cost."""
    kinds = [k for k in RECALL_KINDS if k in done]
    first = done[kinds[0]]
    chart(
        recall_figure(first.distances, {k: done[k].accuracy for k in kinds}, chance=first.chance),
        key="why_recall",
    )
    parts = [
        tr(
            "{model}: {params} parameters, {steps} updates in {seconds:.1f} s{limit}",
            model=tr(KIND_NAMES[k]),
            params=int(done[k].n_params.max()),
            steps=int(done[k].steps.sum()),
            seconds=done[k].seconds,
            limit=tr(" (stopped at the time limit: the numbers depend on this machine's speed)")
            if done[k].stopped == "time"
            else "",
        )
        for k in kinds
    ]
    st.caption(
        tr(
            "Held-out accuracy at each distance ({n} sequences each), seed {seed}, {protocol}. "
            "{models}. The same seed gives the same numbers on this machine.",
            n=first.settings.n_eval,
            seed=first.settings.recipe.seed,
            protocol=tr(PROTOCOLS[first.settings.protocol]),
            models="; ".join(parts),
        )
    )


def _look_back(attention: RecallResult) -> None:
    """The trained attention model's blank looking back at the first token: one held-out
    sequence's softmax row, and each head's mean weight on the first token by distance."""
    lb = attention.look_back
    assert lb is not None  # the caller checked
    st.subheader(tr("The attention head looking back"))
    formula("model.attention.scaled_dot_product_attention", code=False)
    distances = [int(d) for d in attention.distances]
    d = int(st.selectbox(tr("distance d"), distances, **bind("why.distance", distances)))
    i = distances.index(d)
    head = int(lb.heads[i])
    tokens = probe_tokens(lb.probe_ids[i], d)
    chart(look_back_figure(lb.probe_pattern[i, head, : d + 1], tokens, head=head), key="why_look_back")
    st.caption(
        tr(
            "One held-out sequence at d = {d}: the blank's row of the softmax in head {head} (the "
            "head that looks at the first token most), over every earlier token. Over all held-out "
            "sequences at this distance the blank puts {weight:.0%} of that head's weight on the "
            "first token.",
            d=d,
            head=head,
            weight=float(lb.weight_on_first[i, head]),
        )
    )
    chart(first_weight_figure(attention.distances, lb.weight_on_first), key="why_first_weight")
    st.caption(
        tr(
            "Each head's mean weight from the blank on the first token, at every distance. With one "
            "model per distance each point is another model: its heads are numbered alike but "
            "learned apart, so a head that looks back may be head 0 at one distance and head 2 at "
            "the next."
        )
        if attention.settings.protocol == "separate"
        else tr(
            "Each head's mean weight from the blank on the first token, at every distance: one "
            "model learned every distance, so a line is one head."
        )
    )
