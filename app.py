"""tformer: see what every attention head computes.  Run: streamlit run app.py

The start page. Every page, this one included, draws the shared frame itself
(`tformer.ui.frame`); `tformer/ui/registry.py` says why there is no st.navigation.
"""

import streamlit as st

from tformer import ui

with ui.frame(__file__):
    st.markdown(
        "Type a sentence in the sidebar, in English or Chinese, and follow what a Transformer encoder "
        "computes on it: the queries, keys and values of every head, the scaled scores, the softmax "
        "weights and what each head outputs. Choose the pretrained **MiniLM** (a 6-layer BERT) or a "
        "**from-scratch encoder** whose layers, heads and width you set."
    )
    st.page_link(ui.PAGES[1].script, label=f"Start with {ui.PAGES[1].title}", icon=ui.PAGES[1].icon)
    for section, specs in ui.by_section():
        if section == "Start":
            continue
        st.subheader(section)
        for spec in specs:
            st.page_link(spec.script, label=spec.title, icon=spec.icon)
            st.caption(spec.summary)
