"""Questions on attention itself: why attention, Q, K and V, the scaled dot product and √d_k,
masks, and the heads. Each template computes its answer from the view's capture (numpy) with
the functions the pages use (`tformer.analysis.scaling`, `...masks`, `...head_roles`,
`tformer.efficiency.rnn.path_lengths`)."""

from __future__ import annotations

import numpy as np

from ..analysis.head_roles import ROLES, rank_heads, role_scores
from ..analysis.masks import causal_mask, describe, full_mask, window_mask
from ..analysis.reference import raw_scores, scale_scores
from ..analysis.scaling import row_entropy, row_max, temperature_pattern
from ..i18n import tr
from .answers import (
    ChoiceAnswer,
    DirectionAnswer,
    Mark,
    NumberAnswer,
    Question,
    TokenAnswer,
    Tolerance,
    format_number,
)
from .context import NotAvailable, QuestionContext
from .registry import HEAD, LAYER, QUERY, Param, quoted, template

__all__ = [
    "allowed_cells",
    "argmax_key",
    "d_head",
    "entropy_change",
    "masked_weight",
    "max_weight_scaled",
    "max_weight_unscaled",
    "n_heads",
    "path_length",
    "q_shape",
    "role_head",
    "role_name",
    "scale_factor",
    "sequential_steps",
]

TIE = 0.01  # keys within this of a row's largest weight count as right too: a tie to the eye
SAME_BITS = 0.01  # an entropy change smaller than this (bits) is "the same"
MASKS = ("none", "causal", "window", "padding")


def _scores_row(ctx: QuestionContext, layer: int, head: int) -> tuple[np.ndarray, np.ndarray]:
    """(q·kᵀ before any scaling, the cells the model allowed), both [query_pos, key_pos]."""
    q, k = ctx.array("q", layer)[:, head], ctx.array("k", layer)[:, head]  # [pos, d_head]
    return raw_scores(q, k), ctx.attn_mask(layer, head)


# --- why attention ---------------------------------------------------------------------------


ARCH = Param("arch", "choice", "rnn (a GRU) or attention", "rnn", choices=("rnn", "attention"))


def _arch_name(arch: str) -> str:
    return tr("a recurrent network (GRU)") if arch == "rnn" else tr("self-attention")


@template(
    concept="why",
    kind="number",
    page="costs",
    summary="steps a signal takes from one token to another: |j − i| in a GRU, 1 in attention",
    also=("why",),  # the Why attention page shows the steps and the path-length chart too
    params=(
        ARCH,
        Param("source", "token", "where the path starts (default: the first token)"),
        Param("target", "token", "where it ends (default: the last token)"),
    ),
)
def path_length(
    ctx: QuestionContext,
    *,
    arch: str = "rnn",
    source: str | int | None = None,
    target: str | int | None = None,
) -> Question:
    from ..efficiency.rnn import path_lengths

    i = 0 if source is None else ctx.position(source, "source")
    j = ctx.n_pos - 1 if target is None else ctx.position(target, "target")
    span = abs(j - i) + 1  # the positions the path runs through, both ends included
    lengths = path_lengths(np.array([span]))
    steps = int(lengths["gru" if arch == "rnn" else "attention"]["path"][0])
    a, b = quoted(ctx.labels[i]), quoted(ctx.labels[j])
    return Question(
        template="path_length",
        concept="why",
        page="costs",
        prompt=tr(
            "In {arch}, how many steps does information take from {a} (position {i}) to {b} (position {j})?",
            arch=_arch_name(arch),
            a=a,
            i=i,
            b=b,
            j=j,
        ),
        answer=NumberAnswer(float(steps), Tolerance(), unit="count"),
        explanation=tr(
            "A GRU hands its state from one position to the next, so from {a} to {b} it takes "
            "{rnn} steps, one per position in between; attention compares the two directly, in "
            "{attn} step, however far apart they are.",
            a=a,
            b=b,
            rnn=int(lengths["gru"]["path"][0]),
            attn=int(lengths["attention"]["path"][0]),
        ),
        hint=tr(
            "Count the positions between {a} and {b}, or ask whether anything stands between them.", a=a, b=b
        ),
        mark=Mark("path", cols=(i, j), part=arch),
        params={"arch": arch, "source": i, "target": j},
    )


