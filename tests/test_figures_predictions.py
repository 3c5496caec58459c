"""The Linear -> Softmax -> Output figures: bars in the order given with their numbers, token
text shown literally, shapes checked; the generation grid gray where a key did not exist yet."""

from __future__ import annotations

import numpy as np
import pytest

from tformer.figures.predictions import generation_attention_figure, top_tokens_figure


def test_top_tokens_are_drawn_largest_on_top_with_probability_and_logit():
    fig = top_tokens_figure(
        ["<b>x</b>", "$y$", "z"], [0.5, 0.3, 0.2], [2.0, 1.5, 1.1], title="t", highlight=1
    )
    bar = fig.data[0]
    assert list(bar.x) == [0.5, 0.3, 0.2]
    assert list(bar.y) == [0, 1, 2]
    assert fig.layout.yaxis.autorange == "reversed"  # the first (most probable) on top
    assert list(fig.layout.yaxis.ticktext) == ["&lt;b&gt;x&lt;/b&gt;", "&#36;y&#36;", "z"]
    assert bar.text[0] == "50.0% · z = 2.00"
    assert bar.marker.color[1] != bar.marker.color[0] == bar.marker.color[2]  # the highlight
    assert fig.layout.meta["k"] == 3
    assert fig.layout.xaxis.tickformat == ".0%"
    small = top_tokens_figure(["a", "b"], [0.04, 0.02], [1.0, 0.3], title="t")
    assert small.layout.xaxis.tickformat == ".1%"  # 1%, 1%, 2%, 2% would repeat


@pytest.mark.parametrize(
    ("labels", "probs", "logits", "highlight", "message"),
    [
        (["a"], [0.5, 0.5], [1.0, 1.0], None, r"1 labels and logits of shape \(2,\) for 2 probabilities"),
        (["a", "b"], [0.5, 0.5], [1.0], None, r"2 labels and logits of shape \(1,\) for 2 probabilities"),
        (["a"], [1.0], [1.0], 1, r"highlight=1 is outside 0\.\.0"),
    ],
)
def test_top_tokens_refuse_shapes_that_disagree(labels, probs, logits, highlight, message):
    with pytest.raises(ValueError, match=message):
        top_tokens_figure(labels, probs, logits, title="t", highlight=highlight)


def test_generation_grid_holds_each_step_row_and_grays_keys_not_yet_there():
    rows = [np.array([0.25, 0.75]), np.array([0.1, 0.2, 0.7])]
    fig = generation_attention_figure(rows, ["a", "b", "c", "d"], 2, title="t")
    assert fig.layout.meta["rows"] == 2
    assert fig.layout.meta["cols"] == 4
    assert fig.layout.meta["masked"] == 3  # step 0 could not see c, d; step 1 not d
    with pytest.raises(ValueError, match=r"step 0's row has shape \(1,\), expected \(2,\)"):
        generation_attention_figure([np.array([1.0])], ["a", "b", "c"], 2, title="t")
