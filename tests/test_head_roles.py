"""Head roles: synthetic heads with known scores, the rules for which rows count, the ranking,
and the known heads of MiniLM found again on the default English examples."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from tformer.analysis.head_roles import ROLES, average_scores, rank_heads, role_scores


def _stack(*heads: np.ndarray) -> np.ndarray:
    """Heads [query_pos, key_pos] -> pattern [layer=1, head_index, query_pos, key_pos], float32."""
    return np.stack(heads)[None].astype(np.float32)


def _shift(n: int, by: int) -> np.ndarray:
    """Every query on the key ``by`` positions away; rows with no such key stay on themselves."""
    p = np.zeros((n, n))
    for q in range(n):
        k = q + by
        p[q, k if 0 <= k < n else q] = 1.0
    return p


def _softmax_rows(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Softmax rows with some exact zeros (masked keys) and some all-zero rows (masked queries)."""
    logits = rng.normal(size=shape) * rng.uniform(0.5, 4.0)
    keep = rng.random(shape) > 0.2
    keep[..., 0] = True
    p = np.where(keep, np.exp(logits - logits.max(-1, keepdims=True)), 0.0)
    p /= p.sum(-1, keepdims=True)
    p[rng.random(shape[:-1]) < 0.1] = 0.0
    return p.astype(np.float32)


def _slow_scores(p, ids, cls_pos=0, skip=(), unk_id=None):
    """Loop-per-row reference, straight from the docstring's formulas and row rules."""
    n_layer, n_head, n, _ = p.shape
    out = {role: np.full((n_layer, n_head), np.nan) for role in ROLES}
    for layer in range(n_layer):
        for head in range(n_head):
            acc: dict[str, list[float]] = {role: [] for role in ROLES}
            for q in range(n):
                row = p[layer, head, q].astype(np.float64)
                if row.sum() <= 0 or q in skip:
                    continue
                if q >= 1:
                    acc["previous"].append(row[q - 1])
                if q <= n - 2:
                    acc["next"].append(row[q + 1])
                acc["self"].append(row[q])
                if q != cls_pos:
                    acc["cls"].append(row[cls_pos])
                copies = [k for k in range(q) if ids[k] == ids[q]]
                if copies and ids[q] != unk_id:
                    acc["duplicate"].append(sum(row[k] for k in copies))
                nz = row[row > 0]
                acc["broad"].append(
                    float(-(nz * np.log2(nz)).sum() / np.log2(nz.size)) if nz.size > 1 else 0.0
                )
            for role, values in acc.items():
                if values:
                    out[role][layer, head] = np.mean(values)
    return out


# --- one role at a time: heads that do exactly one thing --------------------------------------


def test_roles_are_ordered_and_every_score_is_returned():
    assert list(ROLES) == ["previous", "next", "self", "cls", "duplicate", "broad"]
    s = role_scores(_stack(np.eye(4)), [1, 2, 3, 4])
    assert list(s) == list(ROLES)
    assert all(v.shape == (1, 1) and v.dtype == np.float64 for v in s.values())


def test_a_perfect_previous_token_head_scores_1():
    n = 8
    s = role_scores(_stack(_shift(n, -1), _shift(n, +1)), np.arange(n))
    assert s["previous"][0].tolist() == [1.0, 0.0]
    assert s["next"][0].tolist() == [0.0, 1.0]
    # query 0 has no previous key (it sits on itself): 1 of 8 rows is a self row
    assert s["self"][0, 0] == pytest.approx(1 / n)
    assert s["broad"][0].tolist() == [0.0, 0.0]  # one key a row: no spread at all


def test_with_cls_and_sep_left_out_the_previous_head_is_still_perfect():
    # [CLS] w1 .. w5 [SEP]: the [CLS] before w1 is w1's previous token and counts as a key
    n = 7
    special = [True] + [False] * (n - 2) + [True]
    s = role_scores(_stack(_shift(n, -1), _shift(n, +1)), np.arange(n), skip_special=special)
    assert s["previous"][0].tolist() == [1.0, 0.0]
    assert s["next"][0].tolist() == [0.0, 1.0]
    assert s["self"][0].tolist() == [0.0, 0.0]  # rows 0 and n-1 (the self rows) are left out


def test_self_head_and_the_sep_row_is_not_credited():
    n = 6
    uniform = np.full((n, n), 1 / n)
    sep_on_sep = uniform.copy()
    sep_on_sep[-1] = np.eye(n)[-1]  # [SEP] attends [SEP]; everything else is uniform
    s_all = role_scores(_stack(np.eye(n), sep_on_sep), np.arange(n))
    s_skip = role_scores(_stack(np.eye(n), sep_on_sep), np.arange(n), skip_special=[0, n - 1])
    assert s_all["self"][0, 0] == s_skip["self"][0, 0] == 1.0
    assert s_all["self"][0, 1] > s_skip["self"][0, 1] == pytest.approx(1 / n)


