"""Every page, and every section of it, opened in Chinese: no English is left outside formulas,
code, names (MiniLM, softmax...) and the text's own tokens (`tests._i18n_check`)."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")

from tformer.resources import examples
from tformer.ui.registry import PAGES as SPECS
from tformer.ui.registry import page_for

from ._i18n_check import english_words, visible_strings
from .test_app_pages import assert_clean, open_app, sections_of

ZH_TEXT = next(str(e["text"]) for e in examples() if e["lang"] == "zh")
CASES = [(p.script, None) for p in SPECS] + [(p.script, s) for p in SPECS for s in sections_of(p.script)[1:]]


def _tokens(at) -> list[str]:
    return []  # the Chinese example's tokens have no Latin letters; [CLS] and the like are KEPT


def english_left(at) -> list[str]:
    """The strings (deduplicated, cut to 120 characters) that still hold English words."""
    return sorted(set(english_words(visible_strings(at), _tokens(at)).values()))


@pytest.mark.parametrize(("page", "section"), CASES, ids=[f"{p}:{s or ''}" for p, s in CASES])
def test_page_in_chinese_has_no_english_left(page, section):
    params = {"lang": "zh"}
    if section is not None:
        params[f"{page_for(page).key}.section"] = section
    at = open_app(page, text=ZH_TEXT, **params)
    assert_clean(at)
    left = english_left(at)
    assert not left, f"English left on {page} {section or ''}: {left}"


@pytest.mark.parametrize(
    ("case", "params"),
    [
        ("from-scratch encoder", {"source": "scratch"}),
        ("invalid shape", {"source": "scratch", "n_heads": "5", "d_model": "64"}),
        ("hostile link", {"layer": "99999999999999999999", "nonsense": "1"}),
    ],
)
def test_sidebar_states_in_chinese_have_no_english_left(case, params):
    at = open_app(SPECS[1].script, text=ZH_TEXT, lang="zh", **params)
    assert not at.exception
    left = english_left(at)
    assert not left, f"English left with {case}: {left}"


def test_empty_text_in_chinese_has_no_english_left():
    at = open_app(SPECS[1].script, text="", lang="zh")
    assert not at.exception
    left = english_left(at)
    assert not left, f"English left with an empty text: {left}"


def test_language_switch_changes_the_interface_and_back():
    at = open_app(SPECS[1].script, text=ZH_TEXT)
    english = english_left(at)
    assert english  # the English interface has English in it (the check can fail)
    at.radio(key="lang").set_value("zh").run()
    assert_clean(at)
    assert not english_left(at)
    at.radio(key="lang").set_value("en").run()
    assert english_left(at) == english


def test_an_example_picked_in_english_leaves_no_english_after_the_switch():
    at = open_app(SPECS[1].script)
    zh = next(e for e in examples() if e["lang"] == "zh")
    at.selectbox(key="example").set_value(zh["label"]).run()
    assert at.text_area(key="text").value == zh["text"]
    assert at.selectbox(key="example").value is None  # back to "choose an example..."
    at.radio(key="lang").set_value("zh").run()
    assert_clean(at)
    assert not english_left(at)
