"""The Train page's "Memory of a step" section under AppTest, in English and Chinese: the lesson
and its formula before anything runs; the button measures both sweeps once per device; the
tables show less memory for checkpointed steps and for micro-batches, and the gradient checks."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from ._i18n_check import english_words, visible_strings
from .test_app_pages import assert_clean
from .test_app_train import open_train

pytestmark = pytest.mark.usefixtures("runs_dir")  # tests/conftest.py: a temporary runs folder


@pytest.fixture(autouse=True)
def _small_sweeps(monkeypatch):
    """One length and two layer counts, two batch sizes, short timings: the same code, quicker."""
    from tformer.ui.views.train import memory

    monkeypatch.setattr(memory, "LENGTHS", (32,))
    monkeypatch.setattr(memory, "BATCHES", (16, 32))
    monkeypatch.setattr(memory, "ROW_SECONDS", 0.02)


def _peaks(table) -> list[float]:
    df = table.value
    return [float(v) for v in df[df.columns[4]]]


def measured(lang: str = "en") -> AppTest:
    at = open_train(lang=lang, **{"train.section": "memory"})
    assert at.latex, "the accumulation identity is shown before anything runs"
    assert not at.dataframe
    at.button(key="train.memory.measure").click().run()
    assert_clean(at)
    return at


def test_the_memory_section_measures_both_ways_to_hold_less():
    at = measured()
    checkpoint, accumulation = at.dataframe
    plain, saved = _peaks(checkpoint)[0::2], _peaks(checkpoint)[1::2]
    assert all(s < p for s, p in zip(saved, plain, strict=True)), (plain, saved)
    whole, micro = _peaks(accumulation)[0::2], _peaks(accumulation)[1::2]
    assert all(m < w for m, w in zip(micro, whole, strict=True)), (whole, micro)
    captions = " ".join(c.value for c in at.caption)
    assert "largest difference" in captions
    assert "Measured on" in captions
    at.run()  # a rerun keeps the results (cached once per device)
    assert len(at.dataframe) == 2


def test_the_memory_section_in_chinese_shows_no_english():
    import torch

    from tformer.efficiency.measure import device_name

    at = measured("zh")
    left = english_words(visible_strings(at), device_name(torch.device("cpu")).split())  # "AMD EPYC"
    assert not left, left