@template(
    concept="why",
    kind="number",
    page="costs",
    summary="steps that must run one after another over this text: n in a GRU, 1 in attention",
    also=("why",),  # the Why attention page shows the steps and the path-length chart too
    params=(ARCH,),
)
def sequential_steps(ctx: QuestionContext, *, arch: str = "rnn") -> Question:
    from ..efficiency.rnn import path_lengths

    n = ctx.n_pos
    lengths = path_lengths(np.array([n]))
    steps = int(lengths["gru" if arch == "rnn" else "attention"]["sequential"][0])
    return Question(
        template="sequential_steps",
        concept="why",
        page="costs",
        prompt=tr(
            "This text has {n} tokens. How many steps must {arch} run one after another to read it?",
            n=n,
            arch=_arch_name(arch),
        ),
        answer=NumberAnswer(float(steps), Tolerance(), unit="count"),
        explanation=tr(
            "A GRU cannot start on a token before the previous one is done: {rnn} steps in a row for "
            "{n} tokens. Attention computes every pair at once, {attn} step, so a GPU works on all "
            "{n} positions in parallel.",
            rnn=int(lengths["gru"]["sequential"][0]),
            attn=int(lengths["attention"]["sequential"][0]),
            n=n,
        ),
        hint=tr("Can position 2 be computed before position 1 is finished?"),
        mark=Mark("path", part=arch),
        params={"arch": arch},
    )


# --- Q, K, V ---------------------------------------------------------------------------------


@template(
    concept="qkv",
    kind="choice",
    page="qkv",
    summary="the shape of one head's Q (or K, V) for this text: pos × d_head",
    params=(LAYER, HEAD, Param("of", "choice", "q, k or v", "q", choices=("q", "k", "v"))),
    needs=("q", "k", "v"),
)
def q_shape(
    ctx: QuestionContext, *, layer: int | None = None, head: int | None = None, of: str = "q"
) -> Question:
    layer, head = ctx.head_at(layer, head)
    shape = ctx.array(of, layer)[:, head].shape  # [pos, d_head]
    n, d, dm = ctx.n_pos, ctx.cfg.d_head, ctx.cfg.d_model
    shapes = {"pos_d_head": (n, d), "pos_d_model": (n, dm), "d_head_pos": (d, n), "pos_pos": (n, n)}
    names = {
        "pos_d_head": "pos × d_head",
        "pos_d_model": "pos × d_model",
        "d_head_pos": "d_head × pos",
        "pos_pos": "pos × pos",
    }
    options = tuple((key, f"{a} × {b} ({names[key]})") for key, (a, b) in shapes.items())
    correct = frozenset(key for key, s in shapes.items() if s == tuple(shape))
    letter = of.upper()
    return Question(
        template="q_shape",
        concept="qkv",
        page="qkv",
        prompt=tr(
            "What shape is {m} of layer {layer}, head {head} for this text of {n} tokens?",
            m=letter,
            layer=layer,
            head=head,
            n=n,
        ),
        answer=ChoiceAnswer(options, correct),
        explanation=tr(
            "{m} has one row per token and one column per dimension of the head: {n} × {d}. Each head "
            "projects the d_model = {dm} numbers of a token down to d_head = {d}.",
            m=letter,
            n=n,
            d=d,
            dm=dm,
        ),
        hint=tr("Every token gets its own {m} vector; how long is the vector of one head?", m=letter),
        mark=Mark(of, layer=layer, head=head),
        params={"layer": layer, "head": head, "of": of},
    )


