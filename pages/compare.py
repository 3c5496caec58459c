"""Two settings side by side: the same layer and head of A (the sidebar's model and text) and
of B, which differs in one thing; their difference when the tokens match."""

import streamlit as st

from tformer import ui
from tformer.figures.attention import attention_heatmap
from tformer.figures.heads import heads_side_by_side
from tformer.figures.layout import HALF_WIDTH
from tformer.figures.walkthrough import step_heatmap
from tformer.i18n import tr

with ui.page_context(__file__) as ctx:
    from tformer.ui.views import compare as view  # after the frame: a view loads torch

    what = st.selectbox(
        tr("B differs from A in"), list(view.COMPARE_WHAT), format_func=lambda w: tr(view.COMPARE_WHAT[w]),
        **ui.bind("compare.what", list(view.COMPARE_WHAT)),
    )  # fmt: skip
    if what == "text":
        st.text_input(tr("text B (Enter to apply)"), max_chars=2000, **ui.bind("compare.text_b"))
    elif what == "heads":
        st.number_input(tr("heads in B"), **ui.bind_number("compare.n_heads_b"))
    try:
        a, b = view.compare_sides(ctx.view, ctx.choice, ctx.text, what)
    except ValueError as err:
        st.info(tr("B cannot be made: {err}.", err=err))
        st.stop()
    c1, c2 = st.columns(2)
    layers = range(min(a.pattern.shape[0], b.pattern.shape[0]))
    heads = range(min(a.pattern.shape[1], b.pattern.shape[1]))
    first_layer, first_head = ctx.chosen()
    layer = int(
        c1.selectbox(tr("layer (both)"), layers, **ui.bind("layer", layers, clamp=True, fallback=first_layer))
    )
    head = int(
        c2.selectbox(tr("head (both)"), heads, **ui.bind("head", heads, clamp=True, fallback=first_head))
    )
    pa, pb = a.pattern[layer, head], b.pattern[layer, head]
    st.text(a.name)  # plain text: no markdown to escape in a run's name or a path
    st.text(b.name)
    if a.labels == b.labels:
        ui.chart(heads_side_by_side([pa, pb], ["A", "B"], a.labels), key="compare_ab")
        ui.chart(
            step_heatmap(
                pb - pa, a.labels, a.labels, title=tr("B − A: where B puts more (red) or less (blue) weight"),
                row_title=tr("query token"), col_title=tr("key token"), value_title="B − A",
            ),
            key="compare_diff",
        )  # fmt: skip
        st.caption(
            tr(
                "Layer {layer}, head {head} in both. The largest change of a weight is {largest:.3f}; each "
                "row's weights move by {moved:.3f} on average (half the L1 distance: the share of the row's "
                "weight that went elsewhere).",
                layer=layer,
                head=head,
                largest=abs(pb - pa).max(),
                moved=abs(pb - pa).sum(-1).mean() / 2,
            )
        )
    else:
        left, right = st.columns(2)
        with left:
            ui.chart(attention_heatmap(pa, a.labels, title="A", width=HALF_WIDTH), key="compare_a")
        with right:
            ui.chart(attention_heatmap(pb, b.labels, title="B", width=HALF_WIDTH), key="compare_b")
        st.caption(
            tr(
                "The two sides have different tokens (another text, or another tokenizer), so there is no "
                "cell-by-cell difference to draw."
            )
        )
