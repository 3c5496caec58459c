"""The zoom window of a long text's attention: find a typed token, center the window on it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..i18n import tr
from ..model.tokenizer import UNK_MARK
from .binding import bind, set_values, view


def find_token(labels: Sequence[str], typed: str) -> int | None:
    """The first position whose token equals ``typed`` (case-insensitive, the "##" of a word
    piece and the "?" of an unknown token ignored), or, failing that, the first that contains
    it; None when none does."""
    want = typed.strip().lower()
    if not want:
        return None
    clean = [_unmarked(lab.lower().removeprefix("##")) for lab in labels]
    for match in (lambda c: c == want, lambda c: want in c):
        for i, c in enumerate(clean):
            if match(c):
                return i
    return None


def _unmarked(label: str) -> str:
    return label[: -len(UNK_MARK)] if len(label) > len(UNK_MARK) and label.endswith(UNK_MARK) else label


def center_window(position: int, size: int, n: int) -> None:
    """Put the query and key windows around ``position`` (a token just found)."""
    start = min(max(position - size // 2, 0), max(n - size, 0))
    set_values(**{"layers.q0": start, "layers.k0": start})


def jump_box(container: Any, labels: Sequence[str], size: int) -> int | None:
    """A text box: typing a token moves both windows onto it (once, when the text changes, so
    the windows can still be moved by hand). Returns the token's position, or None."""
    kwargs = bind("layers.find")
    store = kwargs["on_change"]

    def jump(*args: Any) -> None:
        store(*args)
        found = find_token(labels, view().get("layers.find"))
        if found is not None:
            center_window(found, size, len(labels))

    kwargs["on_change"] = jump
    container.text_input(tr("jump to a token (type it, Enter)"), max_chars=60, **kwargs)
    return find_token(labels, view().get("layers.find"))
