"""The interface's language.

Every string a user reads is written in English in the code and passed through `tr`:
``tr("The head's weights")`` or, with numbers, ``tr("{n} tokens", n=12)`` (the template is
translated, then formatted). The translations live in one place, the catalog folder
``assets/i18n/<lang>/``: JSON files of ``{"English template": "translation"}``, one file per
part of the app, merged when first read (a template given two different translations is an
error). A template missing from the catalog is shown in English (tests/test_i18n_pages.py
opens every page in Chinese and finds such text).

The language is a per-thread setting: `use_language` sets it for a block (notebooks, tests,
figure builders called outside the app), and the app registers a resolver that reads the
browser session's choice (`set_resolver`), so a Streamlit script run, its fragments included,
always speaks the session's language. No Streamlit here.
"""

from __future__ import annotations

import contextvars
import functools
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.resources import files

LANGUAGES = {"en": "English", "zh": "中文"}

_override: contextvars.ContextVar[str | None] = contextvars.ContextVar("tformer_language", default=None)
_resolver: Callable[[], str | None] | None = None


def set_resolver(resolver: Callable[[], str | None] | None) -> None:
    """Where the language comes from when no `use_language` block is active (the app: the
    session's view state). The resolver returns None where it has no answer."""
    global _resolver
    _resolver = resolver


def language() -> str:
    lang = _override.get()
    if lang is None and _resolver is not None:
        lang = _resolver()
    return lang if lang in LANGUAGES else "en"


@contextmanager
def use_language(lang: str) -> Iterator[None]:
    """Speak ``lang`` inside the block (this thread and context only)."""
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; one of {sorted(LANGUAGES)}")
    token = _override.set(lang)
    try:
        yield
    finally:
        _override.reset(token)


def tr(template: str, /, **values: object) -> str:
    """``template`` in the current language, formatted with ``values`` (str.format)."""
    lang = language()
    text = template
    if lang != "en":
        text = catalog(lang).get(template, template)
    return text.format(**values) if values else text


@functools.cache
def catalog(lang: str) -> dict[str, str]:
    """Every translation of ``lang``: the catalog folder's JSON files merged."""
    merged: dict[str, str] = {}
    origin: dict[str, str] = {}
    folder = files("tformer.assets").joinpath("i18n").joinpath(lang)
    paths = (
        sorted((p for p in folder.iterdir() if p.name.endswith(".json")), key=lambda p: p.name)
        if folder.is_dir()
        else []
    )
    for path in paths:
        entries = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(entries, dict):
            raise ValueError(f"{path}: a catalog file holds one JSON object")
        for key, value in entries.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise ValueError(f"{path}: {key!r} must map a string to a string")
            if key in merged and merged[key] != value:
                raise ValueError(f"{path}: {key!r} is translated differently in {origin[key]}")
            merged[key] = value
            origin[key] = path.name
    return merged
