"""Helpers shared by the figure tests."""

from __future__ import annotations

SCRIPT = "<script>alert(1)</script>"
CJK = ["[CLS]", "小", "猫", "跳", "了", "。", "[SEP]"]


def font_sizes(obj, key: str = "") -> list[int]:
    """Every font size set anywhere in a figure dict."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "size" and key in ("font", "tickfont", "textfont") and isinstance(v, (int, float)):
                out.append(v)
            out += font_sizes(v, k)
    elif isinstance(obj, list):
        for v in obj:
            out += font_sizes(v, key)
    return out
