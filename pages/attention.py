"""One head in detail, and every head of every layer at a glance."""

import streamlit as st

from tformer import ui
from tformer.figures.attention import attention_heatmap
from tformer.figures.colors import WEIGHT_SCALE_NAMES
from tformer.i18n import tr

with ui.page_context(__file__) as ctx:
    ui.formula("scaled_dot_product_attention", code=False)
    cap = ctx.capture
    c1, c2, c3 = st.columns([4, 3, 2], vertical_alignment="bottom")
    with c1:
        layer, head = ui.layer_head(ctx)
    with c2:
        kind = ui.matrix_kind("show", "attention.kind")
    scale = ui.weight_scale(c3, disabled=kind != "pattern")
    why = ui.opening_note(ctx.choice, ctx.text, cap)
    if why and not ui.figure_hidden():  # it names the head's answer: it waits for the lesson's question
        st.caption(why)

    detail, notes = st.columns([4, 1], gap="medium")
    heatmap = attention_heatmap(
        cap[kind][layer, head],
        ctx.labels,
        kind=kind,
        title=tr("layer {layer}, head {head}", layer=layer, head=head),
        weight_scale=scale,
    )
    ui.chart_in(detail, heatmap, key="detail", shows=(layer, head))
    notes.markdown(
        tr(
            "**How to read it.** Each row is one token asking (the query); each column is a token it "
            "may look at (the key)."
        )
    )
    notes.caption(
        tr(
            "Weights: each row sums to 1; bright = much attention. Scores: what the softmax receives, "
            "red above 0, blue below; masked cells are gray (-∞, weight 0)."
        )
    )
    random = ctx.choice.source == "scratch"  # a from-scratch encoder's weights are random
    notes.caption(
        tr(
            "A random model shows none of a trained head's habits: no diagonal below the main one, no "
            "bright first column, no pronoun finding its noun. Train one on the Train page, or compare "
            "with MiniLM."
        )
        if random
        else tr(
            "Look for a diagonal just below the main one (the previous token), a bright column (every "
            "token looking at the first or last token), or a pronoun's row lighting up its noun."
        )
    )

    pooled = heatmap.layout.meta
    if pooled["block"] > 1:  # a long text: say what a cell is, and where to see every position
        notes.caption(
            tr(
                "**{n:,} tokens in {cells} × {cells} cells.** Each cell stands for {block} × {block} "
                "positions: their largest weight, or their score farthest from 0; one label every {step} "
                "tokens. Hover a cell for its positions; Across layers zooms into a window at full "
                "resolution.",
                n=pooled["n_pos"],
                cells=-(-pooled["n_pos"] // pooled["block"]),
                block=pooled["block"],
                step=pooled["tick_step"],
            )
        )

    st.subheader(tr("Every layer x every head"))
    ui.overview(ctx, (layer, head))
    shape = {"n_layers": cap.n_layers, "n_heads": cap.n_heads, "n_pos": cap.n_pos}
    if kind == "pattern" and scale != "linear":  # the grid keeps 0 to 1: say so, not "the same colors"
        overview_text = (
            tr(
                "{n_layers} layers (rows) x {n_heads} heads (columns), {n_pos} tokens, on the 0-to-1 colors so "
                "that the heads compare with each other (the head above uses the “{scale}” scale). Click a head "
                "(or tab to it and press Space) to open it.",
                scale=tr(WEIGHT_SCALE_NAMES[scale]),
                **shape,
            )
            + " "
            + (
                tr(
                    "These weights are random: every head scatters its weight by chance, in every layer alike, "
                    "with none of the neighbours or linked words a trained model shows."
                )
                if random
                else tr("Early layers often look at neighbours; later ones link related words.")
            )
        )
    elif random:
        overview_text = tr(
            "{n_layers} layers (rows) x {n_heads} heads (columns), {n_pos} tokens, the same colors as "
            "above. Click a head (or tab to it and press Space) to open it. These weights are random: "
            "every head scatters its weight by chance, in every layer alike, with none of the neighbours "
            "or linked words a trained model shows.",
            **shape,
        )
    else:
        overview_text = tr(
            "{n_layers} layers (rows) x {n_heads} heads (columns), {n_pos} tokens, the same colors as "
            "above. Click a head (or tab to it and press Space) to open it. Early layers often look at "
            "neighbours; later ones link related words.",
            **shape,
        )
    st.caption(overview_text)
    st.caption(ui.memory_note(cap))
