"""Attention across layers: one head, the mean or the max over heads, or the attention rollout;
long texts zoom into a window of queries and keys, and a typed token jumps there."""

import streamlit as st

from tformer import ui
from tformer.analysis.rollout import attention_rollout
from tformer.figures.attention import attention_heatmap
from tformer.figures.walkthrough import step_heatmap
from tformer.i18n import tr

# English templates (ui.section translates them)
COMBINE = {
    "head": "one head",
    "mean": "mean over heads",
    "max": "max over heads",
    "rollout": "attention rollout",
}
SIZES = (16, 32, 64, 128)
# The zoom's labels read "position token": room for "511 " and the longest word piece, uncut.
ZOOM_TICK_CHARS = 24

with ui.page_context(__file__) as ctx:
    from tformer.ui.views import layers as view  # after the frame: a view loads torch

    cap = ctx.capture
    how = ui.section("layers.combine", COMBINE)
    scale = ui.weight_scale()
    if how == "rollout":
        ui.formula(attention_rollout, code=False)
    if how == "head":
        layer, head = ui.layer_head(ctx)
        matrix, what = cap.pattern[layer, head], tr("layer {layer}, head {head}", layer=layer, head=head)
    else:
        layers = range(cap.n_layers)
        layer = int(
            st.selectbox(
                tr("layer"), layers, **ui.bind("layer", layers, clamp=True, fallback=ctx.chosen()[0])
            )
        )
        matrix = view.combined(ctx.choice, ctx.text, how)[layer]
        what = (
            tr("attention rollout, layers 0–{layer}", layer=layer)
            if how == "rollout"
            else tr("{how}, layer {layer}", how=tr(COMBINE[how]), layer=layer)
        )
    n = cap.n_pos
    if n <= 64:
        ui.chart(attention_heatmap(matrix, ctx.labels, title=what, weight_scale=scale), key="layers_matrix")
    else:
        ui.chart(
            attention_heatmap(
                matrix, ctx.labels, title=tr("{what}: all {n} tokens", what=what, n=n), weight_scale=scale
            ),
            key="layers_matrix",
        )
        st.markdown(tr("**Zoom: a window at full resolution**"))
        c1, c2, c3, c4 = st.columns([1, 1, 1, 2])
        sizes = [s for s in SIZES if s <= n]  # a window larger than the text has no first query
        size = int(c1.selectbox(tr("window"), sizes, **ui.bind("layers.size", sizes)))
        starts = range(0, max(1, n - size + 1))
        found = ui.jump_box(c4, ctx.labels, size)
        q0 = int(c2.number_input(tr("first query"), 0, n - size, **ui.bind("layers.q0", starts, clamp=True)))
        k0 = int(c3.number_input(tr("first key"), 0, n - size, **ui.bind("layers.k0", starts, clamp=True)))
        rows, cols = range(q0, q0 + size), range(k0, k0 + size)
        ui.chart(
            step_heatmap(
                matrix[q0 : q0 + size, k0 : k0 + size],
                [f"{i} {ctx.labels[i]}" for i in rows], [f"{j} {ctx.labels[j]}" for j in cols],
                highlight=found - q0 if found is not None and found in rows else None,
                weights=True, numbers=size <= 16, row_title=tr("query token"), col_title=tr("key token"),
                tick_chars=ZOOM_TICK_CHARS, weight_scale=scale, row_max=matrix[q0 : q0 + size].max(axis=-1),
                title=tr("queries {q0}–{q1}, keys {k0}–{k1}", q0=q0, q1=q0 + size - 1, k0=k0, k1=k0 + size - 1),
            ),
            key="layers_zoom",
        )  # fmt: skip
        if ctx.view.get("layers.find") and found is None:
            st.info(tr("That token is not in the text (tokens are matched as the model splits them)."))
    st.caption(
        tr(
            "Attention rollout (Abnar and Zuidema, 2020) treats the residual connection as half of each "
            "layer's attention and multiplies the layers' averaged patterns: how much each input token "
            "could have flowed into each position. "
        )
        if how == "rollout"
        else ""
    )
    st.caption(
        tr(
            "A caveat: attention weights say where information can flow, not why the model decided what it "
            "did; they are not an explanation on their own."
        )
    )
