"""A view that reads no activation runs no forward pass on a text edit (`PageContext.capture` is
made on first use); every view that does read one still gets it, and a capture the memory guard
refuses still stops the page before it draws."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")

from .test_app_pages import assert_clean, charts, open_app


@pytest.fixture
def forwards(monkeypatch):
    """The texts the app's capture cache ran the model on, in order (tformer.ui.caches)."""
    from tformer.ui import caches

    ran: list[str] = []
    real = caches.capture_ids

    def counting(model, encoded, *args, **kwargs):
        ran.append(" ".join(encoded.tokens))
        return real(model, encoded, *args, **kwargs)

    monkeypatch.setattr(caches, "capture_ids", counting)
    return ran


@pytest.mark.parametrize(
    ("page", "params"),
    [
        ("pages/positional.py", {}),  # the sinusoid table
        ("pages/positional.py", {"positional.section": "offsets"}),
        ("pages/positional.py", {"positional.section": "rotation"}),
        ("pages/encoder.py", {}),  # the architecture drawing
    ],
    ids=["positional-table", "positional-offsets", "positional-rotation", "encoder-architecture"],
)
def test_a_view_without_activations_runs_no_forward_on_an_edit(forwards, page, params):
    at = open_app(page, **params)
    assert_clean(at)
    before = len(forwards)
    at.text_area(key="text").input("Lanterns glow over the quiet harbour tonight.").run()
    assert_clean(at)
    assert charts(at)
    assert forwards[before:] == [], f"{page} ran the model for a view that shows no activation"


@pytest.mark.parametrize(
    ("page", "params"),
    [
        ("pages/positional.py", {"positional.section": "without"}),
        ("pages/encoder.py", {"encoder.section": "ffn"}),
        ("pages/attention.py", {}),
    ],
    ids=["positional-without", "encoder-ffn", "attention"],
)
def test_a_view_with_activations_runs_the_model_on_the_new_text(forwards, page, params):
    at = open_app(page, **params)
    assert_clean(at)
    before = len(forwards)
    at.text_area(key="text").input("Lanterns glow over the quiet harbour tonight.").run()
    assert_clean(at)
    assert any("harbour" in t for t in forwards[before:]), f"{page} showed activations it did not compute"


def test_the_memory_guard_still_stops_a_lazy_page_before_it_draws(monkeypatch):
    from tformer.ui import memory

    at = open_app("pages/encoder.py")
    monkeypatch.setattr(memory, "MAX_CAPTURE_BYTES", 1024)
    at.text_area(key="text").input("A text whose capture no longer fits.").run()
    assert not at.exception
    assert any("Could not run" in e.value for e in at.error), [e.value for e in at.error]
    assert not charts(at)
