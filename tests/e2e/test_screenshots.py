"""Full-page screenshots of every page at 16 and 512 tokens, and in the Chinese interface with
the Chinese example.

They go to artifacts/screenshots/<page>-16.png, <page>-512.png and <page>-zh.png (<page> is the
page's URL path, "start" for the default page), for a person to look at: readable from the back
of a classroom? Each shot also checks that the page drew what it should: its heading, no
traceback or error box, charts on the pages that show the text, the text in the sidebar; that
no button label or chart title is cut; and in Chinese, that the browser draws no English word
(formulas' words, the heads overview and attributes included: `drawn_words`).

One browser session per variant: the text is set once on the start page and every page is
opened from the sidebar links, in registry order.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from tformer.i18n import tr, use_language

from .._i18n_check import english_words, latex_prose
from .streamlit_driver import (
    MAX_SCREENSHOT_HEIGHT,
    all_ticktext,
    app_pages,
    charts,
    cut_chart_text,
    cut_labels,
    default_app_dir,
    drawn_words,
    exception_boxes,
    main_scroll_height,
    nav_to,
    open_page,
    screenshot,
    set_text,
    set_widget,
    text_value,
    token_text,
)

# The pages of the app under test (TFORMER_APP_DIR or the repo), from its tformer/ui/registry.py.
PAGES = app_pages()

VARIANTS = ["16", "512", "zh"]


def chinese_example() -> dict[str, str]:
    """The first example text whose language is Chinese (assets/examples.json of the app under
    test, else the installed tformer.assets)."""
    path = default_app_dir() / "assets" / "examples.json"
    if path.is_file():
        raw = path.read_text("utf-8")
    else:
        from importlib import resources

        raw = resources.files("tformer.assets").joinpath("examples.json").read_text("utf-8")
    data = json.loads(raw)
    for ex in data["examples"]:
        if ex.get("lang") == "zh":
            return ex
    raise AssertionError("assets/examples.json has no example with lang 'zh'")


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    w, h = struct.unpack(">II", head[16:24])
    return w, h


def alert_count(page: Any, kind: str) -> int:
    """st.error / st.warning boxes on the page ("Error", "Warning")."""
    return page.locator(f'[data-testid="stAlertContent{kind}"]').count()


def alert_texts_of(page: Any, kind: str) -> list[str]:
    return page.locator(
        f'[data-testid="stAlert"]:has([data-testid="stAlertContent{kind}"])'
    ).all_inner_texts()


def tick_labels(page: Any) -> set[str]:
    return {t.strip() for chart in all_ticktext(page) for t in chart}


def set_variant_text(page: Any, variant: str) -> str:
    """Put this variant's text into the sidebar; return the text."""
    if variant == "zh":
        ex = chinese_example()
        set_widget(page, "example", ex["label"])  # the example picker, as a teacher would
        set_widget(page, "lang", "中文")  # and the Chinese interface
        return ex["text"]
    n = int(variant)
    text, exact = token_text(n, variant=n)
    assert exact, "the MiniLM tokenizer is needed for exact token counts"
    set_text(page, text)
    return text


def check_page(page: Any, spec: Any, variant: str, text: str, probe: Any) -> None:
    where = f"/{spec.url_path} ({variant})"
    with use_language("zh" if variant == "zh" else "en"):
        title = tr(spec.heading)
    heading = page.locator('[data-testid="stHeading"]').filter(has_text=title)
    assert heading.count() >= 1, f"{where}: heading {title!r} not drawn"
    assert exception_boxes(page) == 0, where
    assert alert_count(page, "Error") == 0, (where, alert_texts_of(page, "Error"))
    assert probe.page_errors == [], (where, probe.page_errors)
    assert text_value(page) == text, f"{where}: the sidebar's text area does not hold the text"
    if spec.needs_text:
        assert charts(page).count() >= 1, f"{where}: no chart"
        # every chart drawn with a size: an SVG at least 100 x 100 px
        sizes = charts(page).evaluate_all(
            """(cs) => cs.map((c) => { const s = c.querySelector('.main-svg');
                                       const r = s ? s.getBoundingClientRect() : null;
                                       return r ? [Math.round(r.width), Math.round(r.height)] : null; })"""
        )
        small = [sz for sz in sizes if sz is None or min(sz) < 100]
        assert not small, f"{where}: charts not drawn or tiny: {sizes}"
    # nothing drawn is cut: no button label ends in "…", no chart title runs off its chart
    assert not cut_labels(page), f"{where}: labels cut short: {cut_labels(page)}"
    assert not cut_chart_text(page), f"{where}: chart text past the chart's edge: {cut_chart_text(page)}"
    if variant == "zh":
        # every word the browser draws, formulas' prose and the heads overview's included
        texts, tex = drawn_words(page)
        left = english_words(texts + [words for t in tex for words in latex_prose(t)])
        assert not left, f"{where}: English drawn in the Chinese interface: {left}"
    if variant == "512":
        # exactly the model's limit: nothing may be cut, so no "only the first ..." warning
        assert alert_count(page, "Warning") == 0, (where, alert_texts_of(page, "Warning"))


def shoot(page: Any, spec: Any, variant: str) -> Path:
    height = main_scroll_height(page) or 0
    out = screenshot(page, f"{spec.url_path or 'start'}-{variant}")
    w, h = png_size(out)
    want = min(max(height, page.viewport_size["height"]), MAX_SCREENSHOT_HEIGHT)
    assert w == page.viewport_size["width"], (out, w)
    assert h >= want - 2, f"{out}: {h} px tall, the page is {height} px: not the whole page"
    return out


@pytest.mark.parametrize("variant", VARIANTS)
def test_screenshot_of_every_page(page, probe, variant):
    open_page(page, PAGES[0].url_path)
    text = set_variant_text(page, variant)
    assert text_value(page) == text
    seen_labels: set[str] = set()
    for i, spec in enumerate(PAGES):
        if i > 0:
            nav_to(page, spec.url_path, timeout=90_000)
        check_page(page, spec, variant, text, probe)
        if spec.needs_text:
            seen_labels |= tick_labels(page)
        shoot(page, spec, variant)
        assert exception_boxes(page) == 0  # the resizes for the shot broke nothing

    if variant == "16" and any(p.needs_text for p in PAGES):
        words = set(text.split())
        assert words <= {w.lower() for w in seen_labels}, (
            f"words missing from the charts: {words - seen_labels}"
        )
    elif variant == "zh" and any(p.needs_text for p in PAGES):
        chars = {c for c in text if "\u4e00" <= c <= "\u9fff"}
        shown = chars & seen_labels
        assert shown, f"no character of {text!r} is a tick label: {sorted(seen_labels)[:40]}"
