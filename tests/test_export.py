"""What a user takes away: tensors as NPZ, metrics as CSV, figures as PNG and SVG, and the
offline HTML report (self-contained, escaped, small)."""

from __future__ import annotations

import csv
import io
import re

import numpy as np
import pytest

from tformer import load_pretrained
from tformer.analysis.metrics import head_metrics, metrics_table
from tformer.export import capture_npz, rows_csv
from tformer.figures.attention import attention_heatmap
from tformer.figures.images import figure_image, image_export_problem
from tformer.figures.report import build_report
from tformer.i18n import use_language
from tformer.model.capture import ATTENTION, capture_text

WORDS = "cats chase small mice quickly".split()
TEXT_128 = " ".join(WORDS[i % 5] for i in range(126))  # 126 one-token words + [CLS], [SEP]
HOSTILE = '<script>alert(1)</script> <img src=x onerror="alert(2)"> & "quotes" 猫'


@pytest.fixture(scope="module")
def minilm():
    return load_pretrained("minilm")


@pytest.fixture(scope="module")
def cap128(minilm):
    model, tok = minilm
    cap = capture_text(model, tok, TEXT_128, ATTENTION)
    assert cap.n_pos == 128
    return cap


def test_npz_holds_every_tensor_and_the_tokens_and_loads_without_pickle(minilm):
    model, tok = minilm
    cap = capture_text(model, tok, HOSTILE, ATTENTION)
    data = np.load(io.BytesIO(capture_npz(cap)), allow_pickle=False)
    assert list(data["tokens"]) == cap.labels
    assert list(data["ids"]) == cap.encoded.ids
    assert list(data["layers"]) == list(range(model.cfg.n_layers))
    for name in ATTENTION:
        np.testing.assert_array_equal(data[name], cap[name])


def test_metrics_csv_has_a_row_per_head_and_reads_back(cap128):
    rows = metrics_table(head_metrics(cap128.pattern), decimals=6)
    back = list(csv.DictReader(io.StringIO(rows_csv(rows))))
    assert len(back) == 6 * 12
    assert back[0].keys() == rows[0].keys()
    assert float(back[2]["previous"]) == pytest.approx(rows[2]["previous"])
    assert rows_csv([]) == ""


def test_figures_export_as_png_and_svg():
    if image_export_problem():
        pytest.skip(image_export_problem())  # CI installs Chromium: this runs there
    p = np.full((3, 3), 1 / 3, dtype=np.float32)
    fig = attention_heatmap(p, ["a", "<b>", "c"])
    png = figure_image(fig, "png")
    svg = figure_image(fig, "svg")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert svg.lstrip().startswith(b"<svg")
    assert b"</svg>" in svg
    with pytest.raises(ValueError, match="format"):
        figure_image(fig, "gif")


def test_report_at_128_tokens_is_small_self_contained_and_escaped(cap128):
    rows = metrics_table(head_metrics(cap128.pattern), decimals=3)
    html = build_report(
        cap128,
        TEXT_128 + HOSTILE,
        model_label="MiniLM <i>x</i>",
        heads=[(0, 2), (4, 5), (2, 7)],
        metrics=rows,
    )
    size = len(html.encode("utf-8"))
    assert size <= 5 * 2**20, size
    # nothing is fetched: no script, no external reference outside the data: images
    assert "<script" not in html.lower()
    links = re.findall(r'(?:src|href)="([^"]*)"', html)
    assert links
    assert all(link.startswith("data:") for link in links)
    outside_data = re.sub(r'data:[^"]+', "", html)
    assert "http://" not in outside_data
    assert "https://" not in outside_data
    assert "Content-Security-Policy" in html
    # user text is escaped, never markup
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img src=x" not in html
    assert "<i>x</i>" not in html
    assert html.count("<figure>") == 3
    assert html.count("<tr>") >= 72  # a row per head


def test_report_speaks_chinese(cap128):
    with use_language("zh"):
        html = build_report(cap128, "猫坐在垫子上。", model_label="MiniLM")
    assert 'lang="zh-Hans"' in html
    assert "注意力" in html


def test_report_refuses_a_partial_capture(minilm):
    model, tok = minilm
    cap = capture_text(model, tok, "a b", ["pattern"], layers=[0])
    with pytest.raises(ValueError, match="every layer"):
        build_report(cap, "a b", model_label="MiniLM")
