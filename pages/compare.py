"""Two settings side by side: the same layer and head of A (the sidebar's model and text) and
of B, which differs in one thing; their difference when the tokens match."""

import streamlit as st

from tformer import ui
from tformer.figures.attention import attention_heatmap
from tformer.figures.heads import heads_side_by_side
from tformer.figures.layout import HALF_WIDTH
from tformer.figures.walkthrough import step_heatmap

with ui.page_context(__file__) as ctx:
    what = st.selectbox(
        "B differs from A in", list(ui.COMPARE_WHAT), format_func=ui.COMPARE_WHAT.__getitem__,
        **ui.bind("compare.what", list(ui.COMPARE_WHAT)),
    )  # fmt: skip
    if what == "text":
        st.text_input("text B (Enter to apply)", max_chars=2000, **ui.bind("compare.text_b"))
    elif what == "heads":
        st.number_input("heads in B", 1, 32, **ui.bind("compare.heads_b"))
    try:
        a, b = ui.compare_sides(ctx.view, ctx.choice, ctx.text, what)
    except ValueError as err:
        st.info(f"B cannot be made: {err}.")
        st.stop()
    c1, c2 = st.columns(2)
    layers = range(min(a.pattern.shape[0], b.pattern.shape[0]))
    heads = range(min(a.pattern.shape[1], b.pattern.shape[1]))
    layer = int(c1.selectbox("layer (both)", layers, **ui.bind("layer", layers, clamp=True)))
    head = int(c2.selectbox("head (both)", heads, **ui.bind("head", heads, clamp=True)))
    pa, pb = a.pattern[layer, head], b.pattern[layer, head]
    st.markdown(f"**{ui.plain(a.name, 120)}**  \n**{ui.plain(b.name, 120)}**")
    if a.labels == b.labels:
        st.plotly_chart(heads_side_by_side([pa, pb], ["A", "B"], a.labels), key="compare_ab")
        st.plotly_chart(
            step_heatmap(
                pb - pa, a.labels, a.labels, title="B − A: where B puts more (red) or less (blue) weight",
                row_title="query token", col_title="key token", value_title="B − A",
            ),
            key="compare_diff",
        )  # fmt: skip
        st.caption(
            f"Layer {layer}, head {head} in both. The largest change of a weight is {abs(pb - pa).max():.3f}; "
            f"each row's weights move by {abs(pb - pa).sum(-1).mean() / 2:.3f} on average (half the L1 "
            "distance: the share of the row's weight that went elsewhere)."
        )
    else:
        left, right = st.columns(2)
        with left:
            st.plotly_chart(attention_heatmap(pa, a.labels, title="A", width=HALF_WIDTH), key="compare_a")
        with right:
            st.plotly_chart(attention_heatmap(pb, b.labels, title="B", width=HALF_WIDTH), key="compare_b")
        st.caption(
            "The two sides have different tokens (another text, or another tokenizer), so there is no "
            "cell-by-cell difference to draw."
        )