def test_first_token_head_leaves_out_the_cls_row_itself():
    n = 5
    on_first = np.zeros((n, n))
    on_first[:, 0] = 1.0
    s = role_scores(_stack(on_first, np.eye(n)), np.arange(n))
    assert s["cls"][0].tolist() == [1.0, 0.0]  # the identity head's p[0, 0] is not counted
    # another leading position
    on_2 = np.zeros((n, n))
    on_2[:, 2] = 1.0
    assert role_scores(_stack(on_2), np.arange(n), cls_pos=2)["cls"][0, 0] == 1.0
    # no leading special (Encoded.leading_special is None): the first token, position 0
    none = role_scores(_stack(on_first), np.arange(n), cls_pos=None)["cls"]
    assert none[0, 0] == 1.0


def test_uniform_attention_scores_broad_1():
    n = 9
    s = role_scores(_stack(np.full((n, n), 1 / n)), np.arange(n))
    assert s["broad"][0, 0] == pytest.approx(1.0)
    for role in ("previous", "next", "self", "cls"):
        assert s[role][0, 0] == pytest.approx(1 / n)


def test_broad_is_normalised_by_the_visible_keys():
    # causal-style rows: uniform over the keys each query may see, zeros beyond
    n = 6
    p = np.tril(np.ones((n, n)))
    p /= p.sum(-1, keepdims=True)
    # rows 1..n-1 are uniform over what they see (1); row 0 sees one key, all weight on it (0)
    assert role_scores(_stack(p), np.arange(n))["broad"][0, 0] == pytest.approx((n - 1) / n)


def test_duplicate_head_on_a_repeated_id():
    # [CLS] the cat saw the dog the end [SEP]; "the" repeats at 4 and 6
    ids = np.array([101, 7, 8, 9, 7, 10, 7, 11, 102])
    n = ids.size
    dup = np.full((n, n), 0.0)
    dup[:, 0] = 1.0  # queries without an earlier copy: on [CLS] (not counted)
    dup[4] = np.eye(n)[1]  # the second "the" on the first
    dup[6] = 0.0
    dup[6, [1, 4]] = [0.25, 0.25]  # the third on both earlier copies, half of its weight
    dup[6, 5] = 0.5
    s = role_scores(_stack(dup, np.eye(n)), ids, skip_special=[0, n - 1])
    assert s["duplicate"][0, 0] == pytest.approx((1.0 + 0.5) / 2)  # two counted rows
    assert s["duplicate"][0, 1] == 0.0  # attending to itself is not attending to a copy
    # later copies do not count: a head that looks ahead to the next "the" scores 0
    ahead = np.eye(n)
    ahead[1], ahead[4] = np.eye(n)[4], np.eye(n)[6]
    assert role_scores(_stack(ahead), ids)["duplicate"][0, 0] == 0.0


def test_duplicate_is_nan_without_a_repeated_token_and_unk_is_not_a_repeat():
    n = 5
    uniform = _stack(np.full((n, n), 1 / n))
    assert np.isnan(role_scores(uniform, [101, 1, 2, 3, 102])["duplicate"]).all()
    unk = 100
    ids = [101, unk, 5, unk, 102]  # two unknown characters: the same id, not the same token
    assert role_scores(uniform, ids)["duplicate"][0, 0] == pytest.approx(1 / n)
    assert np.isnan(role_scores(uniform, ids, unk_id=unk)["duplicate"]).all()


# --- which rows count: NaN rules -----------------------------------------------------------------


def test_one_position_has_only_self_and_broad_scores():
    s = role_scores(np.ones((2, 3, 1, 1), np.float32), [101])
    assert (s["self"] == 1.0).all()
    assert (s["broad"] == 0.0).all()
    for role in ("previous", "next", "cls", "duplicate"):
        assert np.isnan(s[role]).all(), role


def test_masked_rows_are_ignored_and_a_fully_masked_head_is_nan():
    n = 5
    prev = _shift(n, -1)
    prev[2] = 0.0  # a masked query: ignored, not a zero
    p = _stack(prev, np.zeros((n, n)))
    s = role_scores(p, np.arange(n))
    assert s["previous"][0, 0] == 1.0
    for role in ROLES:
        assert np.isnan(s[role][0, 1]), role


def test_every_row_left_out_gives_nan():
    n = 3
    s = role_scores(_stack(np.eye(n)), np.arange(n), skip_special=np.ones(n, bool))
    assert all(np.isnan(v).all() for v in s.values())


