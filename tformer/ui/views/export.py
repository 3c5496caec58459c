"""The Export page's downloads: the tensors as NPZ, the metrics as CSV, the offline HTML report.

A download button's data is a callable here, so nothing is packed until the button is clicked:
Streamlit runs the callable in a worker thread on click (a "deferred" download). The per-head
metrics too are measured then, from the capture (`capture_metrics`): on a long text they cost
more than the rest of the page, which an edit would otherwise pay for two buttons nobody has
pressed yet (docs/performance.md).
"""

from __future__ import annotations

from typing import Any

from .heads import head_names

__all__ = ["capture_metrics", "csv_file", "head_names", "npz_file", "report_file"]


def capture_metrics(capture: Any) -> Any:
    """Every head's metrics (`head_metrics`, the special positions from the capture's own
    tokens): what the Heads page's `head_stats` gives for the same text."""
    from ...analysis.metrics import head_metrics

    enc = capture.encoded
    return head_metrics(capture.pattern, cls_pos=enc.leading_special, sep_pos=enc.trailing_specials or None)


def report_file(capture: Any, text: str, model_label: str, heads: list[tuple[int, int]], lang: str) -> Any:
    """A callable that builds the report in ``lang`` when its download button is clicked (in a
    worker thread, which has no session: the language is passed in)."""

    def build() -> bytes:
        from ...analysis.metrics import metrics_table
        from ...figures.report import build_report
        from ...i18n import use_language

        with use_language(lang):
            rows = metrics_table(capture_metrics(capture), decimals=3)
            html = build_report(capture, text, model_label=model_label, heads=heads, metrics=rows)
        return html.encode("utf-8")

    return build


def npz_file(capture: Any) -> Any:
    def build() -> bytes:
        from ...export import capture_npz

        return capture_npz(capture)

    return build


def csv_file(capture: Any) -> Any:
    def build() -> str:
        from ...analysis.metrics import metrics_table
        from ...export import rows_csv

        return rows_csv(metrics_table(capture_metrics(capture), decimals=6))

    return build
