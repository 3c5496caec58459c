"""Offline: no page asks any host but the app's own server, and no page logs a console error.

A classroom may have no internet, and a page that reaches out (a Material icon's favicon SVG
from fonts.gstatic.com, a web font, a CDN script, telemetry) either hangs or fills the console
with errors there. Every request the browser makes to anything but the app server
(127.0.0.1:PORT, or localhost:PORT) is aborted and recorded, websockets included, and every
console error and uncaught page error is recorded; the test then fails listing all of them.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import pytest

from .streamlit_driver import (
    AppServer,
    app_pages,
    charts,
    exception_boxes,
    install,
    nav_paths,
    nav_to,
    open_page,
    set_widget,
    widget_value,
)

# The pages of the app under test (TFORMER_APP_DIR or the repo), from its tformer/ui/registry.py.
PAGES = app_pages()

ALL = [p.url_path for p in PAGES]
TEXT_PAGES = [p.url_path for p in PAGES if p.needs_text]
SCRATCH = "From-scratch encoder"
# The one console error tolerated, and only where it must come: on a direct link to /<page>,
# Streamlit's frontend (1.67) first tries /<page>/ as the app's base path, so the app's own
# server answers /<page>/_stcore/health and /<page>/_stcore/host-config with 404 before the
# frontend falls back to / (streamlit/streamlit#7074). It is a request to this server, nothing
# leaves the machine, and the app cannot change it: Streamlit reads the base path before any app
# code runs. Anything else, from any page, fails.
BASE_PATH_PROBE = re.compile(
    r"404 \(Not Found\) \(at https?://[^/]+/([^/ ]+)/_stcore/(health|host-config)\)$"
)
# Explanations added to a failure whose messages match (they explain, they excuse nothing).
KNOWN_CAUSES = [
    (
        r"fonts\.gstatic\.com/.*materialsymbols",
        'hint: a ":material/...:" page icon makes Streamlit load the favicon SVG from fonts.gstatic.com; '
        "use an emoji or a local file (tformer.ui.registry).",
    ),
]
# Schemes that never leave the browser.
LOCAL_SCHEMES = {"data", "blob", "about", "chrome", "chrome-extension", "devtools"}


@dataclass
class Traffic:
    """What the browser did that an offline classroom would not allow."""

    own: set[str]  # "host:port" spellings of the app server
    outside: list[str] = field(default_factory=list)  # "GET https://... (image, page /qkv)"
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    base_path_probes: list[str] = field(default_factory=list)  # <page> of each tolerated 404

    def is_own(self, url: str) -> bool:
        parts = urlsplit(url)
        if parts.scheme in LOCAL_SCHEMES:
            return True
        return parts.scheme in ("http", "https", "ws", "wss") and parts.netloc.lower() in self.own

    def problems(self) -> list[str]:
        """Each distinct problem once, with how often it happened."""

        def counted(kind: str, items: list[str]) -> list[str]:
            return [f"{kind}: {x}" + (f" (x{n})" if n > 1 else "") for x, n in Counter(items).items()]

        return (
            counted("outside request", self.outside)
            + counted("console error", self.console_errors)
            + counted("page error", self.page_errors)
        )

    def check(self, where: str) -> None:
        found = self.problems()
        hints = [h for pattern, h in KNOWN_CAUSES if any(re.search(pattern, f) for f in found)]
        assert not found, (
            f"{where}: {len(found)} problem(s):\n  " + "\n  ".join(found) + "".join(f"\n{h}" for h in hints)
        )


def _page_path(frame_or_page: Any) -> str:
    try:
        url = frame_or_page.url
    except Exception:
        return "?"
    return urlsplit(url).path or "/"


def _describe(req: Any) -> str:
    return f"{req.method} {req.url} ({req.resource_type}, page {_page_path(req.frame)})"


def guard_offline(context: Any, server: AppServer) -> Traffic:
    """Abort and record every request of `context` to a host other than `server`; record
    console errors and uncaught page errors of all its pages (and their iframes)."""
    port = urlsplit(server.url).port
    traffic = Traffic(own={f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"})
    own_re = "|".join(re.escape(h) for h in sorted(traffic.own))
    local_schemes = "|".join(sorted(LOCAL_SCHEMES))
    # Matched inside Playwright's driver, so the app's own requests never make a round trip to
    # Python: anything that is not http(s)/ws(s) to the app server and not a local scheme.
    outside = re.compile(rf"^(?!(?:https?|wss?)://(?:{own_re})(?:[/?#]|$))(?!(?:{local_schemes}):)", re.I)
    routed: list[Any] = []  # requests the route aborted (Playwright keeps one object per request)
    unrouted: list[Any] = []  # outside requests seen by the "request" event, to be checked

    def block(route: Any) -> None:
        req = route.request
        if traffic.is_own(req.url):  # the regex and is_own disagree: let it through
            route.fallback()
            return
        routed.append(req)
        traffic.outside.append(_describe(req))
        route.abort("blockedbyclient")

    def block_ws(ws: Any) -> None:
        # Not connected to the real server: the socket stays a mock, and is closed at once.
        traffic.outside.append(f"WEBSOCKET {ws.url}")
        ws.close(code=1008, reason="offline test: outside host")

    def on_request(req: Any) -> None:
        # A second net for requests no route saw (a service worker's, a prefetch): "request"
        # fires before routing, so decide once the request has finished or failed.
        if not traffic.is_own(req.url):
            unrouted.append(req)

    def on_request_done(req: Any) -> None:
        if any(r is req for r in unrouted):
            unrouted.remove(req)
            if not any(r is req for r in routed):
                traffic.outside.append(_describe(req) + " NOT BLOCKED")

    def on_console(msg: Any) -> None:
        if msg.type == "error":
            loc = msg.location or {}
            src = loc.get("url") or (_page_path(msg.page) if msg.page else "?")
            text = f"{msg.text} (at {src})"
            probe = BASE_PATH_PROBE.search(text)
            if probe and traffic.is_own(src):
                traffic.base_path_probes.append(probe.group(1))
            else:
                traffic.console_errors.append(text)

    def on_weberror(err: Any) -> None:
        traffic.page_errors.append(f"{err.error} (page {_page_path(err.page) if err.page else '?'})")

    context.route(outside, block)
    context.route_web_socket(outside, block_ws)
    context.on("request", on_request)
    context.on("requestfinished", on_request_done)
    context.on("requestfailed", on_request_done)
    context.on("console", on_console)
    context.on("weberror", on_weberror)
    return traffic


@pytest.fixture
def traffic(context: Any, app_server: AppServer) -> Traffic:
    """The offline guard on the test's browser context (routes cover its pages, old and new)."""
    return guard_offline(context, app_server)