@template(
    concept="qkv",
    kind="token",
    page="attention",
    summary="the key a query gives the largest weight (argmax of its row)",
    params=(LAYER, HEAD, QUERY),
    needs=("pattern", "attn_scores"),
)
def argmax_key(
    ctx: QuestionContext, *, layer: int | None = None, head: int | None = None, query: str | int | None = None
) -> Question:
    layer, head = ctx.head_at(layer, head)
    qpos = ctx.position(query)
    row = ctx.array("pattern", layer)[head, qpos].astype(np.float64)  # [key_pos]
    attn_mask = ctx.attn_mask(layer, head)[qpos]  # [key_pos]: this query's row
    if not attn_mask.any():
        raise NotAvailable(
            tr(
                "the query {token} may attend to no key here: its row is all 0",
                token=quoted(ctx.labels[qpos]),
            ),
            "token",
            "query",
        )
    top = float(row.max())
    right = frozenset(int(k) for k in np.flatnonzero(attn_mask & (row >= top - TIE)))
    best = int(np.argmax(row))
    others = np.where(np.isin(np.arange(row.size), list(right)), -1.0, row)
    runner = int(np.argmax(others))
    labels, qlabel = ctx.labels, quoted(ctx.labels[qpos])
    explanation = tr(
        "In layer {layer}, head {head} the row of {query} puts {w} of its weight on {key} "
        "(position {k}); the next largest share is {w2}, on {key2}.",
        layer=layer,
        head=head,
        query=qlabel,
        w=format_number(top, 2),
        key=quoted(labels[best]),
        k=best,
        w2=format_number(float(row[runner]), 2) if others[runner] >= 0 else "0.00",
        key2=quoted(labels[runner]),
    )
    if len(right) > 1:
        explanation += " " + tr("Keys within {tie} of the largest weight count as right too.", tie=TIE)
    return Question(
        template="argmax_key",
        concept="qkv",
        page="attention",
        prompt=tr(
            "In layer {layer}, head {head}, which token does {query} give the most weight to?",
            layer=layer,
            head=head,
            query=qlabel,
        ),
        answer=TokenAnswer(right, tuple(labels), tuple(int(k) for k in np.flatnonzero(attn_mask))),
        explanation=explanation,
        hint=tr(
            "The weight goes to the key whose vector points most the way the query of {query} points: "
            "which word does {query} need to know about?",
            query=qlabel,
        ),
        mark=Mark("pattern", layer=layer, head=head, row=qpos, cols=tuple(sorted(right))),
        params={"layer": layer, "head": head, "query": qpos},
    )


# --- the scaled dot product and √d_k ---------------------------------------------------------


@template(concept="scaling", kind="number", page="scaling", summary="the scale factor 1/√d_k of this model")
def scale_factor(ctx: QuestionContext) -> Question:
    d = ctx.cfg.d_head
    factor = float(scale_scores(np.ones(1, dtype=np.float32), d)[0])  # what the walk-through multiplies by
    return Question(
        template="scale_factor",
        concept="scaling",
        page="scaling",
        prompt=tr(
            "Each score q·k is multiplied by 1/√d_k before the softmax. What is 1/√d_k for this model?"
        ),
        answer=NumberAnswer(factor, Tolerance(abs=0.005, rel=0.02), digits=3),
        explanation=tr(
            "d_k is the width of one head, d_head = {d}, so √d_k = {root} and 1/√d_k = {factor}: "
            "every score is divided by {root}.",
            d=d,
            root=format_number(d**0.5, 2),
            factor=format_number(factor, 3),
        ),
        hint=tr("d_k = d_model / n_heads = {dm} / {h}.", dm=ctx.cfg.d_model, h=ctx.cfg.n_heads),
        mark=Mark("attn_scores", part="scale"),
    )


