"""Take the current view away: an offline HTML report, the captured tensors (NPZ), the per-head
metrics (CSV); every chart of the app also has PNG and SVG buttons under it."""

import streamlit as st

from tformer import ui
from tformer.figures.attention import attention_heatmap
from tformer.i18n import language, tr

NOTEBOOK = """import numpy as np

data = np.load("tformer-tensors.npz")
data["tokens"], data["layers"]  # the tokens, the model layers held
data["pattern"].shape  # [layer, head_index, query_pos, key_pos]
data["q"].shape  # [layer, pos, head_index, d_head]"""

with ui.page_context(__file__) as ctx:
    from tformer.ui.views import export as view  # after the frame: a view loads torch

    cap = ctx.capture
    names = view.head_names(cap.n_layers, cap.n_heads)
    layer, head = ctx.chosen()

    st.subheader(tr("A report that opens anywhere"))
    st.caption(
        tr(
            "One HTML file with the text, its tokens, every head of every layer, the heads you choose "
            "in detail and a number for each head. It needs no network and no program besides a "
            "browser: send it to students or open it where the room has no internet."
        )
    )
    chosen = st.multiselect(
        tr("heads drawn in detail"),
        names,
        max_selections=6,
        **ui.bind("export.heads", names, fallback=[f"L{layer}H{head}"]),
    )
    pairs = [divmod(names.index(n), cap.n_heads) for n in chosen]  # names run layer by layer
    st.download_button(
        tr("Download the report (HTML)"),
        data=view.report_file(cap, ctx.text, ctx.choice.label, pairs, language()),
        file_name="tformer-report.html",
        mime="text/html",
        key="export_report",
        type="primary",
        on_click="ignore",
    )

    st.subheader(tr("The numbers behind the figures"))
    c1, c2 = st.columns(2)
    mib = sum(a.nbytes for a in cap.arrays.values()) / 2**20
    c1.download_button(
        tr("Download the tensors (NPZ)"),
        data=view.npz_file(cap),
        file_name="tformer-tensors.npz",
        mime="application/octet-stream",
        key="export_npz",
        on_click="ignore",
    )
    c1.caption(
        tr(
            "Q, K, V, the scaled scores, the softmax weights and the head outputs z of every layer "
            "({mib:.1f} MiB before compression), with the tokens.",
            mib=mib,
        )
    )
    c2.download_button(
        tr("Download the metrics (CSV)"),
        data=view.csv_file(cap),
        file_name="tformer-metrics.csv",
        mime="text/csv",
        key="export_csv",
        on_click="ignore",
    )
    c2.caption(
        tr(
            "One row per head: entropy, mean distance, and the weight on self, the previous token, the first token, [CLS] and [SEP]."
        )
    )
    st.caption(tr("Reading the tensors in Python:"))
    st.code(NOTEBOOK, language="python")

    st.subheader(tr("Figures"))
    st.caption(
        tr(
            "Every chart in the app has PNG and SVG buttons under it; the camera in a chart's toolbar "
            "also saves a PNG from the browser. For example, this head:"
        )
    )
    title = tr("layer {layer}, head {head}", layer=layer, head=head)
    ui.chart(attention_heatmap(cap.at("pattern", layer)[head], ctx.labels, title=title), key="export_head")
