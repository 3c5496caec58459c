"""Fixtures for real-browser tests: a live `streamlit run` server and Debian's Chromium.

Written without pytest-playwright (its browser download does not work here).
Every test in tests/e2e/ gets the `e2e` marker. Point TFORMER_APP_DIR at another folder
holding an app.py to run these against it instead of the repo's app.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .streamlit_driver import (
    CHROMIUM_PATH,
    FIRST_RUN_TIMEOUT_MS,
    AppServer,
    WsMonitor,
    install,
    launch_chromium,
    screenshot,
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.e2e)


def _missing(what: str) -> None:
    # On CI a missing browser is a broken set-up, not a reason to skip.
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{what} (CI=true: e2e tests must run)")
    pytest.skip(what)


def warm_up(server: AppServer, url_path: str = "attention") -> None:
    """Run the app once over a websocket before any test.

    Loads the model into the server's caches, so the first test does not pay for it.
    """

    from .ws_client import StreamlitWsSession, run_sync

    async def once() -> None:
        async with StreamlitWsSession(server.ws_url, url_path) as s:
            await s.run(timeout=FIRST_RUN_TIMEOUT_MS / 1000)

    run_sync(once)


@pytest.fixture(scope="session")
def app_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """The app under test, started once per session on a free loopback port."""
    log = tmp_path_factory.mktemp("server") / "streamlit.log"
    runs = tmp_path_factory.mktemp("runs")  # where the Train page saves: never the repo
    server = AppServer(log_path=log, extra_env={"TFORMER_RUNS_DIR": str(runs)}).start()
    try:
        warm_up(server)
        yield server
    finally:
        server.stop()


@pytest.fixture
def app_server_factory(tmp_path: Path) -> Iterator[Callable[..., AppServer]]:
    """Start extra servers, e.g. with env changes: `app_server_factory(extra_env={...})`.

    Each one is stopped at the end of the test.
    """
    started: list[AppServer] = []

    def start(**kwargs: Any) -> AppServer:
        kwargs.setdefault("log_path", tmp_path / f"streamlit-{len(started)}.log")
        server = AppServer(**kwargs)
        started.append(server)
        return server.start()

    try:
        yield start
    finally:
        for s in started:
            s.stop()


@pytest.fixture(scope="session")
def playwright_instance() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright is not installed (pip install -e '.[test]')")
    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def browser(playwright_instance: Any) -> Iterator[Any]:
    if not Path(CHROMIUM_PATH).exists():
        _missing(f"{CHROMIUM_PATH} not found (apt-get install chromium)")
    b = launch_chromium(playwright_instance)
    try:
        yield b
    finally:
        b.close()


@dataclass
class PageProbe:
    """What a page did besides rendering: dialogs, uncaught JS errors, websocket traffic."""

    dialogs: list[str] = field(default_factory=list)  # "alert: 1"
    page_errors: list[str] = field(default_factory=list)
    monitor: WsMonitor | None = None


def new_page(context: Any, probe: PageProbe) -> Any:
    """A page with the run counter, the dialog/error listeners and the websocket monitor."""
    page = context.new_page()
    install(page)

    def on_dialog(d: Any) -> None:
        probe.dialogs.append(f"{d.type}: {d.message}")
        d.dismiss()

    page.on("dialog", on_dialog)
    page.on("pageerror", lambda e: probe.page_errors.append(str(e)))
    probe.monitor = WsMonitor(page)
    return page


@pytest.fixture
def context(browser: Any, app_server: AppServer) -> Iterator[Any]:
    """A fresh browser context per test (no shared cookies, cache or storage)."""
    ctx = browser.new_context(base_url=app_server.url + "/", viewport={"width": 1400, "height": 1000})
    ctx.set_default_timeout(30_000)
    try:
        yield ctx
    finally:
        ctx.close()


@pytest.fixture
def probe() -> PageProbe:
    return PageProbe()


@pytest.fixture
def page(context: Any, probe: PageProbe, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A page on the app's server; not yet navigated (call open_page). Screenshot on failure."""
    p = new_page(context, probe)
    yield p
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        with contextlib.suppress(Exception):
            screenshot(p, f"FAILED-{request.node.name}", settle_ms=0)


@pytest.fixture
def ws(page: Any, probe: PageProbe) -> WsMonitor:
    """The websocket monitor of `page`."""
    assert probe.monitor is not None, "request the page fixture before ws"
    return probe.monitor


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call":
        item.rep_call = rep  # type: ignore[attr-defined]
