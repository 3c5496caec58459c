"""Downloads in Chromium: a chart's PNG and SVG, and the offline HTML report, which then opens
and draws in a browser context with the network off and every request to a host refused."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from .streamlit_driver import exception_boxes, open_page, screenshot, widget

WORDS = "cats chase small mice quickly".split()
TEXT_128 = " ".join(WORDS[i % 5] for i in range(126))  # 128 tokens with [CLS] and [SEP]
HOSTILE = ' <img src=x onerror="window.__xss=1"> <script>window.__xss=2</script>'


def download(page, key: str, folder: Path) -> Path:
    with page.expect_download(timeout=60_000) as info:
        widget(page, key).locator("button").first.click()
    path = folder / info.value.suggested_filename
    info.value.save_as(path)
    return path


def test_a_chart_downloads_as_png_and_svg(page, tmp_path):
    open_page(page, f"export?text={quote('Cats chase small mice.')}")
    assert exception_boxes(page) == 0
    png = download(page, "export_head_png", tmp_path).read_bytes()
    svg = download(page, "export_head_svg", tmp_path).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(png) > 10_000
    assert svg.lstrip().startswith(b"<svg")
    assert b"mice" in svg  # the tokens are in the drawing


def test_the_report_opens_and_draws_offline_and_keeps_text_as_text(page, browser, tmp_path):
    open_page(page, f"export?text={quote(TEXT_128 + HOSTILE)}")
    report = download(page, "export_report", tmp_path)
    size = report.stat().st_size
    assert size <= 5 * 2**20, size

    offline = browser.new_context(offline=True, viewport={"width": 1200, "height": 900})
    asked: list[str] = []

    def refuse_hosts(route) -> None:
        url = route.request.url
        if url.startswith(("file:", "data:")):
            route.continue_()
        else:
            asked.append(url)
            route.abort()

    offline.route("**/*", refuse_hosts)
    try:
        view = offline.new_page()
        view.goto(report.as_uri())
        view.wait_for_load_state("load")
        images = view.evaluate("() => Array.from(document.images).map((i) => [i.complete, i.naturalWidth])")
        assert len(images) >= 2, images
        assert all(done and w > 0 for done, w in images), images
        assert view.evaluate("() => window.__xss ?? null") is None
        body = view.inner_text("body")
        assert "<script>window.__xss=2</script>" in body  # shown as text
        assert view.evaluate("() => document.querySelectorAll('script').length") == 0
        screenshot(view, "export-report-offline")
    finally:
        offline.close()
    assert asked == []


def test_the_metrics_csv_holds_every_heads_metrics_of_the_text(page, tmp_path):
    """The CSV is measured when its button is clicked: it holds what head_metrics gives for the
    same text, to the CSV's 6 decimals."""
    import torch

    from tformer import capture_text, load_pretrained
    from tformer.analysis.metrics import head_metrics, metrics_table
    from tformer.export import rows_csv
    from tformer.ui.process import app_threads

    text = "Cats chase small mice."
    open_page(page, f"export?text={quote(text)}")
    got = download(page, "export_csv", tmp_path).read_text()
    model, tok = load_pretrained("minilm")
    threads = torch.get_num_threads()
    torch.set_num_threads(app_threads())  # as the app runs it: a matmul's rounding depends on the split
    try:
        cap = capture_text(model, tok, text, ["pattern"])
    finally:
        torch.set_num_threads(threads)
    enc = cap.encoded
    metrics = head_metrics(cap.pattern, cls_pos=enc.leading_special, sep_pos=enc.trailing_specials or None)
    assert got == rows_csv(metrics_table(metrics, decimals=6))
    assert got.count("\n") == 1 + 6 * 12  # a header and a row per head
