"""The Train page's "Memory of a step" section under AppTest, in English and Chinese: the lesson
and its formula before anything runs; the lengths and layer counts the checkpointing sweep
measures are chosen with two multiselects bound to the view state (a link carries them); the
button measures once per device and shapes, and a change of the shapes measures the new ones;
the tables show less memory for checkpointed steps and for micro-batches, and the gradient
checks; a row the sweep's time budget refuses says so."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from ._i18n_check import english_words, visible_strings
from .test_app_pages import assert_clean
from .test_app_train import open_train

pytestmark = pytest.mark.usefixtures("runs_dir")  # tests/conftest.py: a temporary runs folder

# a link's small sweep (with one layer checkpointing saves nothing: the backward pass recomputes
# that layer's activations, which are all a plain step keeps)
SMALL = {"train.memory_lengths": "16", "train.memory_layers": "2,3"}


@pytest.fixture(autouse=True)
def _short_rows(monkeypatch):
    """Two batch sizes and short timings: the same code, quicker."""
    from tformer.ui.views.train import memory

    monkeypatch.setattr(memory, "BATCHES", (16, 32))
    monkeypatch.setattr(memory, "ROW_SECONDS", 0.02)


def _column(table, i: int) -> list[str]:
    df = table.value
    return [str(v) for v in df[df.columns[i]]]


def _peaks(table) -> list[float]:
    return [float(v) for v in _column(table, 4)]


def measured(lang: str = "en", **params: str) -> AppTest:
    at = open_train(lang=lang, **{"train.section": "memory", **SMALL, **params})
    assert at.latex, "the accumulation identity is shown before anything runs"
    assert not at.dataframe
    at.button(key="train.memory.measure").click().run()
    assert_clean(at)
    return at


def test_the_memory_section_measures_both_ways_to_hold_less():
    at = measured()
    assert at.multiselect(key="train.memory_lengths").value == [16]  # from the link
    assert at.multiselect(key="train.memory_layers").value == [2, 3]
    checkpoint, accumulation = at.dataframe
    assert _column(checkpoint, 0) == ["2", "2", "3", "3"]  # layers, plain then checkpointed
    assert _column(checkpoint, 1) == ["16"] * 4  # length
    plain, saved = _peaks(checkpoint)[0::2], _peaks(checkpoint)[1::2]
    assert all(s < p for s, p in zip(saved, plain, strict=True)), (plain, saved)
    whole, micro = _peaks(accumulation)[0::2], _peaks(accumulation)[1::2]
    assert all(m < w for m, w in zip(micro, whole, strict=True)), (whole, micro)
    captions = " ".join(c.value for c in at.caption)
    assert "largest difference" in captions
    assert "Measured on" in captions
    at.run()  # a rerun keeps the results (cached once per device and shapes)
    assert len(at.dataframe) == 2


def test_choosing_other_shapes_measures_them_and_goes_into_the_link():
    at = measured()
    # each multiselect's callback runs as Streamlit calls it
    at.multiselect(key="train.memory_lengths").set_value([32, 16]).run()
    at.multiselect(key="train.memory_layers").set_value([1]).run()
    assert_clean(at)
    checkpoint = at.dataframe[0]
    assert _column(checkpoint, 1) == ["16", "16", "32", "32"]  # in increasing order
    assert _column(checkpoint, 0) == ["1"] * 4
    query = at.session_state["view"].to_query()
    assert (query["train.memory_lengths"], query["train.memory_layers"]) == ("32,16", "1")

    at.multiselect(key="train.memory_layers").set_value([]).run()  # nothing to sweep
    assert_clean(at)
    assert len(at.dataframe) == 1  # the accumulation sweep alone
    assert any("Choose at least one length and one layer count" in i.value for i in at.info)


def test_a_link_with_a_shape_the_section_does_not_offer_falls_back():
    at = open_train(clean=False, **{"train.section": "memory", "train.memory_lengths": "16,100000"})
    assert not at.exception
    assert at.multiselect(key="train.memory_lengths").value == [32, 64]  # the default


def test_rows_past_the_sweeps_time_are_not_run_and_say_why(monkeypatch):
    from tformer.ui.views.train import memory

    monkeypatch.setattr(memory, "SWEEP_SECONDS", 1e-6)
    at = measured(**{"train.memory_layers": "1"})
    checkpoint = at.dataframe[0]
    assert _column(checkpoint, 4)[1:] == ["–"]  # the first row runs, the second is refused
    [note] = _column(checkpoint, 6)[1:]
    assert note.startswith("not run: about")
    assert any("nor started when the row measured before it predicts" in c.value for c in at.caption)
    zh = measured("zh", **{"train.memory_layers": "1"})
    assert _column(zh.dataframe[0], 6)[1].startswith("未运行")


def test_the_memory_section_in_chinese_shows_no_english():
    import torch

    from tformer.efficiency.measure import device_name

    at = measured("zh")
    left = english_words(visible_strings(at), device_name(torch.device("cpu")).split())  # "AMD EPYC"
    assert not left, left
