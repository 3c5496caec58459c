"""The Export page: the report, the tensors and the metrics are offered as downloads."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")

from .test_app_pages import assert_clean, open_app

EXPORT = "pages/export.py"


def test_export_offers_its_downloads():
    at = open_app(EXPORT)
    assert_clean(at)
    assert len(at.get("download_button")) >= 3  # the report, the NPZ, the CSV
