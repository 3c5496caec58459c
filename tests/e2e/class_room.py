"""A live class in Chromium: a teacher's page and students' pages, each in its own browser
context, driven as people drive them (tests/e2e/test_classroom.py on one server, and
tests/e2e/test_class_deploy.py across two replicas behind nginx).

What a student sees changes without anything done on their page (their poll finds the teacher's
change), so these helpers wait for what the page shows rather than for a run they started.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from .streamlit_driver import mark, nav_to, set_widget, wait_idle, widget

CODE = re.compile(r"^[0-9A-Z]{4}-[0-9A-Z]{4}$")  # a join code as the teacher's page shows it
FOLLOW_TIMEOUT_S = 30.0  # a following student's page on a busy 2-core machine


def click(page: Any, key: str, text: str | None = None) -> None:
    """Click the button with ``key`` (a pill of that widget named ``text``), wait for the rerun."""
    target = widget(page, key).locator("button")
    if text is not None:
        target = target.filter(has_text=text)
    m = mark(page)
    target.first.click()
    wait_idle(page, since=m)


def type_into(page: Any, key: str, text: str) -> None:
    """Type into a text input without committing it (a button reads it)."""
    box = widget(page, key).locator("input").first
    box.fill(text)
    box.press("Tab")  # commit the value before a button reads it


def open_room(page: Any) -> str:
    """On the Live class page: open a room, return its join code as shown (ABCD-2345)."""
    click(page, "room.open")
    shown = page.locator('[data-testid="stMain"] h2').filter(has_text=CODE)
    shown.first.wait_for()
    code = shown.first.inner_text().strip()
    assert CODE.fullmatch(code), code
    return code


def join(page: Any, name: str) -> None:
    """On the Live class page opened by the join link: type the name and join."""
    type_into(page, "room.name", name)
    click(page, "room.join")


def pick(page: Any, key: str, value: str, tries: int = 3) -> None:
    """Choose ``value`` in the select box ``key``, as a person does: again when the list closed
    before it could be clicked (right after the reveal the page grows by its figures, and a list
    opened during that layout shift closes again, measured: 1 of 6 opens)."""
    for attempt in range(tries):
        try:
            set_widget(page, key, value, timeout=10_000)
            return
        except Exception:
            if attempt == tries - 1:
                raise
            page.keyboard.press("Escape")


def badge(page: Any) -> str:
    bar = widget(page, "room_bar")
    return bar.first.inner_text() if bar.count() else ""


def eventually(
    what: str, check: Callable[[], bool], timeout_s: float = FOLLOW_TIMEOUT_S, *, page: Any = None
) -> float:
    """Seconds until ``check()`` held; AssertionError naming ``what`` (and what ``page`` shows:
    its path and room bar) after ``timeout_s``."""
    t0 = time.monotonic()
    while True:
        try:
            if check():
                return time.monotonic() - t0
        except Exception:  # the page is redrawing: an element was detached, ask again
            pass
        if time.monotonic() - t0 > timeout_s:
            seen = (
                f" (the page: {path_of(page)!r}, its room bar: {badge(page)!r})" if page is not None else ""
            )
            raise AssertionError(f"{what}: not within {timeout_s:.0f} s{seen}")
        time.sleep(0.05)


def path_of(page: Any) -> str:
    """The page's path as the browser has it (``location``; Playwright's ``page.url`` was seen
    to keep the path from before a page switch made by the server for seconds)."""
    return str(page.evaluate("location.pathname")).strip("/")


def go(page: Any, url_path: str) -> None:
    """The teacher opens another page from the sidebar (the same session: the room stays)."""
    nav_to(page, url_path)