def _max_weight(
    ctx: QuestionContext, layer: int | None, head: int | None, query: str | int | None, scaled: bool
) -> Question:
    layer, head = ctx.head_at(layer, head)
    qpos = ctx.position(query)
    raw, attn_mask = _scores_row(ctx, layer, head)
    with_scale = temperature_pattern(raw, ctx.cfg.d_head, scaled=True, attn_mask=attn_mask)[qpos]
    without = temperature_pattern(raw, ctx.cfg.d_head, scaled=False, attn_mask=attn_mask)[qpos]
    if not attn_mask[qpos].any():
        raise NotAvailable(
            tr(
                "the query {token} may attend to no key here: its row is all 0",
                token=quoted(ctx.labels[qpos]),
            ),
            "token",
            "query",
        )
    value = float(row_max((with_scale if scaled else without)[None])[0])
    qlabel = quoted(ctx.labels[qpos])
    name = "max_weight_scaled" if scaled else "max_weight_unscaled"
    prompt = (
        tr(
            "In layer {layer}, head {head}, what is the largest weight in the row of {query} (scores ÷ √d_k, "
            "as the model computes them)?",
            layer=layer,
            head=head,
            query=qlabel,
        )
        if scaled
        else tr(
            "In layer {layer}, head {head}, what would the largest weight in the row of {query} be without "
            "the division by √d_k?",
            layer=layer,
            head=head,
            query=qlabel,
        )
    )
    return Question(
        template=name,
        concept="scaling",
        page="scaling",
        prompt=prompt,
        answer=NumberAnswer(value, Tolerance(abs=0.05), digits=2),
        explanation=tr(
            "With ÷√d_k (√{d} = {root}) the row of {query} peaks at {w_scaled}; without it the scores are "
            "{root} times further apart and the peak is {w_raw}: the softmax saturates towards one key.",
            d=ctx.cfg.d_head,
            root=format_number(ctx.cfg.d_head**0.5, 2),
            query=qlabel,
            w_scaled=format_number(float(with_scale.max()), 2),
            w_raw=format_number(float(without.max()), 2),
        ),
        hint=tr(
            "A row's weights sum to 1: the largest is between 1/{n} (all equal) and 1 (one key takes all).",
            n=int(attn_mask[qpos].sum()),
        ),
        mark=Mark(
            "pattern",
            layer=layer,
            head=head,
            row=qpos,
            cols=(int(np.argmax(with_scale if scaled else without)),),
        ),
        params={"layer": layer, "head": head, "query": qpos},
    )


@template(
    concept="scaling",
    kind="number",
    page="scaling",
    summary="the largest weight of a query's row with the scores ÷ √d_k (the model's own)",
    params=(LAYER, HEAD, QUERY),
    needs=("q", "k", "attn_scores"),
)
def max_weight_scaled(
    ctx: QuestionContext, *, layer: int | None = None, head: int | None = None, query: str | int | None = None
) -> Question:
    return _max_weight(ctx, layer, head, query, scaled=True)


@template(
    concept="scaling",
    kind="number",
    page="scaling",
    summary="the largest weight of a query's row without the ÷ √d_k",
    params=(LAYER, HEAD, QUERY),
    needs=("q", "k", "attn_scores"),
)
def max_weight_unscaled(
    ctx: QuestionContext, *, layer: int | None = None, head: int | None = None, query: str | int | None = None
) -> Question:
    return _max_weight(ctx, layer, head, query, scaled=False)


@template(
    concept="scaling",
    kind="direction",
    page="scaling",
    summary="whether a query's weights get sharper or flatter at temperature τ (or without ÷√d_k)",
    params=(
        Param("tau", "float", "the softmax temperature τ", 0.5, low=0.05, high=20.0),
        Param("scaled", "bool", "divide by √d_k (false: ask what dropping it does)", True),
        LAYER,
        HEAD,
        QUERY,
    ),
    needs=("q", "k", "attn_scores"),
)
def entropy_change(
    ctx: QuestionContext,
    *,
    tau: float = 0.5,
    scaled: bool = True,
    layer: int | None = None,
    head: int | None = None,
    query: str | int | None = None,
) -> Question:
    layer, head = ctx.head_at(layer, head)
    qpos = ctx.position(query)
    raw, attn_mask = _scores_row(ctx, layer, head)
    base = temperature_pattern(raw, ctx.cfg.d_head, attn_mask=attn_mask)[qpos]
    moved = temperature_pattern(raw, ctx.cfg.d_head, tau=tau, scaled=scaled, attn_mask=attn_mask)[qpos]
    h0, h1 = (float(row_entropy(p[None])[0]) for p in (base, moved))
    change = h1 - h0
    direction = "same" if abs(change) < SAME_BITS else ("higher" if change > 0 else "lower")
    words = {
        "higher": tr("flatter (higher entropy)"),
        "lower": tr("sharper (lower entropy)"),
        "same": tr("the same"),
    }
    qlabel = quoted(ctx.labels[qpos])
    setting = (
        tr("at τ = {tau}", tau=f"{tau:g}") if scaled else tr("at τ = {tau} without ÷√d_k", tau=f"{tau:g}")
    )
    return Question(
        template="entropy_change",
        concept="scaling",
        page="scaling",
        prompt=tr(
            "In layer {layer}, head {head}, will the weights of {query} get sharper, flatter or stay the same {setting}?",
            layer=layer,
            head=head,
            query=qlabel,
            setting=setting,
        ),
        answer=DirectionAnswer(direction, change, SAME_BITS, words),
        explanation=tr(
            "The row of {query} has an entropy of {h0} bits as the model runs it and {h1} bits {setting}; "
            "its largest weight goes from {m0} to {m1}. Dividing the logits by a smaller number spreads them "
            "apart, and the softmax then favours the top key more.",
            query=qlabel,
            h0=format_number(h0, 2),
            h1=format_number(h1, 2),
            setting=setting,
            m0=format_number(float(base.max()), 2),
            m1=format_number(float(moved.max()), 2),
        ),
        hint=tr(
            "The softmax sees score / (√d_k · τ): does a smaller divisor push the scores apart or together?"
        ),
        mark=Mark("pattern", layer=layer, head=head, row=qpos, part="entropy"),
        params={"tau": tau, "scaled": scaled, "layer": layer, "head": head, "query": qpos},
    )