@pytest.mark.parametrize("seed", range(6))
def test_role_scores_match_the_slow_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    p = _softmax_rows(rng, (2, 3, n, n))
    ids = rng.integers(0, 4, size=n)  # few ids: plenty of repeats
    skip = sorted(set(rng.integers(0, n, size=2).tolist()))
    cls_pos = int(rng.integers(0, n))
    fast = role_scores(p, ids, cls_pos=cls_pos, skip_special=skip, unk_id=3)
    slow = _slow_scores(p, ids.tolist(), cls_pos=cls_pos, skip=skip, unk_id=3)
    for role in ROLES:
        np.testing.assert_allclose(fast[role], slow[role], rtol=1e-9, atol=1e-12, err_msg=role)
        finite = fast[role][np.isfinite(fast[role])]
        assert ((finite >= -1e-9) & (finite <= 1 + 1e-6)).all(), role


def test_skip_special_forms_agree():
    rng = np.random.default_rng(1)
    p = _softmax_rows(rng, (1, 2, 6, 6))
    ids = np.arange(6)
    mask = np.array([True, False, False, False, False, True])
    a = role_scores(p, ids, skip_special=mask)
    b = role_scores(p, ids, skip_special=[0, 5])
    c = role_scores(p, ids, skip_special=np.array([5, 0]))
    for role in ROLES:
        np.testing.assert_array_equal(a[role], b[role])
        np.testing.assert_array_equal(a[role], c[role])
    d = role_scores(p, ids, skip_special=0)
    e = role_scores(p, ids, skip_special=[])
    np.testing.assert_array_equal(e["self"], role_scores(p, ids)["self"])
    assert not np.array_equal(d["self"], e["self"])


def test_bad_inputs_name_the_shapes():
    p = _stack(np.eye(4))
    with pytest.raises(ValueError, match=r"\[layer, head_index, query_pos, key_pos\], got shape \(4, 4\)"):
        role_scores(np.eye(4), [1, 2, 3, 4])
    with pytest.raises(ValueError, match=r"4 integer token ids .* got shape \(3,\)"):
        role_scores(p, [1, 2, 3])
    with pytest.raises(ValueError, match="integer token ids"):
        role_scores(p, [0.5, 1, 2, 3])
    with pytest.raises(ValueError, match=r"cls_pos=4 must be a position in 0\.\.3"):
        role_scores(p, [1, 2, 3, 4], cls_pos=4)
    with pytest.raises(ValueError, match=r"skip_special mask has shape \(3,\), expected \(4,\)"):
        role_scores(p, [1, 2, 3, 4], skip_special=[True, False, True])
    with pytest.raises(ValueError, match=r"skip_special position\(s\) \[7\] outside 0\.\.3"):
        role_scores(p, [1, 2, 3, 4], skip_special=[7])
    with pytest.raises(ValueError, match="positions or a bool mask"):
        role_scores(p, [1, 2, 3, 4], skip_special=[0.5])
    with pytest.raises(ValueError, match="no positions"):
        role_scores(np.zeros((1, 1, 0, 0)), [])


# --- averaging over texts and ranking ------------------------------------------------------------


def test_average_scores_skips_texts_without_a_score():
    a = {"duplicate": np.array([[0.2, np.nan]]), "self": np.array([[0.0, 1.0]])}
    b = {"duplicate": np.array([[0.4, np.nan]]), "self": np.array([[1.0, 1.0]])}
    c = {"duplicate": np.array([[np.nan, np.nan]]), "self": np.array([[0.5, 0.0]])}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an all-NaN head stays NaN without a warning
        avg = average_scores([a, b, c])
    np.testing.assert_allclose(avg["duplicate"], [[0.3, np.nan]])
    np.testing.assert_allclose(avg["self"], [[0.5, 2 / 3]])
    with pytest.raises(ValueError, match="empty"):
        average_scores([])
    with pytest.raises(ValueError, match="roles"):
        average_scores([a, {"self": a["self"]}])
    with pytest.raises(ValueError, match="differ in shape"):
        average_scores([a, {"duplicate": np.zeros((2, 2)), "self": np.zeros((2, 2))}])


def test_rank_heads_descending_nan_last_ties_layer_major():
    s = {"next": np.array([[0.1, np.nan, 0.9], [0.5, 0.9, np.nan]])}
    assert rank_heads(s, "next") == [
        (0, 2, 0.9),
        (1, 1, 0.9),
        (1, 0, 0.5),
        (0, 0, pytest.approx(0.1)),
        (0, 1, pytest.approx(np.nan, nan_ok=True)),
        (1, 2, pytest.approx(np.nan, nan_ok=True)),
    ]
    assert [h[:2] for h in rank_heads(s, "next", top=2)] == [(0, 2), (1, 1)]
    assert len(rank_heads(s, "next", top=None)) == 6
    assert len(rank_heads({"x": np.zeros((6, 12))}, "x")) == 10
    assert all(type(v) in (int, float) for r in rank_heads(s, "next") for v in r)
    with pytest.raises(ValueError, match="'prev' is not one of"):
        rank_heads(s, "prev")
    with pytest.raises(ValueError, match="top=0"):
        rank_heads(s, "next", top=0)
    with pytest.raises(ValueError, match=r"\[layer, head_index\]"):
        rank_heads({"next": np.zeros(3)}, "next")


