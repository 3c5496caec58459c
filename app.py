"""tformer: see what every attention head computes.  Run: streamlit run app.py

The frame only: each page draws the shared sidebar through tformer.ui.page_context().
"""

import streamlit as st

from tformer import ui
from tformer.device import keep_freed_memory

keep_freed_memory()  # reuse activation buffers across reruns instead of re-faulting them
ui.set_threads()  # once per server: torch threads for a shared machine, gc.freeze()

st.set_page_config(page_title="tformer: attention, step by step", layout="wide")

pages = [
    st.Page("app_pages/attention.py", title="Attention", icon=":material/grid_on:", url_path="attention", default=True),
    st.Page("app_pages/qkv.py", title="Q, K, V", icon=":material/functions:", url_path="qkv"),
    st.Page("app_pages/positional.py", title="Positional encoding", icon=":material/waves:", url_path="positional"),
    st.Page("app_pages/heads.py", title="Heads compared", icon=":material/compare:", url_path="heads"),
]
with ui.no_traceback():
    st.navigation(pages).run()