# --- masks -----------------------------------------------------------------------------------


MASK = Param("mask", "choice", "none, causal, window (|i − j| ≤ window) or padding", "causal", choices=MASKS)
WINDOW = Param("window", "int", "the window mask's half-width w", 2, low=0, high=512)
PAD = Param("pad", "int", "[PAD] positions appended (padding mask)", 4, low=1, high=512)


def _mask(kind: str, n: int, window: int, pad: int) -> np.ndarray:
    """The mask a question names, for n real tokens (padding: n + pad rows, pad keys blocked)."""
    if kind == "causal":
        return causal_mask(n)
    if kind == "window":
        return window_mask(n, window)
    if kind == "padding":
        m = full_mask(n + pad)
        m[:, n:] = False  # no query may attend to a [PAD] key
        return m
    return full_mask(n)


def _mask_name(kind: str, window: int, pad: int) -> str:
    return {
        "none": tr("no mask"),
        "causal": tr("the causal mask"),
        "window": tr("a window mask of w = {w}", w=window),
        "padding": tr("the padding mask, with {pad} [PAD] tokens appended", pad=pad),
    }[kind]


@template(
    concept="masks",
    kind="number",
    page="masks",
    summary="how many cells (query, key) a causal / window / padding mask allows for this text",
    params=(MASK, WINDOW, PAD),
)
def allowed_cells(ctx: QuestionContext, *, mask: str = "causal", window: int = 2, pad: int = 4) -> Question:
    n = ctx.capture.encoded.n_real
    facts = describe(_mask(mask, n, window, pad))
    allowed, side = int(facts["allowed"]), int(facts["n"])  # type: ignore[call-overload]
    name = _mask_name(mask, window, pad)
    return Question(
        template="allowed_cells",
        concept="masks",
        page="masks",
        prompt=tr(
            "This text has {n} tokens. How many of the query-key cells does {mask} allow?",
            n=n,
            mask=name,
        ),
        answer=NumberAnswer(float(allowed), Tolerance(), unit="count"),
        explanation=tr(
            "The score matrix has {side} × {side} = {total} cells; {mask} allows {allowed} of them "
            "({share}%), and every other score is set to −∞ before the softmax.",
            side=side,
            total=format_number(side * side),
            mask=name,
            allowed=format_number(allowed),
            share=format_number(100 * float(facts["allowed_share"]), 1),  # type: ignore[arg-type]
        ),
        hint={
            "none": tr("Without a mask every query sees every key."),
            "causal": tr("Query i sees keys 0..i: 1 + 2 + ... + n."),
            "window": tr("Query i sees the keys j with |i − j| ≤ {w}; mind the ends of the text.", w=window),
            "padding": tr(
                "Every row, padded ones too, sees the {n} real keys and none of the [PAD] keys.", n=n
            ),
        }[mask],
        mark=Mark("mask", part=mask),
        params={"mask": mask, "window": window, "pad": pad},
    )


