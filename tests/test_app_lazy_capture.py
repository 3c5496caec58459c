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


EDIT = "Lanterns glow over the quiet harbour tonight."


@pytest.mark.parametrize(
    ("page", "params", "reads_activations"),
    [
        ("pages/positional.py", {}, False),  # the sinusoid table
        ("pages/positional.py", {"positional.section": "offsets"}, False),
        ("pages/positional.py", {"positional.section": "rotation"}, False),
        ("pages/encoder.py", {}, False),  # the architecture drawing
        ("pages/positional.py", {"positional.section": "without"}, True),
        ("pages/encoder.py", {"encoder.section": "ffn"}, True),
        ("pages/attention.py", {}, True),
    ],
    ids=[
        "positional-table",
        "positional-offsets",
        "positional-rotation",
        "encoder-architecture",
        "positional-without",
        "encoder-ffn",
        "attention",
    ],
)
def test_an_edit_runs_the_model_only_for_a_view_that_reads_activations(
    forwards, page, params, reads_activations
):
    at = open_app(page, **params)
    assert_clean(at)
    before = len(forwards)
    at.text_area(key="text").input(EDIT).run()
    assert_clean(at)
    assert charts(at)
    ran = [t for t in forwards[before:] if "harbour" in t]
    if reads_activations:
        assert ran, f"{page} showed activations it did not compute"
    else:
        assert forwards[before:] == [], f"{page} ran the model for a view that shows no activation"


def test_the_memory_guard_still_stops_a_lazy_page_before_it_draws(monkeypatch):
    from tformer.ui import memory

    at = open_app("pages/encoder.py")
    monkeypatch.setattr(memory, "MAX_CAPTURE_BYTES", 1024)
    at.text_area(key="text").input("A text whose capture no longer fits.").run()
    assert not at.exception
    assert any("Could not run" in e.value for e in at.error), [e.value for e in at.error]
    assert not charts(at)


def test_a_model_that_fails_on_first_use_stops_the_page_with_a_message(monkeypatch):
    """The capture runs inside the page now: a forward that fails there still gives open_page's
    message, not a traceback."""
    from tformer.ui import caches

    at = open_app("pages/attention.py")

    def failing(*args, **kwargs):
        raise RuntimeError("out of device memory")

    monkeypatch.setattr(caches, "capture_ids", failing)
    at.text_area(key="text").input("A text the model cannot run on.").run()
    assert not at.exception
    assert any("Could not run" in e.value and "out of device memory" in e.value for e in at.error), [
        e.value for e in at.error
    ]
