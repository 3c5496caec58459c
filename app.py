"""tformer: see what every attention head computes.  Run: streamlit run app.py

The start page: what the app is, a one-click start into a lesson, the lessons, and the lesson
map (the seed documents' order, each concept linked to its pages). Every page, this one
included, draws the shared frame itself (`tformer.ui.frame`); `tformer/ui/registry.py` says why
there is no st.navigation.
"""

import streamlit as st

from tformer import ui
from tformer.i18n import tr
from tformer.ui.lessons import lessons, local

with ui.frame(__file__):
    st.markdown(
        tr(
            "Type a sentence in the sidebar, in English or Chinese, and follow what a Transformer encoder "
            "computes on it: the queries, keys and values of every head, the scaled scores, the softmax "
            "weights and what each head outputs. Choose the pretrained **MiniLM** (a 6-layer BERT) or a "
            "**from-scratch encoder** whose layers, heads and width you set."
        )
    )
    found = lessons()
    if st.button(
        tr("▶ Start the lesson “{lesson}”", lesson=local(found[0].title)), type="primary", key="start_first"
    ):
        ui.start_lesson(found[0])
    st.caption(
        tr(
            "A lesson walks the pages in order with Previous / Next, opens each one with its text and "
            "settings, and says what to explain. Its link (the address bar) opens the same step for a student."
        )
    )

    st.subheader(tr("Lessons"))
    # One row, every card as tall as the tallest (a projected row of ragged boxes reads as
    # unfinished), each card's Start button at its foot.
    with st.container(horizontal=True, gap="medium", key="lesson_cards"):
        for lesson in found:
            card = st.container(
                border=True, height="stretch", vertical_alignment="distribute", key=f"lesson_card_{lesson.id}"
            )
            with card:
                st.markdown(f"**{local(lesson.title)}**")
                st.caption(local(lesson.summary))
                if st.button(tr("Start ({n} steps)", n=len(lesson.steps)), key=f"start_{lesson.id}"):
                    ui.start_lesson(lesson)

    st.subheader(tr("The lesson map"))
    specs = {p.key: p for p in ui.PAGES}
    for number, concept in enumerate(ui.LESSON_MAP, start=1):
        c1, c2 = st.columns([2, 3])
        c1.markdown(f"**{number}. {tr(concept.title)}**")
        c1.caption(tr(concept.summary))
        with c2.container(horizontal=True, gap="small"):
            for key in concept.pages:
                spec = specs[key]
                st.page_link(spec.script, label=tr(spec.title), icon=spec.icon, help=tr(spec.summary))
    st.caption(tr("Also: {pages}.", pages=", ".join(tr(specs[k].title) for k in ("compare", "export"))))
