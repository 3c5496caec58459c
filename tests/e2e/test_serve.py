"""`streamlit run serve.py`: the same app, warmed up while the first visitor's browser loads.
Once /tformer-ready answers 200 a first session's page builds no model, finds no head and runs
no capture (Streamlit's own cache counters show no new miss); and the app works as app.py does:
a direct link with a text opens its page with the full sidebar and draws its charts."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from urllib.parse import quote

from .streamlit_driver import (
    FIRST_RUN_TIMEOUT_MS,
    all_ticktext,
    exception_boxes,
    install,
    nav_paths,
    open_page,
)
from .ws_client import StreamlitWsSession, cache_lookups, run_sync

WARMED = ("tformer.ui.caches.get_model", "tformer.ui.caches._capture", "tformer.ui.opening.clearest_heads")


def wait_ready(url: str, timeout: float = FIRST_RUN_TIMEOUT_MS / 1000) -> None:
    deadline = time.monotonic() + timeout
    while True:
        code = 0
        try:
            with urllib.request.urlopen(f"{url}/tformer-ready", timeout=5) as r:
                code = r.status
        except urllib.error.HTTPError as err:
            code = err.code
        if code == 200:
            return
        assert code == 503, code  # warming up
        assert time.monotonic() < deadline, "serve.py did not warm up"
        time.sleep(0.2)


def test_a_warmed_server_computes_nothing_for_its_first_visitor(app_server_factory):
    server = app_server_factory(script="serve.py")
    wait_ready(server.url)
    before = cache_lookups(server.url)
    assert all(before.get((name, "miss"), 0) >= 1 for name in WARMED), before  # the warm-up's

    async def first_visit() -> None:
        async with StreamlitWsSession(server.ws_url, "attention") as s:
            res = await s.run(timeout=60)
            assert res.status == "ok"
            assert res.exceptions == []
            assert res.charts

    run_sync(first_visit)
    after = cache_lookups(server.url)
    for name in WARMED:
        assert after.get((name, "miss")) == before.get((name, "miss")), name
        assert after.get((name, "hit"), 0) > before.get((name, "hit"), 0), name


def test_serve_py_serves_a_direct_link_with_the_whole_frame(app_server_factory, browser):
    """A fresh serve.py server's first visitor opens /qkv with a text, before the warm-up may be
    over: the page comes with its sidebar and charts, and the text reaches its axes."""
    server = app_server_factory(script="serve.py")
    ctx = browser.new_context(base_url=server.url + "/", viewport={"width": 1400, "height": 1000})
    try:
        page = ctx.new_page()
        install(page)
        open_page(page, f"qkv?text={quote('Birds sing at dawn.')}")
        assert exception_boxes(page) == 0
        assert "attention" in nav_paths(page)  # the sidebar's page links, from the registry
        shown = [t.lower() for axis in ("x", "y") for chart in all_ticktext(page, axis) for t in chart]
        assert "birds" in shown
    finally:
        ctx.close()