@pytest.fixture
def guarded_page(traffic: Traffic, page: Any) -> Any:
    """The test's page, its context guarded (the guard is set before the page loads anything)."""
    return page


def test_the_guard_itself_blocks_and_reports_an_outside_request(guarded_page, traffic):
    """The net works: a fetch to an internet host from inside a page is blocked and listed."""
    open_page(guarded_page, "")
    traffic.console_errors.clear()  # only this fetch's traces count here
    got = guarded_page.evaluate(
        """() => fetch('https://fonts.gstatic.com/s/i/short-term/release/materialsymbolsrounded/home/default/24px.svg')
                 .then(() => 'fetched', (e) => 'blocked: ' + e)"""
    )
    assert got.startswith("blocked"), got
    assert any("fonts.gstatic.com" in r for r in traffic.outside), traffic.outside
    assert traffic.console_errors, "a blocked fetch should leave a console error"


def test_the_guard_catches_a_material_page_icon(app_server_factory, browser, tmp_path):
    """A page icon ":material/...:" makes Streamlit point the favicon at fonts.gstatic.com:
    the guard must see and block that request (a toy app, so this holds whatever tformer does)."""
    (tmp_path / "app.py").write_text(
        "import streamlit as st\n"
        'st.set_page_config(page_title="toy", page_icon=":material/calculate:")\n'
        'st.write("a page with a Material icon")\n'
    )
    server = app_server_factory(app_dir=tmp_path)
    ctx = browser.new_context(base_url=server.url + "/")
    try:
        traffic = guard_offline(ctx, server)
        p = ctx.new_page()
        install(p)
        open_page(p, "")

        def caught() -> bool:
            return any("fonts.gstatic.com" in r and "calculate" in r for r in traffic.outside)

        for _ in range(50):  # the favicon is set from the run's page config: give it 5 s
            if caught():
                break
            p.wait_for_timeout(100)  # lets Playwright deliver the route's events
        assert caught(), traffic.problems()
        with pytest.raises(AssertionError, match=r"fonts\.gstatic\.com"):
            traffic.check("toy app")
    finally:
        ctx.close()


@pytest.mark.parametrize("source", ["", "scratch"], ids=["pretrained", "scratch"])
@pytest.mark.parametrize("url_path", ALL, ids=[p or "start" for p in ALL])
def test_a_direct_link_to_each_page_stays_on_the_app_server(guarded_page, traffic, url_path, source):
    """A new session per page, with the default text; "scratch" opens the link with
    ?source=scratch (the view state's query parameter), so the page's first run uses the
    from-scratch encoder."""
    open_page(guarded_page, url_path + (f"?source={source}" if source else ""))
    # the base-path probe 404s come from this link's page, and only from a link below "/"
    assert set(traffic.base_path_probes) <= ({url_path} if url_path else set()), traffic.base_path_probes
    assert exception_boxes(guarded_page) == 0
    if source:
        assert widget_value(guarded_page, "source") == SCRATCH
    if url_path in TEXT_PAGES:
        assert charts(guarded_page).count() >= 1
    traffic.check(f"opening /{url_path}" + (f" with source={source}" if source else ""))


def test_sidebar_navigation_with_both_model_sources_stays_on_the_app_server(guarded_page, traffic):
    """One session from the default page ("/"): every page from the sidebar links, then the
    model switched to the from-scratch encoder on a text page, then every page again."""
    page = guarded_page
    open_page(page, "")
    assert nav_paths(page) == ALL
    here = urlsplit(page.url).path.strip("/")

    def tour(here: str) -> None:
        # every other page in registry order, then back here: each one entered from a link
        start = ALL.index(here) if here in ALL else -1
        for path in ALL[start + 1 :] + ALL[: start + 1]:
            nav_to(page, path)
            assert exception_boxes(page) == 0, path

    tour(here)
    traffic.check("sidebar navigation, pretrained model")

    if TEXT_PAGES:
        here = TEXT_PAGES[0]
        nav_to(page, here)
    set_widget(page, "source", SCRATCH)
    assert widget_value(page, "source") == SCRATCH
    assert exception_boxes(page) == 0
    if here in TEXT_PAGES:
        assert charts(page).count() >= 1
    tour(here)
    assert widget_value(page, "source") == SCRATCH
    traffic.check(f"sidebar navigation, {SCRATCH}")
