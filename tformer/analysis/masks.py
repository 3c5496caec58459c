r"""Attention masks to try on a model: who may attend to whom, as bool [query_pos, key_pos].

True means query i may attend to key j. A mask reaches the model through the encoder's own
``attn_mask`` argument (`tformer.model.capture.capture_ids`), which ANDs it with padding and the
causal mask, so a masked score is :math:`-\infty` and its weight is 0; a query with nothing
left to attend to (a fully masked row) gets weight 0 everywhere and :math:`z = 0`.
Numpy only: nothing here runs a model.
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt

from ..i18n import tr

__all__ = [
    "MAX_ITEMS",
    "causal_mask",
    "custom_mask",
    "describe",
    "full_mask",
    "output_shift",
    "window_mask",
]

MAX_ITEMS = 200  # items in one custom spec: enough to draw any pattern by hand, cheap to parse
MAX_SPEC_CHARS = 10_000  # refuse pasted novels before splitting them
_MAX_DIGITS = 9  # longer numbers are out of range for any model; never parse huge ints

_SEPARATORS = re.compile(r"[,;\n]")
# One side of an item: "*", "7" or "2-4" (ASCII digits only: int() also reads other scripts).
_SIDE = r"\s*(\*|[0-9]+(?:\s*-\s*[0-9]+)?)\s*"
_ITEM = re.compile(rf"^{_SIDE}:{_SIDE}$", re.ASCII)


def _check_n(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(tr("n={n!r} must be a positive number of tokens", n=n))
    return int(n)


def full_mask(n: int) -> np.ndarray:
    """Every query may attend to every key (the encoder's default): bool [n, n]."""
    return np.ones((_check_n(n), n), dtype=bool)


def causal_mask(n: int) -> np.ndarray:
    """Query i may attend to keys j <= i (a decoder's mask): bool [n, n], lower triangle."""
    return np.tril(full_mask(n))


def window_mask(n: int, w: int) -> np.ndarray:
    """Query i may attend to keys j with |i - j| <= w (local attention): bool [n, n]."""
    n = _check_n(n)
    if isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 0:
        raise ValueError(tr("window w={w!r} must be an integer >= 0", w=w))
    pos = np.arange(n)
    attn_mask: npt.NDArray[np.bool_] = np.abs(pos[:, None] - pos[None, :]) <= w
    return attn_mask


def _shown(item: str) -> str:
    """The item as an error message quotes it: stripped, at most 40 characters, no backticks
    (a translated message shows it as `code`, which a backtick would end)."""
    item = item.strip().replace("`", "'")
    return repr(item if len(item) <= 40 else item[:37] + "...")


# Messages of a bad item, for its query side and its key side (whole sentences: they translate).
_OUT_OF_RANGE = {
    "query": "mask item {item}: query {number} is out of range 0..{last}",
    "key": "mask item {item}: key {number} is out of range 0..{last}",
}
_BACKWARDS = {
    "query": "mask item {item}: query range {first}-{last} runs backwards",
    "key": "mask item {item}: key range {first}-{last} runs backwards",
}


def _span(side: str, n: int, what: str, item: str) -> tuple[int, int]:
    """'*', '7' or '2-4' as an inclusive range (first, last) within 0..n-1; ``what``: "query"
    or "key"."""
    if side == "*":
        return 0, n - 1
    parts = [p.strip() for p in side.split("-")]
    for p in parts:
        if len(p) > _MAX_DIGITS or int(p) >= n:
            number = p if len(p) <= 12 else p[:9] + "..."
            raise ValueError(tr(_OUT_OF_RANGE[what], item=_shown(item), number=number, last=n - 1))
    first, last = int(parts[0]), int(parts[-1])
    if first > last:
        raise ValueError(tr(_BACKWARDS[what], item=_shown(item), first=first, last=last))
    return first, last


def custom_mask(n: int, spec: str) -> np.ndarray:
    """A full mask [n, n] with the entries ``spec`` names blocked (set to False).

    Items are separated by commas, semicolons or new lines; each is ``QUERY:KEY`` where each
    side is a position, an inclusive range ``a-b`` or ``*`` (all):

    - ``3:5`` query 3 may not attend to key 5;
    - ``2-4:0-1`` queries 2..4 may not attend to keys 0..1;
    - ``6:*`` query 6 attends to nothing (a fully masked row: its weights and z become 0);
    - ``*:0`` no query may attend to key 0.

    Whitespace is ignored, empty items too. Raises ValueError naming the first bad item
    (malformed, out of range, backwards range), or when there are more than `MAX_ITEMS`.
    """
    n = _check_n(n)
    if not isinstance(spec, str):
        raise ValueError(tr("the mask spec must be text, got {type}", type=type(spec).__name__))
    if len(spec) > MAX_SPEC_CHARS:
        raise ValueError(
            tr("the mask spec has {n} characters; at most {most}", n=len(spec), most=MAX_SPEC_CHARS)
        )
    items = [item for item in _SEPARATORS.split(spec) if item.strip()]
    if len(items) > MAX_ITEMS:
        raise ValueError(tr("the mask spec has {n} items; at most {most}", n=len(items), most=MAX_ITEMS))
    attn_mask = full_mask(n)
    for item in items:
        match = _ITEM.match(item)
        if match is None:
            raise ValueError(
                tr(
                    "mask item {item} is malformed: expected QUERY:KEY, e.g. '3:5', '2-4:0-1', '6:*' or '*:0'",
                    item=_shown(item),
                )
            )
        q0, q1 = _span(match.group(1), n, "query", item)
        k0, k1 = _span(match.group(2), n, "key", item)
        attn_mask[q0 : q1 + 1, k0 : k1 + 1] = False
    return attn_mask


def describe(attn_mask: np.ndarray) -> dict[str, object]:
    """What a bool [query_pos, key_pos] ``attn_mask`` (True = may attend) allows.

    Returns ``{"n": query count, "allowed": allowed entries, "allowed_share": allowed / n²,
    "dead_rows": queries that may attend to nothing (their weights and z will be 0)}``.
    """
    attn_mask = np.asarray(attn_mask)
    if attn_mask.ndim != 2 or attn_mask.shape[0] != attn_mask.shape[1] or attn_mask.shape[0] == 0:
        raise ValueError(f"attn_mask must be square [query_pos, key_pos], got shape {attn_mask.shape}")
    attn_mask = attn_mask.astype(bool)
    allowed = int(attn_mask.sum())  # a count, the facts' "allowed"
    return {
        "n": int(attn_mask.shape[0]),
        "allowed": allowed,
        "allowed_share": allowed / attn_mask.size,
        "dead_rows": [int(i) for i in np.flatnonzero(~attn_mask.any(axis=1))],
    }


def output_shift(base: np.ndarray, masked: np.ndarray) -> np.ndarray:
    r"""How much each token's final hidden state moved: [pos].

    .. math:: \mathrm{shift}_i = \frac{\lVert h^{\mathrm{masked}}_i - h^{\mathrm{base}}_i \rVert}
        {\lVert h^{\mathrm{base}}_i \rVert}

    base, masked: [pos, d_model] (`TextCapture.output` of the run without and with the mask).
    A zero base vector counts as 1e-12, so the shift is finite.
    """
    base, masked = np.asarray(base, dtype=np.float64), np.asarray(masked, dtype=np.float64)
    if base.shape != masked.shape or base.ndim != 2:
        raise ValueError(
            f"base {base.shape} and masked {masked.shape} must both be [pos, d_model] of one shape"
        )
    moved = np.linalg.norm(masked - base, axis=-1)  # [pos]
    shift: npt.NDArray[np.float64] = moved / np.maximum(np.linalg.norm(base, axis=-1), 1e-12)
    return shift  # [pos]
