"""The Export page's downloads: the tensors as NPZ, the metrics as CSV, the offline HTML report.

A download button's data is a callable here, so nothing is packed until the button is clicked:
Streamlit runs the callable in a worker thread on click (a "deferred" download).
"""

from __future__ import annotations

from typing import Any

from .heads import head_names, head_stats

__all__ = ["csv_file", "head_names", "head_stats", "npz_file", "report_file"]  # the heads': the metrics table


def report_file(
    capture: Any, text: str, model_label: str, heads: list[tuple[int, int]], metrics: Any, lang: str
) -> Any:
    """A callable that builds the report in ``lang`` when its download button is clicked (in a
    worker thread, which has no session: the language is passed in)."""

    def build() -> bytes:
        from ...analysis.metrics import metrics_table
        from ...figures.report import build_report
        from ...i18n import use_language

        with use_language(lang):
            rows = metrics_table(metrics, decimals=3) if metrics is not None else []
            html = build_report(capture, text, model_label=model_label, heads=heads, metrics=rows)
        return html.encode("utf-8")

    return build


def npz_file(capture: Any) -> Any:
    def build() -> bytes:
        from ...export import capture_npz

        return capture_npz(capture)

    return build


def csv_file(metrics: Any) -> Any:
    def build() -> str:
        from ...analysis.metrics import metrics_table
        from ...export import rows_csv

        return rows_csv(metrics_table(metrics, decimals=6))

    return build