# --- MiniLM: the finder surfaces the heads known from reading its patterns ----------------------


@pytest.fixture(scope="module")
def minilm_scores():
    from tformer import capture_text, load_pretrained
    from tformer.resources import examples

    model, tok = load_pretrained("minilm", device="cpu")
    texts = [e["text"] for e in examples() if e["lang"] == "en"]
    assert len(texts) >= 5
    per_text = []
    for text in texts:
        cap = capture_text(model, tok, text, ["pattern"])
        enc = cap.encoded
        assert enc.leading_special == 0
        per_text.append(
            role_scores(cap.pattern, enc.ids, cls_pos=0, skip_special=enc.special, unk_id=tok.unk_id)
        )
    return average_scores(per_text)


def test_minilm_previous_token_head_is_layer_0_head_2(minilm_scores):
    (layer, head, score), *_ = rank_heads(minilm_scores, "previous")
    assert (layer, head) == (0, 2)
    assert score >= 0.9  # measured: 0.9998


def test_minilm_next_token_head_is_layer_1_head_8(minilm_scores):
    top3 = rank_heads(minilm_scores, "next", top=3)
    assert (1, 8) in [h[:2] for h in top3]
    assert minilm_scores["next"][1, 8] >= 0.5  # measured: 0.686, rank 1


def test_minilm_cls_heads(minilm_scores):
    top = [h[:2] for h in rank_heads(minilm_scores, "cls")]  # the top 10
    for layer, head in [(4, 5), (2, 7), (1, 10)]:
        assert (layer, head) in top, (layer, head)
        # measured: L4H5 0.848 (rank 1), L2H7 0.773 (rank 2), L1H10 0.74 (rank 3); L2H9 0.709 ranks 6th
        assert minilm_scores["cls"][layer, head] >= 0.7, (layer, head)


def test_the_pages_doc_names_the_heads_the_finder_ranks_first(minilm_scores):
    """docs/pages.md's Head finder row quotes the top heads of each role over the examples: the
    quote is rebuilt from the ranking, so a head named out of order (or a wrong score) fails."""
    from pathlib import Path

    pages = (Path(__file__).resolve().parent.parent / "docs" / "pages.md").read_text(encoding="utf-8")
    row = next(line for line in pages.splitlines() if line.startswith("| Head finder |"))

    def named(role: str, k: int) -> str:
        top = rank_heads(minilm_scores, role, top=k)
        heads = [f"layer {layer} head {head}" for layer, head, _ in top]
        listed = heads[0] if k == 1 else ", ".join(heads[:-1]) + " and " + heads[-1]
        word = {"previous": "previous", "next": "next", "cls": "[CLS]"}[role]
        return f"{listed} {word} " + ", ".join(f"{s:.2f}" for _, _, s in top)

    for role, k in (("previous", 1), ("next", 1), ("cls", 3)):
        assert named(role, k) in row, (named(role, k), row)


def test_telling_heads_pick_the_clearest_habit_and_leave_out_cls_and_broad_heads():
    from tformer.analysis.head_roles import telling_heads

    shape = (3, 4)
    scores = {role: np.zeros(shape) for role in ROLES}
    scores["cls"][0, 0] = 0.99  # resting on [CLS]: not telling
    scores["broad"][0, 1] = 0.98  # spread out: not telling
    scores["previous"][1, 2] = 0.9
    scores["duplicate"][2, 3] = 0.6
    scores["self"][2, 1] = np.nan  # no row counted: as 0
    (best, per_layer, role, score) = telling_heads(scores)
    assert best == (1, 2)
    assert role == "previous"
    assert score == pytest.approx(0.9)
    assert per_layer == [0, 2, 3]
    with pytest.raises(ValueError, match="lack the roles"):
        telling_heads({"previous": np.zeros(shape)})


def test_minilm_opens_on_its_previous_token_head_not_layer_0_head_0(minilm_scores):
    from tformer.analysis.head_roles import telling_heads

    best, per_layer, role, score = telling_heads(minilm_scores)
    assert best == (0, 2)
    assert role == "previous"
    assert score > 0.99
    assert len(per_layer) == 6
    assert per_layer[0] == 2
    assert minilm_scores["broad"][0, 0] > 0.85  # layer 0 head 0: spread over every token
