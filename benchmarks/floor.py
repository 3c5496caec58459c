#!/usr/bin/env python
"""What Streamlit and Plotly alone cost on this machine: the floor under every page's budget.

Starts a bare Streamlit app written to a temporary folder (no tformer code: a text area in the
sidebar and one Plotly heatmap of n x n random weights, n = the words of the text, drawn with
`st.plotly_chart`) and measures it with the same driver and clock as benchmarks/latency.py:

  cold start  a fresh server's first visitor: navigation start -> the heatmap drawn (the text-only
              variant, ?chart=0, which draws a caption instead: -> the caption shown);
  page load   the same in a second browser context, the server warm;
  edit        Ctrl+Enter in the text area -> settled (the heatmap redrawn), at 16 / 128 / 512
              words, median of --runs edits after one warm-up edit per size.

Then, with --app (default on), the same rows for the app's Attention page in the same browser
(benchmarks/latency.py --url-path attention), so the two are measured back to back. Nothing here
is the app's code, so the bare rows say how fast any Streamlit page with one heatmap can be here:
a budget below them cannot be met by changing the app alone.

    .venv/bin/python benchmarks/floor.py                 # bare app, then the Attention page
    .venv/bin/python benchmarks/floor.py --runs 9 --no-app
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._timing import print_table
from tests.e2e.streamlit_driver import AppServer, install, launch_chromium, set_text, wait_idle

BARE_APP = textwrap.dedent(
    """
    import numpy as np
    import plotly.graph_objects as go
    import streamlit as st

    text = st.sidebar.text_area("text", "the cat sat on the mat", key="text")
    words = text.split() or ["(empty)"]
    n = len(words)
    rng = np.random.default_rng(n)
    w = rng.random((n, n), dtype=np.float32)
    w /= w.sum(axis=1, keepdims=True)
    if st.query_params.get("chart") == "0":  # the text-only variant: a rerun without Plotly
        st.caption(f"{n} words: " + " ".join(words[:8]))
        st.stop()
    fig = go.Figure(go.Heatmap(z=w, x=list(range(n)), y=list(range(n)), colorscale="Blues"))
    ticks = list(range(0, n, max(1, n // 32)))
    fig.update_xaxes(tickmode="array", tickvals=ticks, ticktext=[words[i] for i in ticks])
    fig.update_yaxes(tickmode="array", tickvals=ticks, ticktext=[words[i] for i in ticks], autorange="reversed")
    fig.update_layout(height=520, margin=dict(l=60, r=20, t=30, b=60))
    st.plotly_chart(fig, key="weights")
    st.caption(f"{n} words")
    """
).lstrip()
FIRST_CHART_JS = (
    """() => document.querySelector('[data-testid="stPlotlyChart"] .main-svg') ? performance.now() : false"""
)
FIRST_CAPTION_JS = (
    """() => document.querySelector('[data-testid="stCaptionContainer"]') ? performance.now() : false"""
)
SIZES = (16, 128, 512)


def words(n: int, variant: int) -> str:
    """n distinct words, different for every variant (a new text, new tick labels)."""
    return " ".join(f"w{variant}x{i}" for i in range(n))


def measure(browser, base_url: str, url_path: str, runs: int, make_text, first_js: str) -> list[list[object]]:
    """Cold start (the caller's fresh server), page load, then edits at every size."""
    rows: list[list[object]] = []
    loads = []
    for _ in range(2):  # the first on a fresh server: the cold start; then a warm page load
        ctx = browser.new_context(base_url=base_url, viewport={"width": 1400, "height": 1000})
        page = ctx.new_page()
        install(page)
        page.goto(url_path or "./", wait_until="commit")
        first = float(page.wait_for_function(first_js, polling="raf", timeout=120_000).json_value())
        wait_idle(page, 120_000)
        loads.append(first)
        if len(loads) == 1:
            ctx.close()
    rows.append(["cold start", "", f"{loads[0]:.0f}", "", ""])
    rows.append(["page load", "", f"{loads[1]:.0f}", "", ""])
    variant = 0
    for n in SIZES:
        times = []
        for i in range(runs + 1):
            variant += 1
            _, idle = set_text(page, make_text(n, variant), timeout=120_000)
            if i and idle.key_at_ms is not None:  # the first edit at a size warms up
                times.append(idle.settled_at_ms - idle.key_at_ms)
        rows.append(["edit", n, f"{statistics.median(times):.0f}", f"{min(times):.0f}", f"{max(times):.0f}"])
    ctx.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7, help="edits measured per size (after one warm-up)")
    ap.add_argument(
        "--app", action=argparse.BooleanOptionalAction, default=True, help="the Attention page too"
    )
    args = ap.parse_args(argv)
    if not 3 <= args.runs <= 50:
        ap.error("--runs in 3..50")
    table: list[list[object]] = []
    with tempfile.TemporaryDirectory(prefix="tformer-floor-") as tmp, sync_playwright() as pw:
        (Path(tmp) / "app.py").write_text(BARE_APP)
        browser = launch_chromium(pw)
        apps = [
            ("bare Streamlit, text only", AppServer(app_dir=Path(tmp)), "?chart=0", words, FIRST_CAPTION_JS),
            ("bare Streamlit + 1 heatmap", AppServer(app_dir=Path(tmp)), "", words, FIRST_CHART_JS),
        ]
        if args.app:
            from benchmarks.latency import Texts

            texts = Texts()
            apps.append(
                (
                    "tformer, Attention page",
                    AppServer(),
                    "attention",
                    lambda n, _v: texts.next(n),
                    FIRST_CHART_JS,
                )
            )
        for name, server, url_path, make_text, first_js in apps:
            with server:
                rows = measure(browser, server.url + "/", url_path, args.runs, make_text, first_js)
                table.extend([name, *row] for row in rows)
            print(f"  {name} done", file=sys.stderr, flush=True)
        browser.close()
    print(
        "ms, page clock; cold start / page load: navigation start -> first chart (caption) drawn; edit: Ctrl+Enter ->"
    )
    print(f"settled, median (min, max) of {args.runs} edits; bare app: one word = one row of the heatmap")
    print_table(["app", "measure", "tokens", "median", "min", "max"], table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
