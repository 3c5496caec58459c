"""Heads found by what they do: previous token, next token, self, first token / [CLS], the earlier
copy of the same token, the mirrored position (anti-diagonal), broad; each role ranked, and a
click opens the head."""

import streamlit as st

from tformer import ui
from tformer.analysis.head_roles import role_scores
from tformer.figures.roles import role_map_figure
from tformer.i18n import tr

ROLES = ui.ROLE_NAMES  # English templates (translated where shown)
OVER = {"text": "this text", "examples": "the English example texts (averaged)"}

with ui.page_context(__file__) as ctx:
    from tformer.ui.views import finder as view  # after the frame: a view loads torch

    role = ui.section("finder.role", ROLES, label="heads that attend to")
    over = st.radio(
        tr("scores from"),
        list(OVER),
        horizontal=True,
        format_func=lambda o: tr(OVER[o]),
        **ui.bind("finder.over", list(OVER)),
    )
    if over == "examples":
        scores, n_texts = view.head_roles_on_examples(ctx.choice)
    else:
        scores, n_texts = view.head_roles(ctx.choice, ctx.text), 1
    if role == "next" and ctx.capture.cfg.causal:
        st.info(
            tr(
                "{model} is causal: a token never sees the token after it, so no head can attend to the "
                "next token and every score here is 0. Its heads that look one step back are under "
                "“previous token”.",
                model=ctx.choice.label,
            )
        )
    ui.formula(role_scores, code=False)
    left, right = st.columns([3, 2])
    with left:
        ui.chart(role_map_figure(scores, role, selected=ctx.chosen()), key="role_map")
    with right:
        st.markdown(
            tr("**Top heads for “{role}”** (click to open on the Attention page)", role=tr(ROLES[role]))
        )
        for layer, head, score in view.rank_heads(scores, role, top=10):
            if st.button(
                tr("layer {layer}, head {head} · {score:.2f}", layer=layer, head=head, score=score),
                key=f"finder.open.{layer}.{head}",
                width="stretch",
            ):
                ui.select_head(layer, head)
                st.switch_page("pages/attention.py")
    over_what = tr("this text") if n_texts == 1 else tr("{n} texts", n=n_texts)
    st.caption(
        tr(
            "Scores over {texts}: the average weight a head puts on that key (broad: its entropy over the "
            "maximum possible, 1 = uniform). Rows of special tokens are left out where they would flatter "
            "a head. A random (untrained) model shows no clear roles.",
            texts=over_what,
        )
    )