@template(
    concept="masks",
    kind="number",
    page="masks",
    summary="the weight a query gives a key its mask blocks (exactly 0)",
    params=(
        Param("mask", "choice", "causal or window", "causal", choices=("causal", "window")),
        WINDOW,
        LAYER,
        HEAD,
        QUERY,
        Param("key", "token", "a key the mask blocks (default: the first one in the query's row)"),
    ),
    needs=("q", "k", "attn_scores"),
)
def masked_weight(
    ctx: QuestionContext,
    *,
    mask: str = "causal",
    window: int = 2,
    layer: int | None = None,
    head: int | None = None,
    query: str | int | None = None,
    key: str | int | None = None,
) -> Question:
    layer, head = ctx.head_at(layer, head)
    qpos = ctx.position(query)
    raw, attn_mask = _scores_row(ctx, layer, head)
    blocked = ~_mask(mask, ctx.n_pos, window, 0)
    qlabel, name = quoted(ctx.labels[qpos]), _mask_name(mask, window, 0)
    if key is None:
        row = np.flatnonzero(blocked[qpos])
        if not row.size:
            raise NotAvailable(
                tr(
                    "under {mask} the query {query} sees every key: pick another query",
                    mask=name,
                    query=qlabel,
                ),
                "token",
                "query",
            )
        kpos = int(row[0])
    else:
        kpos = ctx.position(key, "key")
        if not blocked[qpos, kpos]:
            raise NotAvailable(
                tr(
                    "under {mask} the query {query} may attend to {key}: pick a key it blocks",
                    mask=name,
                    query=qlabel,
                    key=quoted(ctx.labels[kpos]),
                ),
                "token",
                "key",
            )
    p = temperature_pattern(raw, ctx.cfg.d_head, attn_mask=attn_mask & ~blocked)  # the run with the mask
    value = float(p[qpos, kpos])
    klabel = quoted(ctx.labels[kpos])
    return Question(
        template="masked_weight",
        concept="masks",
        page="masks",
        prompt=tr(
            "Under {mask}, what weight does {query} give {key} in layer {layer}, head {head}?",
            mask=name,
            query=qlabel,
            key=klabel,
            layer=layer,
            head=head,
        ),
        answer=NumberAnswer(value, Tolerance(abs=0.005), digits=2),
        explanation=tr(
            "Under {mask} the score of {query} → {key} is −∞ and e^−∞ = 0, so its weight is exactly {w}; "
            "the row's {n} allowed weights still sum to 1 (the largest is {top}).",
            mask=name,
            query=qlabel,
            key=klabel,
            w=format_number(value, 2),
            n=int((attn_mask & ~blocked)[qpos].sum()),
            top=format_number(float(p[qpos].max()), 2),
        ),
        hint=tr("What does the softmax make of a score of −∞?"),
        mark=Mark("pattern", layer=layer, head=head, row=qpos, cols=(kpos,)),
        params={"mask": mask, "window": window, "layer": layer, "head": head, "query": qpos, "key": kpos},
    )


# --- multi-head attention --------------------------------------------------------------------


@template(concept="heads", kind="number", page="heads", summary="d_head = d_model / n_heads of this model")
def d_head(ctx: QuestionContext) -> Question:
    cfg = ctx.cfg
    return Question(
        template="d_head",
        concept="heads",
        page="heads",
        prompt=tr(
            "This model has d_model = {dm} and {h} heads per layer. How many dimensions does each head's query have?",
            dm=cfg.d_model,
            h=cfg.n_heads,
        ),
        answer=NumberAnswer(float(cfg.d_head), Tolerance(), unit="count"),
        explanation=tr(
            "The heads split d_model between them: {dm} / {h} = {d}. Concatenated, the {h} heads' outputs "
            "give back {dm} numbers per token, which W_O mixes.",
            dm=cfg.d_model,
            h=cfg.n_heads,
            d=cfg.d_head,
        ),
        hint=tr("The heads' outputs are concatenated back to d_model."),
        mark=Mark("q", part="d_head"),
    )


