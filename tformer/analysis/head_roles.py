"""Heads by what they do: one score per head and role, and the heads that score highest.

A role is a simple, checkable habit of a head: attend to the token just before the query, just
after it, to itself, to [CLS], to earlier copies of the query's own token, or spread attention
over everything. Each score is the mean over the query rows that count for that role of one
number read off the row, so every score lies in 0..1 and 1 means "always, fully". Numpy only,
like :mod:`tformer.analysis.metrics`, whose conventions hold here: ``pattern`` is
[layer, head_index, query_pos, key_pos], each row one query's softmax weights summing to 1,
sums in float64, and an all-zero row (a fully masked query) carries no information and never
counts.

Which query rows count (the same rules for every head, so heads are compared on equal terms):

- rows at the positions given as ``skip_special`` (the tokenizer's [CLS] and [SEP]) never
  count: a head is not credited as a self head for [SEP] attending [SEP], nor as a
  previous-token head for [SEP] attending the final full stop. Keys are not filtered: the
  [CLS] just before the first word *is* that word's previous token, and a previous-token head
  puts its weight there.
- "previous" needs a key before the query (q >= 1), "next" one after it (q <= n - 2); "cls"
  leaves out the query at ``cls_pos`` itself (that weight is self-attention); "duplicate" counts
  only queries whose token id occurred earlier in the text. A row with a single visible key
  has "broad" 0 (all weight on one key), as ``entropy_norm`` in :mod:`tformer.analysis.metrics`.
- a head with no row that counts scores NaN (a text with no repeated token has no duplicate
  score; a one-token text has no previous score).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from .scaling import normalised_entropy, row_entropy

__all__ = ["ROLES", "TELLING_ROLES", "average_scores", "rank_heads", "role_scores", "telling_heads"]

FloatArray = npt.NDArray[np.float64]
Positions = int | Iterable[int] | npt.NDArray[np.integer] | npt.NDArray[np.bool_]

# One line per role, in the order role_scores returns them (usable as help text on a page).
ROLES: dict[str, str] = {
    "previous": "weight on the key just before the query, p[q, q-1]",
    "next": "weight on the key just after the query, p[q, q+1]",
    "self": "weight on the query's own position, p[q, q]",
    "cls": "weight on the tokenizer's leading special ([CLS]), p[q, cls_pos]; position 0 without one",
    "duplicate": "total weight on earlier copies of the query's own token (repeated tokens only)",
    "broad": "spread: entropy / log2(visible keys); 0 = one key, 1 = uniform",
}


def _pattern(pattern: npt.ArrayLike) -> npt.NDArray[Any]:
    p = np.asarray(pattern)
    if p.ndim != 4 or p.shape[2] != p.shape[3]:
        raise ValueError(
            f"pattern must be self-attention [layer, head_index, query_pos, key_pos], got shape {p.shape}"
        )
    if p.shape[2] == 0:
        raise ValueError(f"pattern has no positions, shape {p.shape}")
    return p


def _skip_mask(skip_special: Positions | None, n_pos: int) -> npt.NDArray[np.bool_]:
    """``skip_special`` (None, an int, ints, or a bool mask [pos]) as a bool mask [pos]."""
    mask = np.zeros(n_pos, dtype=bool)
    if skip_special is None:
        return mask
    arr = np.atleast_1d(
        np.asarray(list(skip_special) if isinstance(skip_special, Iterable) else skip_special)
    )
    if arr.dtype == bool:
        if arr.shape != (n_pos,):
            raise ValueError(f"skip_special mask has shape {arr.shape}, expected ({n_pos},) [pos]")
        given: npt.NDArray[np.bool_] = arr.copy()
        return given
    if arr.size and (arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"skip_special must be positions or a bool mask [pos], got {skip_special!r}")
    bad = arr[(arr < 0) | (arr >= n_pos)]
    if bad.size:
        raise ValueError(f"skip_special position(s) {bad.tolist()} outside 0..{n_pos - 1} (pos={n_pos})")
    mask[arr.astype(np.intp)] = True
    return mask


def role_scores(
    pattern: npt.ArrayLike,
    ids: npt.ArrayLike,
    *,
    cls_pos: int | None = 0,
    skip_special: Positions | None = None,
    unk_id: int | None = None,
) -> dict[str, FloatArray]:
    r"""Per-head score of every role in :data:`ROLES`: ``{role: array [layer, head_index]}``.

    For one head with weights :math:`p_{qk}` and the set :math:`Q_r` of query rows that count
    for role r (module docstring), the score is the mean of a per-row number :math:`s_q`:

    .. math::

        \mathrm{score}_r = \frac{1}{|Q_r|} \sum_{q \in Q_r} s_q \qquad
        (\text{NaN when } Q_r = \varnothing)

        s_q^{\text{previous}} = p_{q,q-1} \quad
        s_q^{\text{next}} = p_{q,q+1} \quad
        s_q^{\text{self}} = p_{qq} \quad
        s_q^{\text{first}} = p_{qc}

        s_q^{\text{duplicate}} = \sum_{k < q,\; t_k = t_q} p_{qk}
        \qquad Q_{\text{duplicate}} = \{q : \exists\, k < q,\ t_k = t_q\}

        s_q^{\text{broad}} = \frac{-\sum_k p_{qk} \log_2 p_{qk}}{\log_2 n_q}

    with :math:`c` = ``cls_pos``, :math:`t` = ``ids`` and :math:`n_q` the number of keys with
    :math:`p_{qk} > 0` (weights that underflowed to 0 count as masked, and
    :math:`s_q^{\text{broad}} = 0` when :math:`n_q = 1`: it is
    :func:`tformer.analysis.scaling.normalised_entropy`, the ``entropy_norm`` of
    :func:`tformer.analysis.metrics.head_metrics`).

    ``pattern``: [layer, head_index, query_pos, key_pos]. ``ids``: [pos] token ids of the same
    text (``Encoded.ids``). ``cls_pos``: the position "cls" measures, the tokenizer's leading
    special (``Encoded.leading_special``); None (a tokenizer without one) measures position 0,
    the first token. ``skip_special``: the positions whose query rows never count, as
    positions or a bool mask [pos] (pass ``Encoded.special``); None leaves out none.
    ``unk_id``: queries with this id are left out of "duplicate" (every unknown character is
    the same [UNK], so two of them are not a repeated token). Returns float64 arrays.
    """
    p = _pattern(pattern)
    n_layer, n_head, n, _ = p.shape
    t = np.asarray(ids)
    if t.shape != (n,) or (t.size and not np.issubdtype(t.dtype, np.integer)):
        raise ValueError(
            f"ids must be {n} integer token ids [pos] for pattern of shape {p.shape}, got shape {t.shape}"
        )
    cls = 0 if cls_pos is None else cls_pos  # the key "cls" measures: [CLS], not always position 0
    if not (isinstance(cls, (int, np.integer)) and 0 <= cls < n):
        raise ValueError(f"cls_pos={cls_pos!r} must be a position in 0..{n - 1} (or None)")
    cls = int(cls)
    q = np.arange(n)
    counted = ~_skip_mask(skip_special, n)  # [query_pos]

    # 1. Which rows count, by position and token ids alone (the pattern adds its masked rows).
    earlier = (t[:, None] == t[None, :]) & (q[None, :] < q[:, None])  # [query_pos, key_pos]
    if unk_id is not None:
        earlier &= (t != unk_id)[:, None]
    rows = {
        "previous": counted & (q >= 1),
        "next": counted & (q <= n - 2),
        "self": counted,
        "cls": counted & (q != cls),
        "duplicate": counted & earlier.any(-1),
        "broad": counted,
    }
    earlier_f = earlier.astype(np.float64)
    out = {role: np.full((n_layer, n_head), np.nan) for role in ROLES}

    # One layer at a time bounds the float64 temporaries to [head_index, query_pos, key_pos].
    for layer in range(n_layer):
        pl = p[layer].astype(np.float64)  # [head_index, query_pos, key_pos]
        valid = pl.sum(-1) > 0  # [head_index, query_pos]
        # 2. The per-row numbers s_q, each [head_index, query_pos] (0 where undefined).
        values = {role: np.zeros((n_head, n)) for role in ROLES}
        values["previous"][:, 1:] = pl[:, q[1:], q[1:] - 1]
        values["next"][:, :-1] = pl[:, q[:-1], q[:-1] + 1]
        values["self"] = pl[:, q, q]
        values["cls"] = pl[:, :, cls]
        values["duplicate"] = np.einsum("hqk,qk->hq", pl, earlier_f)
        values["broad"] = normalised_entropy(row_entropy(pl), pl)  # entropy_norm of metrics
        # 3. The mean over the rows that count.
        for role, v in values.items():
            mask = valid & rows[role][None, :]
            count = mask.sum(-1)
            mean = np.where(mask, v, 0.0).sum(-1) / np.maximum(count, 1)
            out[role][layer] = np.where(count > 0, mean, np.nan)
    return out


def average_scores(per_text: Iterable[Mapping[str, npt.ArrayLike]]) -> dict[str, FloatArray]:
    r"""The mean of several texts' :func:`role_scores`, each text weighing the same.

    .. math::

        \overline{\mathrm{score}}_r = \frac{1}{|T_r|} \sum_{x \in T_r} \mathrm{score}_r(x)

    where :math:`T_r` holds the texts whose score for role r is not NaN (a text without a
    repeated token says nothing about "duplicate" heads); NaN where no text has a score.
    Every mapping must hold the same roles, each [layer, head_index] of one shape.
    """
    items = list(per_text)
    if not items:
        raise ValueError("no scores to average: per_text is empty")
    roles = list(items[0])
    out: dict[str, FloatArray] = {}
    for role in roles:
        try:
            stack = np.stack([np.asarray(s[role], dtype=np.float64) for s in items])
        except KeyError:
            raise ValueError(f"every text's scores must hold the roles {roles}") from None
        except ValueError as exc:
            shapes = [np.shape(s[role]) for s in items]
            raise ValueError(f"scores[{role!r}] differ in shape between texts: {shapes}") from exc
        with warnings.catch_warnings():  # all-NaN heads stay NaN, quietly
            warnings.simplefilter("ignore", RuntimeWarning)
            out[role] = np.nanmean(stack, axis=0)
    return out


def rank_heads(
    scores: Mapping[str, npt.ArrayLike], role: str, top: int | None = 10
) -> list[tuple[int, int, float]]:
    """The ``top`` heads for ``role`` as ``(layer, head, score)``, highest score first.

    ``scores``: :func:`role_scores` or :func:`average_scores` output (or any mapping of
    [layer, head_index] arrays). Ties keep layer-major order (lower layer, then lower head,
    first); NaN scores (no row counted) come last, never before a number. ``top=None``
    returns every head.
    """
    if role not in scores:
        raise ValueError(f"role {role!r} is not one of {list(scores)}")
    a = np.asarray(scores[role], dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"scores[{role!r}] must be [layer, head_index], got shape {a.shape}")
    if top is not None and top < 1:
        raise ValueError(f"top={top} must be >= 1 (or None for every head)")
    flat = a.ravel()
    key = np.where(np.isnan(flat), np.inf, -flat)
    order = np.argsort(key, kind="stable")[: a.size if top is None else top]
    n_head = a.shape[1]
    return [(int(i // n_head), int(i % n_head), float(flat[i])) for i in order]


# The roles whose heads show a pattern a class can see and name (a line beside the diagonal,
# the diagonal itself, links between repeated words); "cls" heads rest on [CLS] and "broad"
# ones spread out: neither is a telling first sight.
TELLING_ROLES = ("previous", "next", "self", "duplicate")


def telling_heads(
    scores: Mapping[str, npt.ArrayLike], roles: Iterable[str] = TELLING_ROLES
) -> tuple[tuple[int, int], list[int], str, float]:
    """The head that shows most clearly what it does, and the clearest head of each layer.

    A head's clarity is its highest score over ``roles`` (default `TELLING_ROLES`; NaN counts
    as 0). Returns ``((layer, head), [head of each layer], role, score)`` for the clearest head
    overall (ties: lowest layer, then lowest head) and the role and score that made it so.
    """
    names = list(roles)
    missing = [r for r in names if r not in scores]
    if not names or missing:
        raise ValueError(f"scores lack the roles {missing or names}; they hold {list(scores)}")
    stack = np.stack([np.nan_to_num(np.asarray(scores[r], dtype=np.float64), nan=0.0) for r in names])
    if stack.ndim != 3 or 0 in stack.shape[1:]:
        raise ValueError(f"each score must be [layer, head_index], got shape {stack.shape[1:]}")
    best = stack.max(axis=0)  # [layer, head_index]
    layer, head = divmod(int(np.argmax(best)), best.shape[1])
    role = names[int(np.argmax(stack[:, layer, head]))]
    return (layer, head), [int(np.argmax(row)) for row in best], role, float(best[layer, head])
