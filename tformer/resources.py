"""Files the library ships in assets/ (installed as the package ``tformer.assets``), read through
importlib.resources so that an editable install and a regular wheel install find them alike."""

from __future__ import annotations

import functools
import json
from importlib.resources import files
from typing import Any


def asset_text(name: str) -> str:
    """The text of ``assets/<name>`` (UTF-8)."""
    return files("tformer.assets").joinpath(name).read_text(encoding="utf-8")


def examples() -> list[dict[str, Any]]:
    """The example texts offered in the app: dicts with ``label``, ``lang`` and ``text``."""
    return [dict(e) for e in _examples()]


@functools.cache
def _examples() -> tuple[dict[str, Any], ...]:
    return tuple(json.loads(asset_text("examples.json"))["examples"])
