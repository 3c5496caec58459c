"""Share links in Chromium: the address bar follows every edit, a fresh browser opening it sees
the same view, and a hostile link neither runs nor crashes anything and says what it ignored."""

from __future__ import annotations

from urllib.parse import parse_qs, quote, urlsplit

from .streamlit_driver import (
    alert_texts,
    all_ticktext,
    exception_boxes,
    install,
    mark,
    open_page,
    screenshot,
    set_text,
    set_widget,
    text_value,
    wait_idle,
    widget,
    widget_value,
)
from .test_app import XSS

TEXT = "Cats chase small mice quickly."


def params_of(url: str) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(url).query).items()}


def view_of(page) -> dict:
    return {
        "text": text_value(page),
        "layer": widget_value(page, "layer"),
        "head": widget_value(page, "head"),
        "kind": widget_value(page, "qkv.kind"),
        "ticks": all_ticktext(page),
    }


def test_a_share_link_reproduces_the_view_in_a_fresh_browser(page, browser, app_server, probe):
    open_page(page, "qkv")
    set_text(page, TEXT)
    set_widget(page, "layer", "3")
    set_widget(page, "head", "7")
    set_widget(page, "qkv.kind", "softmax weights")
    link = page.url
    got = params_of(link)
    assert urlsplit(link).path.rstrip("/").endswith("/qkv")
    assert (got["text"], got["layer"], got["head"], got["qkv.kind"]) == (TEXT, "3", "7", "pattern")
    before = view_of(page)
    # the link shown in the sidebar's share box is the same view
    page.locator('[data-testid="stSidebar"] [data-testid="stExpander"] summary').filter(
        has_text="Share"
    ).click()
    m = mark(page)
    widget(page, "share_show").locator("button").click()
    wait_idle(page, 30_000, since=m)
    shown = page.locator('[data-testid="stSidebar"] [data-testid="stCode"] code').first.text_content()
    assert params_of(shown.strip()) == got

    fresh = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        other = fresh.new_page()
        install(other)
        other.goto(link, wait_until="commit")
        other.wait_for_selector('[data-testid="stApp"]')
        wait_idle(other, 60_000)
        assert view_of(other) == before
        assert exception_boxes(other) == 0
        screenshot(other, "share-opened")
    finally:
        fresh.close()
    assert probe.page_errors == []


def test_a_hostile_link_runs_nothing_crashes_nothing_and_says_what_it_ignored(page, probe):
    hostile = (
        f"attention?text={quote(XSS)}&layer=99999999999999999999999&head=-1e400&query=NaN"
        "&%3Cscript%3Eunknown%3C%2Fscript%3E=1&attention.kind=%3Cb%3Ex%3C%2Fb%3E&source=../../etc"
    )
    open_page(page, hostile)
    assert exception_boxes(page) == 0
    injected = page.evaluate(
        """() => [window.__xss ?? null,
                  document.querySelectorAll('img[src="x"], svg[onload], script:not([src])').length]"""
    )
    assert injected[0] is None
    assert text_value(page) == XSS  # the text arrived, as text
    alerts = " ".join(alert_texts(page))
    assert "From the link" in alerts
    assert "layer" in alerts
    assert "unknown" in alerts
    # the URL was cleaned to the values in use
    cleaned = params_of(page.url)
    assert "layer" not in cleaned
    assert "source" not in cleaned
    assert cleaned["text"] == XSS
    screenshot(page, "share-hostile")

    huge = "word " * 5000  # 25,000 characters: over the text box's limit
    open_page(page, f"attention?text={quote(huge)}&head=3")
    assert exception_boxes(page) == 0
    assert "From the link" in " ".join(alert_texts(page))
    assert text_value(page) != huge
    assert probe.dialogs == []
