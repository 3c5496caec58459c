"""The server that warms itself up (`tformer.ui.startup`; serve.py itself is driven in
tests/e2e/test_serve.py): after the warm-up a first visitor's page builds no model and runs no
capture for the default text; a warm-up that fails is logged and leaves the page to do the work."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("streamlit")

from tformer.ui import caches, startup

from .test_app_pages import assert_clean, charts, open_app


def test_after_the_warm_up_a_first_page_finds_the_model_and_the_capture_done(monkeypatch):
    assert startup.warm_up() > 0

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the warm-up should have done this")

    monkeypatch.setattr(caches, "_build_model", refuse)
    monkeypatch.setattr(caches, "capture_ids", refuse)
    at = open_app("pages/attention.py")
    assert_clean(at)
    assert charts(at)


def test_a_failed_warm_up_is_logged_and_raises_nothing(monkeypatch, caplog):
    def broken() -> float:
        raise RuntimeError("no model here")

    monkeypatch.setattr(startup, "warm_up", broken)
    with caplog.at_level(logging.ERROR, logger="tformer.app"):
        startup.warm_in_background().join(30)
    assert "warming up failed" in caplog.text
    assert "no model here" in caplog.text