@template(concept="heads", kind="number", page="heads", summary="how many heads each layer of this model has")
def n_heads(ctx: QuestionContext) -> Question:
    cfg = ctx.cfg
    return Question(
        template="n_heads",
        concept="heads",
        page="heads",
        prompt=tr("How many attention heads does each layer of this model have?"),
        answer=NumberAnswer(float(cfg.n_heads), Tolerance(), unit="count"),
        explanation=tr(
            "{h} heads per layer, {total} in all over {layers} layers; each head has d_head = {d} of the "
            "d_model = {dm} dimensions.",
            h=cfg.n_heads,
            total=cfg.n_heads * cfg.n_layers,
            layers=cfg.n_layers,
            d=cfg.d_head,
            dm=cfg.d_model,
        ),
        hint=tr("Look at the overview grid: one column per head."),
        mark=Mark("pattern", part="heads"),
    )


def role_name(role: str) -> str:
    """What a head of ``role`` attends to, as a question names it."""
    return {
        "previous": tr("the previous token"),
        "next": tr("the next token"),
        "self": tr("the token itself"),
        "cls": tr("the first token ([CLS])"),
        "duplicate": tr("an earlier copy of the same token"),
        "broad": tr("every token alike"),
    }[role]


CLOSE = 0.05  # heads within this of the top score are right too


def _head_label(layer: int, head: int) -> str:
    return tr("layer {layer}, head {head}", layer=layer, head=head)


@template(
    concept="heads",
    kind="choice",
    page="finder",
    summary="which head plays a role (previous token, [CLS], ...) on this text, among a few",
    params=(
        Param(
            "role", "choice", "the role (tformer.analysis.head_roles.ROLES)", "previous", choices=tuple(ROLES)
        ),
        Param("options", "int", "how many heads to choose from", 4, low=2, high=8),
    ),
    needs=("pattern",),
)
def role_head(ctx: QuestionContext, *, role: str = "previous", options: int = 4) -> Question:
    cfg, enc = ctx.cfg, ctx.capture.encoded
    if cfg.n_layers * cfg.n_heads < 2:
        raise NotAvailable(tr("this model has a single head: there is nothing to choose from"), "head")
    scores = role_scores(
        ctx.stacked("pattern"), np.asarray(enc.ids), cls_pos=enc.leading_special, skip_special=enc.special
    )
    ranked = rank_heads(scores, role, top=None)
    top = ranked[0][2]
    if not np.isfinite(top):
        raise NotAvailable(
            tr("no head can be scored for this role on this text (a duplicate head needs a repeated token)"),
            "token",
        )
    right = [(lay, h) for lay, h, s in ranked if s >= top - CLOSE]
    rest = [(lay, h) for lay, h, s in ranked if s < top - CLOSE or not np.isfinite(s)]
    n_wrong = min(max(options - len(right), 1), len(rest))
    # Distractors spread over the lower ranks, deterministic: the class compares clear cases.
    picks = [rest[round(i * (len(rest) - 1) / max(n_wrong - 1, 1))] for i in range(n_wrong)] if rest else []
    shown = sorted(set(right[: max(1, options - n_wrong)]) | set(picks))
    if len(shown) < 2:
        raise NotAvailable(tr("every head scores alike for this role on this text"), "token")
    score = {(lay, h): s for lay, h, s in ranked}
    best = ranked[0]
    second = next(((lay, h, s) for lay, h, s in ranked if (lay, h) not in right), best)
    what = role_name(role)
    return Question(
        template="role_head",
        concept="heads",
        page="finder",
        prompt=tr("On this text, which head attends most to {role}?", role=what),
        answer=ChoiceAnswer(
            tuple((f"{lay}.{h}", _head_label(lay, h)) for lay, h in shown),
            frozenset(f"{lay}.{h}" for lay, h in shown if (lay, h) in right),
        ),
        explanation=tr(
            "Scored on this text, {best} puts {score} of its weight on {role} on average; the best of the "
            "others, {second}, {score2}.",
            best=_head_label(best[0], best[1]),
            score=format_number(best[2], 2),
            role=what,
            second=_head_label(second[0], second[1]),
            score2=format_number(float(score[(second[0], second[1])]), 2),
        ),
        hint=tr(
            "Such a head draws a recognisable line or column in its heatmap: look for it in the overview."
        ),
        mark=Mark("roles", layer=best[0], head=best[1], part=role),
        params={"role": role, "options": options},
    )
