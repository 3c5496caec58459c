"""The query/key space figure: shapes, legend, lines, labels, escaping, long inputs (no browser)."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import numpy as np
import pytest

from tformer.analysis.rollout import project_2d, top_pairs
from tformer.figures.labels import MAX_TICK_CHARS
from tformer.figures.layers import (
    KEY_NAME,
    LABEL_ALL_POINTS,
    PAIRS_NAME,
    QUERY_NAME,
    SELECTED_NAME,
    pc_title,
    qk_space_figure,
)

WORDS = "[CLS] the cat sat on the mat because it was tired [SEP]".split()
CHINESE = ["[CLS]", *"小猫跳到了桌子上", "[SEP]"]
HOSTILE = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "$x$", "a&b", "<b>B</b>", "%{x}"]


def fake(n: int, seed: int = 0, explained: tuple[float, float] = (0.5, 0.25)) -> SimpleNamespace:
    """Anything with q2, k2 and explained will do (duck typing)."""
    rng = np.random.default_rng(seed)
    return SimpleNamespace(
        q2=rng.normal(size=(n, 2)), k2=rng.normal(size=(n, 2)), explained=np.array(explained)
    )


def real(n: int, d_head: int = 8, seed: int = 0):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(n, d_head)).astype(np.float32)
    k = rng.normal(size=(n, d_head)).astype(np.float32)
    s = q @ k.T / np.sqrt(d_head)
    e = np.exp(s - s.max(-1, keepdims=True))
    return project_2d(q, k, translate_keys=True), e / e.sum(-1, keepdims=True)


def by_name(fig, name: str) -> list:
    return [t for t in fig.data if t.name == name]


def lines(fig) -> list:
    return [t for t in fig.data if t.legendgroup == "pairs"]


def texts(fig, name: str) -> list[str]:
    return [s for t in by_name(fig, name) if t.text is not None for s in t.text if s]


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("proj", "labels", "needle"),
    [
        (
            SimpleNamespace(q2=np.zeros(3), k2=np.zeros((3, 2)), explained=np.zeros(2)),
            WORDS[:3],
            "shape (3,)",
        ),
        (
            SimpleNamespace(q2=np.zeros((3, 2)), k2=np.zeros((4, 2)), explained=np.zeros(2)),
            WORDS[:3],
            "(3, 2) and (4, 2)",
        ),
        (
            SimpleNamespace(q2=np.zeros((3, 3)), k2=np.zeros((3, 3)), explained=np.zeros(2)),
            WORDS[:3],
            "(3, 3) and (3, 3)",
        ),
        (fake(4), WORDS[:3], "(4, 2) but 3 tokens"),
        (SimpleNamespace(q2=np.zeros((0, 2)), k2=np.zeros((0, 2)), explained=np.zeros(2)), [], "(0, 2)"),
        (SimpleNamespace(q2=np.zeros((2, 2)), k2=np.zeros((2, 2)), explained=np.zeros(3)), WORDS[:2], "[2]"),
        (
            SimpleNamespace(q2=np.full((2, 2), np.nan), k2=np.zeros((2, 2)), explained=np.zeros(2)),
            WORDS[:2],
            "finite",
        ),
    ],
)
def test_rejects_bad_shapes_naming_them(proj, labels, needle):
    with pytest.raises(ValueError, match=re.escape(needle)):
        qk_space_figure(proj, labels)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"pairs": [(0, 4, 0.5)]}, "(0, 4, 0.5)"),
        ({"pairs": [(-1, 0, 0.5)]}, "0..3"),
        ({"pairs": [(0.5, 0, 0.5)]}, "(0.5, 0, 0.5)"),
        ({"pairs": [(0, 1)]}, "(query_pos, key_pos, weight)"),
        ({"query": 4}, "query=4"),
    ],
)
def test_rejects_pairs_and_a_query_outside_the_tokens(kwargs, needle):
    with pytest.raises(ValueError, match=re.escape(needle)):
        qk_space_figure(fake(4), WORDS[:4], **kwargs)


# --------------------------------------------------------------------------------------------
# what is drawn
# --------------------------------------------------------------------------------------------
def test_queries_and_keys_are_two_legend_entries_with_their_own_colors_and_symbols():
    fig = qk_space_figure(fake(5), WORDS[:5])
    (q,) = by_name(fig, QUERY_NAME)
    (k,) = by_name(fig, KEY_NAME)
    assert q.showlegend
    assert k.showlegend
    assert fig.layout.showlegend
    assert q.marker.color != k.marker.color
    assert q.marker.symbol != k.marker.symbol
    assert len(q.x) == len(k.x) == 5
    assert q.legendrank < k.legendrank  # "query" is listed first
    assert not lines(fig)
    assert not by_name(fig, SELECTED_NAME)


def test_points_sit_at_the_projected_coordinates():
    proj = fake(6, seed=3)
    fig = qk_space_figure(proj, WORDS[:6])
    (q,) = by_name(fig, QUERY_NAME)
    (k,) = by_name(fig, KEY_NAME)
    np.testing.assert_allclose(np.c_[q.x, q.y], proj.q2, rtol=1e-6)
    np.testing.assert_allclose(np.c_[k.x, k.y], proj.k2, rtol=1e-6)


def test_one_line_per_pair_from_the_query_to_the_key_darker_for_more_weight():
    proj, pattern = real(12)
    pairs = top_pairs(pattern, 7)
    fig = qk_space_figure(proj, WORDS, pairs=pairs)
    drawn = lines(fig)
    assert len(drawn) == len(pairs) == fig.layout.meta["pairs"]
    assert sum(bool(t.showlegend) for t in drawn) == 1
    assert drawn[0].name == PAIRS_NAME
    for t, (i, j, _) in zip(drawn, pairs, strict=True):
        np.testing.assert_allclose([t.x[0], t.y[0]], proj.q2[i], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose([t.x[-1], t.y[-1]], proj.k2[j], rtol=1e-5, atol=1e-6)
    opacities = [t.opacity for t in drawn]  # pairs come heaviest first
    assert opacities == sorted(opacities, reverse=True)
    assert opacities[0] == 1.0
    assert f"weight {pairs[0][2]:.3g}" in drawn[0].hovertext[1]


def test_lines_are_drawn_under_the_labelled_points():
    fig = qk_space_figure(fake(5), WORDS[:5], pairs=[(0, 1, 0.9), (2, 3, 0.1)])
    order = [t.legendgroup for t in fig.data]
    assert order.index(QUERY_NAME) > max(i for i, g in enumerate(order) if g == "pairs")


def test_selected_query_is_ringed_and_labelled_once_in_bold():
    fig = qk_space_figure(fake(5), WORDS[:5], query=2)
    (ring,) = by_name(fig, SELECTED_NAME)
    assert ring.text == ("<b>cat</b>",)
    assert "cat" not in texts(fig, QUERY_NAME)  # not twice on top of each other
    assert "cat" in texts(fig, KEY_NAME)
    assert fig.layout.meta["query"] == 2


def test_axis_titles_give_the_share_of_variance_and_scales_are_equal():
    fig = qk_space_figure(fake(8, explained=(0.623, 0.071)), WORDS[:8])
    assert fig.layout.xaxis.title.text == "PC1 (62 % of variance)"
    assert fig.layout.yaxis.title.text == "PC2 (7.1 % of variance)"
    assert fig.layout.yaxis.scaleanchor == "x"
    assert fig.layout.yaxis.scaleratio == 1
    plot_w, plot_h = fig.layout.meta["plot_px"]
    x0, x1 = fig.layout.xaxis.range
    y0, y1 = fig.layout.yaxis.range
    assert (x1 - x0) / plot_w == pytest.approx((y1 - y0) / plot_h, rel=0.01)
    assert fig.layout.height == plot_h + fig.layout.margin.t + fig.layout.margin.b


def test_every_point_lies_inside_the_ranges():
    proj = fake(30, seed=5)
    fig = qk_space_figure(proj, [f"t{i}" for i in range(30)])
    pts = np.concatenate([proj.q2, proj.k2])
    (x0, x1), (y0, y1) = fig.layout.xaxis.range, fig.layout.yaxis.range
    assert (pts[:, 0] > x0).all()
    assert (pts[:, 0] < x1).all()
    assert (pts[:, 1] > y0).all()
    assert (pts[:, 1] < y1).all()


@pytest.mark.parametrize(
    ("share", "number"),
    [(0.0, "0.0"), (0.004, "0.4"), (0.0994, "9.9"), (0.0996, "10"), (0.623, "62"), (1.0, "100")],
)
def test_pc_title_reads_well(share, number):
    assert pc_title(2, share) == f"PC2 ({number} % of variance)"


def test_fonts_are_large_enough_to_project():
    fig = qk_space_figure(fake(5), WORDS[:5], pairs=[(0, 1, 0.5)], query=1, title="t")
    sizes = [t.textfont.size for t in fig.data if t.textfont.size is not None]
    sizes += [fig.layout.xaxis.tickfont.size, fig.layout.yaxis.tickfont.size, fig.layout.legend.font.size]
    assert sizes
    assert min(sizes) >= 12
    assert 15 <= fig.layout.xaxis.title.font.size <= 17
    assert 15 <= fig.layout.title.font.size <= 17


# --------------------------------------------------------------------------------------------
# labels: escaping, Chinese, long inputs
# --------------------------------------------------------------------------------------------
def test_user_text_is_escaped_everywhere():
    labels = HOSTILE
    fig = qk_space_figure(fake(len(labels)), labels, pairs=[(0, 1, 0.7), (4, 0, 0.2)], query=0)
    text = fig.to_json()
    for bad in ("<script", "<img", "$x$", "<b>B"):
        assert bad not in text
    assert "&lt;script&gt;" in text
    assert "a&amp;b" in text
    assert "&#36;x&#36;" in text
    # user text stays out of the hover templates, where "%{x}" would be substituted
    for t in fig.data:
        template = t.hovertemplate or ""
        assert "%{x}" not in template
        assert not any(s in template for s in ("alert", "a&amp;b", "&#36;"))
    assert any("%{x}" in h for t in fig.data for h in (t.hovertext or []))


def test_long_tokens_are_cut_on_the_plot_but_whole_in_the_hover():
    long = "supercalifragilistic"
    fig = qk_space_figure(fake(2), [long, "b"])
    (q,) = by_name(fig, QUERY_NAME)
    assert len(q.text[0]) == MAX_TICK_CHARS
    assert q.text[0].endswith("\u2026")
    assert q.hovertext[0] == f"query 0: {long}"


def test_chinese_labels_are_on_the_plot():
    fig = qk_space_figure(fake(len(CHINESE)), CHINESE, pairs=[(1, 2, 0.6)])
    for ch in "小猫跳到了桌子上":
        assert ch in texts(fig, QUERY_NAME)
        assert ch in texts(fig, KEY_NAME)
    assert "\\u5c0f" in fig.to_json() or "小" in fig.to_json()


def test_one_token_works():
    proj = project_2d(np.array([[1.0, 2.0]]), np.array([[2.0, 0.0]]))
    fig = qk_space_figure(proj, ["[CLS]"], pairs=[(0, 0, 1.0)], query=0)
    assert len(lines(fig)) == 1
    json.loads(fig.to_json())
    (x0, x1), (y0, y1) = fig.layout.xaxis.range, fig.layout.yaxis.range
    assert x1 > x0
    assert y1 > y0


def test_coinciding_points_and_d_head_one_get_a_usable_plot():
    same = project_2d(np.ones((3, 4)), np.ones((3, 4)), translate_keys=True)  # every point at 0
    fig = qk_space_figure(same, WORDS[:3])
    assert fig.layout.xaxis.range[1] > fig.layout.xaxis.range[0]
    flat = project_2d(np.arange(5.0)[:, None], -np.arange(5.0)[:, None])  # a line: PC2 is all 0
    fig = qk_space_figure(flat, WORDS[:5])
    assert fig.layout.yaxis.title.text == "PC2 (0.0 % of variance)"
    assert fig.layout.meta["plot_px"][1] >= 280  # not squashed to a sliver


def test_above_forty_tokens_only_the_pairs_and_the_query_are_labelled():
    n = LABEL_ALL_POINTS + 1
    labels = [f"w{i}" for i in range(n)]
    pairs = [(3, 7, 0.9), (3, 8, 0.5), (10, 3, 0.2)]
    fig = qk_space_figure(fake(n), labels, pairs=pairs, query=20)
    assert sorted(texts(fig, QUERY_NAME)) == ["w10", "w3"]
    assert sorted(texts(fig, KEY_NAME)) == ["w3", "w7", "w8"]
    assert by_name(fig, SELECTED_NAME)[0].text == ("<b>w20</b>",)
    assert fig.layout.meta["labelled"] == 6
    # every point still hovers with its token, in a pale background trace or a labelled one
    hovers = [h for t in fig.data if t.name in (QUERY_NAME, KEY_NAME) for h in t.hovertext]
    assert len(hovers) == 2 * n
    assert "query 40: w40" in hovers
    assert "key 0: w0" in hovers
    faded = [t for t in fig.data if t.name in (QUERY_NAME, KEY_NAME) and not t.showlegend]
    assert len(faded) == 2
    assert all(t.marker.opacity < 0.5 for t in faded)


def test_at_forty_tokens_every_point_is_labelled():
    labels = [f"w{i}" for i in range(LABEL_ALL_POINTS)]
    fig = qk_space_figure(fake(LABEL_ALL_POINTS), labels)
    assert len(texts(fig, QUERY_NAME)) == len(texts(fig, KEY_NAME)) == LABEL_ALL_POINTS


def test_long_input_without_pairs_has_no_labels_and_no_faded_layer():
    fig = qk_space_figure(fake(100), [f"w{i}" for i in range(100)])
    assert texts(fig, QUERY_NAME) == []
    assert texts(fig, KEY_NAME) == []
    assert len(by_name(fig, QUERY_NAME)) == 1
    assert by_name(fig, QUERY_NAME)[0].showlegend


def test_payload_at_512_tokens_stays_small_and_binary():
    proj, pattern = real(512, d_head=32)
    labels = [f"tok{i}" for i in range(512)]
    fig = qk_space_figure(proj, labels, pairs=top_pairs(pattern, 10), query=100)
    text = fig.to_json()
    assert len(text) < 500_000
    spec = json.loads(text)
    xs = [t["x"] for t in spec["data"] if t["name"] in (QUERY_NAME, KEY_NAME)]
    assert all(isinstance(x, dict) and "bdata" in x for x in xs)  # float32, base64


def test_output_is_deterministic():
    proj, pattern = real(10)
    build = lambda: qk_space_figure(proj, WORDS[:10], pairs=top_pairs(pattern, 5), query=3).to_json()  # noqa: E731
    assert build() == build()


def test_coinciding_points_share_one_label():
    # Five queries at one spot (e.g. [UNK] tokens that differ by position only), one apart.
    q2 = np.array([[0.0, 0.0], [0.0, 0.001], [0.001, 0.0], [0.0, 0.0], [0.001, 0.001], [5.0, 5.0]])
    proj = SimpleNamespace(q2=q2, k2=-q2, explained=np.array([0.6, 0.3]))
    fig = qk_space_figure(proj, ["a", "b", "c", "d", "e", "far"])
    assert texts(fig, QUERY_NAME) == ["a \u00b7 b \u00b7 c +2", "far"]
    assert fig.layout.meta["labelled"] == 4  # the two groups, for queries and for keys
    (q,) = by_name(fig, QUERY_NAME)
    assert len(q.x) == 6
    assert q.hovertext[3] == "query 3: d"  # each point still hovers alone


def test_a_repeated_word_next_to_itself_is_labelled_once():
    q2 = np.array([[0.0, 0.0], [0.15, 0.0], [9.0, 0.0]])  # "the" twice, ~10 px apart
    proj = SimpleNamespace(q2=q2, k2=q2 + 3.0, explained=np.array([0.9, 0.1]))
    fig = qk_space_figure(proj, ["the", "the", "the"])
    assert texts(fig, QUERY_NAME) == ["the", "the"]  # the third is far away: labelled


def test_the_selected_query_leads_its_group_in_bold():
    q2 = np.array([[0.0, 0.0], [0.0, 0.001], [4.0, 4.0]])
    proj = SimpleNamespace(q2=q2, k2=-q2, explained=np.array([0.6, 0.3]))
    fig = qk_space_figure(proj, ["x", "y", "z"], query=1)
    assert by_name(fig, SELECTED_NAME)[0].text == ("<b>y</b> \u00b7 x",)
    assert texts(fig, QUERY_NAME) == ["z"]


def test_a_cloud_flat_along_one_axis_still_gets_a_scale():
    q2 = np.array([[1.0, 0.0], [1.0, 2.0], [1.0, 4.0]])  # every x equal (duck-typed input)
    fig = qk_space_figure(SimpleNamespace(q2=q2, k2=q2, explained=np.array([0.5, 0.5])), WORDS[:3])
    (x0, x1), (y0, y1) = fig.layout.xaxis.range, fig.layout.yaxis.range
    assert np.isfinite([x0, x1, y0, y1]).all()
    assert x1 > x0
    assert y0 < 0
    assert y1 > 4
