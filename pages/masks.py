"""Masks through the encoder's own mask argument: none, padding, causal, a local window or custom
blocked cells; the weights before and after, −∞ becoming 0, and how far each output moves."""

import streamlit as st

from tformer import ui
from tformer.figures.attention import attention_heatmap
from tformer.figures.heads import ablation_effect_figure, heads_side_by_side
from tformer.i18n import tr

with ui.page_context(__file__) as ctx:
    from tformer.ui.views import masks as view  # after the frame: a view loads torch

    kinds = {
        "none": "no mask",
        "padding": "padding",
        "causal": "causal",
        "window": "local window",
        "custom": "custom",
    }
    kind = ui.section("masks.kind", kinds, label="mask")  # English: ui.section translates
    layer, head = ui.layer_head(ctx)
    causal_own = bool(ctx.capture.cfg.causal)
    if causal_own:
        st.info(
            tr(
                "{model} is causal: its own mask lets each token see itself and the tokens before it, in "
                "every layer, and it is always on. “No mask” below shows that mask alone; every other mask "
                "is combined with it (AND).",
                model=ctx.choice.label,
            )
        )
    if kind == "padding" and ui.get_model(ctx.choice)[1].pad_id is None:
        st.info(
            tr(
                "Padding does not apply to this model: its tokenizer has no pad token. GPT-2 was trained "
                "on text cut into blocks of full length, never padded, so two texts of different lengths "
                "cannot share a batch here. The causal mask is this model's own: choose it, or no mask."
            )
        )
        st.stop()
    if kind == "padding":
        st.text_input(
            tr("a second text in the same batch (Enter to apply); the shorter one is padded with [PAD]"),
            max_chars=2000, **ui.bind("masks.text_b"),
        )  # fmt: skip
        b_text = ctx.view.get("masks.text_b")
        if not b_text.strip():
            st.info(tr("Type a second text."))
            st.stop()
        a, b = view.padded_pair(ctx.choice, ctx.text, b_text)
        short = a if a.encoded.n_pad else b
        alone = ui.get_capture(
            ctx.choice, ctx.text if short is a else b_text, ["q", "k", "v", "attn_scores", "pattern", "z"]
        )
        n_real = len(short.labels) - short.encoded.n_pad
        padded_title = tr(
            "the shorter text in the batch: {n_pad} [PAD] keys get −∞", n_pad=short.encoded.n_pad
        )
        ui.chart(
            attention_heatmap(short.attn_scores[layer, head], short.labels, kind="attn_scores", title=padded_title),
            key="padded_scores",
        )  # fmt: skip
        moved = abs(short.output[:n_real] - alone.output).max()
        st.caption(
            tr(
                "Both texts run in one batch of length {n}. The shorter one's {n_pad} [PAD] keys are masked, "
                "so every real token computes what it computes alone: its outputs differ from the unpadded "
                "run by at most {moved:.1e} (float rounding). The [PAD] rows are computed too (they attend "
                "to the real keys) and mean nothing.",
                n=len(short.labels),
                n_pad=short.encoded.n_pad,
                moved=moved,
            )
        )
        st.stop()

    if kind == "window":
        st.slider(tr("w: each token sees the w tokens on each side of it"), **ui.bind_number("masks.window"))
    elif kind == "custom":
        st.text_input(
            tr("blocked cells as query:key (Enter to apply): 3:5 one cell, 2-4:0-1 a block, 6:* a whole row, *:0 a column"),
            max_chars=400, **ui.bind("masks.spec"),
        )  # fmt: skip
    try:
        run = view.masked_run(
            ctx.choice, ctx.text, kind, ctx.view.get("masks.window"), ctx.view.get("masks.spec")
        )
    except ValueError as err:  # a custom spec that does not parse: the message names the item
        st.error(tr("This mask cannot be used: {reason}", reason=err))
        st.stop()
    before, after = run.base.pattern[layer, head], run.masked.pattern[layer, head]
    ui.chart(
        heads_side_by_side([before, after], [tr("before the mask"), tr("after the mask")], ctx.labels),
        key="mask_patterns",
    )
    ui.chart(
        attention_heatmap(run.masked.attn_scores[layer, head], ctx.labels, kind="attn_scores",
                          title=tr("the masked scores: blocked cells are −∞ (gray)")),
        key="masked_scores",
    )  # fmt: skip
    dead = run.facts["dead_rows"]
    facts = [
        tr(
            "{share:.0%} of the cells may attend. A −∞ score becomes exactly 0 after the softmax, and "
            "each row's other weights grow to sum to 1.",
            share=run.facts["allowed_share"],
        )
    ]
    if len(dead) == 1:
        facts.append(
            tr(
                "Row {row} may attend to nothing: its weights are all 0 and its head outputs are 0 (not NaN).",
                row=dead[0],
            )
        )
    elif dead:
        facts.append(
            tr(
                "Rows {rows} may attend to nothing: their weights are all 0 and their head outputs are 0 "
                "(not NaN).",
                rows=", ".join(map(str, dead[:12])) + (", …" if len(dead) > 12 else ""),
            )
        )
    if causal_own and kind == "causal":
        facts.append(tr("This is the model's own mask: applying it again changes nothing."))
    elif causal_own:
        facts.append(tr("This model is causal already: the two masks are combined (AND)."))
    st.caption("  \n".join(facts))  # one fact a line: sentences join differently in each language
    shift_titles = {
        "none": tr("No mask: every output stays where it was"),
        "causal": tr("How far each token's output moves under the causal mask"),
        "window": tr("How far each token's output moves under the local window mask"),
        "custom": tr("How far each token's output moves under the custom mask"),
    }
    ui.chart(ablation_effect_figure(run.shift, ctx.labels, shift_titles[kind]), key="mask_shift")
    st.caption(
        tr(
            "How far each token's final output moves (relative L2 change) when the mask is applied in every "
            "layer."
        )
    )
