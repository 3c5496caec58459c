"""Questions on the rest of the model: positional encoding, the FFN, the residual and
LayerNorm, and the whole encoder (its parameters and layers). Sizes come from the config
(`EncoderConfig.block_params`, `top_params`, `n_params`), positions from
`tformer.model.positional` and `tformer.model.interventions`, LayerNorm statistics from
`tformer.analysis.layer_stats`."""

from __future__ import annotations

import math

import numpy as np

from ..analysis.head_roles import ROLES, role_scores
from ..analysis.layer_stats import layernorm_stats
from ..i18n import tr
from .answers import ChoiceAnswer, DirectionAnswer, Mark, NumberAnswer, Question, Tolerance, format_number
from .attention import role_name
from .context import NotAvailable, QuestionContext
from .registry import HEAD, LAYER, QUERY, Param, quoted, template

__all__ = [
    "GROUPS",
    "d_ff",
    "layernorm_mean",
    "n_layers",
    "n_params",
    "pe_value",
    "positions_off_change",
    "positions_off_role",
    "total_params",
]

BLOCK_GROUPS = ("W_Q", "W_K", "W_V", "W_O", "W_1", "W_2", "ln1", "ln2")
SUMS = {"attn": ("W_Q", "W_K", "W_V", "W_O"), "mlp": ("W_1", "W_2")}  # a sublayer's matrices together
TOP_GROUPS = (
    "embed",
    "token_type_embed",
    "pos_embed",
    "embed_ln",
    "embed_proj",
    "ln_final",
    "head",
    "lm_head",
)
GROUPS = BLOCK_GROUPS + tuple(SUMS) + TOP_GROUPS
CHANGED = 0.01  # a weight that moves less than this is "unchanged" to the eye
SAME_SCORE = 0.02  # a role score that moves less than this is "about the same"


# --- positional encoding ---------------------------------------------------------------------


@template(
    concept="positions",
    kind="number",
    page="positional",
    summary="the sinusoidal PE(pos, i) by the paper's formula, at this model's d_model",
    params=(
        Param("pos", "int", "the position", 1, low=0, high=100_000),
        Param("i", "int", "the dimension (even: sin, odd: cos)", 0, low=0, high=100_000),
    ),
)
def pe_value(ctx: QuestionContext, *, pos: int = 1, i: int = 0) -> Question:
    from ..model.positional import pe_frequencies, sinusoidal_encoding

    d = ctx.cfg.d_embed_size
    if d % 2:
        raise NotAvailable(
            tr("the sinusoidal formula needs an even d_model; this model has {d}", d=d), "model"
        )
    if i >= d:
        raise NotAvailable(
            tr("dimension {i} does not exist: d_model = {d} (0 to {last})", i=i, d=d, last=d - 1), "part", "i"
        )
    value = float(sinusoidal_encoding(1, d, start=pos)[0, i])
    omega = float(pe_frequencies(d)[i // 2])
    fn = "sin" if i % 2 == 0 else "cos"
    explanation = tr(
        "Dimension {i} is {parity}: PE({pos}, {i}) = {fn}({pos} / 10000^({two_i}/{d})) = {fn}({angle}) = {value}.",
        i=i,
        parity=tr("even, a sine") if fn == "sin" else tr("odd, a cosine"),
        pos=pos,
        fn=fn,
        two_i=2 * (i // 2),
        d=d,
        angle=format_number(pos * omega, 3),
        value=format_number(value, 3),
    )
    if ctx.cfg.pos_encoding != "sinusoidal":
        explanation += " " + (
            tr("This model does not add these: it learned a table of its own positions.")
            if ctx.cfg.pos_encoding == "learned"
            else tr("This model does not add these: it has no positions at all.")
        )
    return Question(
        template="pe_value",
        concept="positions",
        page="positional",
        prompt=tr(
            "By the sinusoid formula with d_model = {d}, what is PE({pos}, {i})?",
            d=d,
            pos=pos,
            i=i,
        ),
        answer=NumberAnswer(value, Tolerance(abs=0.02), digits=3),
        explanation=explanation,
        hint=tr("Even dimensions use sin, odd ones cos; dimensions 0 and 1 turn at frequency 1."),
        mark=Mark("pos_embed", row=pos, cols=(i,)),
        params={"pos": pos, "i": i},
    )


def _without_positions(ctx: QuestionContext) -> np.ndarray:
    """Every head's pattern [layer, head_index, query_pos, key_pos] with positions off."""
    from ..model.interventions import patterns_without_positions

    model = ctx.need_model()
    if ctx.capture.attn_mask is not None or ctx.capture.encoded.n_pad:
        raise NotAvailable(
            tr("this view ran with a mask or padding; positions off is compared on the text alone"),
            "activation",
        )
    return np.asarray(patterns_without_positions(model, list(ctx.capture.encoded.ids)))


@template(
    concept="positions",
    kind="choice",
    page="positional",
    summary="whether one head's weights change when the positions are switched off",
    params=(LAYER, HEAD),
    needs=("pattern",),
    runs_model=True,
)
def positions_off_change(
    ctx: QuestionContext, *, layer: int | None = None, head: int | None = None
) -> Question:
    layer, head = ctx.head_at(layer, head)
    before = ctx.array("pattern", layer)[head].astype(np.float64)
    after = _without_positions(ctx)[layer, head].astype(np.float64)
    diff = np.abs(after - before)
    q, k = (int(x) for x in np.unravel_index(int(np.argmax(diff)), diff.shape))
    largest = float(diff[q, k])
    changes = largest >= CHANGED
    labels = ctx.labels
    return Question(
        template="positions_off_change",
        concept="positions",
        page="positional",
        prompt=tr(
            "If the positional encoding is switched off (the same weights otherwise), will the weights of "
            "layer {layer}, head {head} change?",
            layer=layer,
            head=head,
        ),
        answer=ChoiceAnswer(
            (("changes", tr("yes, they change")), ("same", tr("no, they stay the same"))),
            frozenset({"changes" if changes else "same"}),
        ),
        explanation=tr(
            "Without positions the largest change is {d}, in the row of {query} on the key {key} "
            "({before} → {after}). Changes under {eps} count as the same. {why}",
            d=format_number(largest, 3),
            query=quoted(labels[q]),
            key=quoted(labels[k]),
            before=format_number(float(before[q, k]), 2),
            after=format_number(float(after[q, k]), 2),
            eps=CHANGED,
            why=tr("Attention itself is blind to order: only the positions added to the input tell it apart.")
            if ctx.cfg.pos_encoding != "none"
            else tr("This model adds no positions, so there is nothing to switch off."),
        ),
        hint=tr("Does q·k depend on where a token stands, if nothing in its vector says so?"),
        mark=Mark("pattern", layer=layer, head=head, row=q, cols=(k,)),
        params={"layer": layer, "head": head},
    )


@template(
    concept="positions",
    kind="direction",
    page="positional",
    summary="whether a head's role score (e.g. previous token) rises or falls with positions off",
    params=(
        LAYER,
        HEAD,
        Param(
            "role", "choice", "the role (tformer.analysis.head_roles.ROLES)", "previous", choices=tuple(ROLES)
        ),
    ),
    needs=("pattern",),
    runs_model=True,
)
def positions_off_role(
    ctx: QuestionContext, *, layer: int | None = None, head: int | None = None, role: str = "previous"
) -> Question:
    layer, head = ctx.head_at(layer, head)
    enc = ctx.capture.encoded
    ids = np.asarray(enc.ids)

    def score(pattern: np.ndarray) -> float:
        s = role_scores(pattern[None, None], ids, cls_pos=enc.leading_special, skip_special=enc.special)
        return float(s[role][0, 0])

    before = score(ctx.array("pattern", layer)[head])
    after = score(_without_positions(ctx)[layer, head])
    if not (math.isfinite(before) and math.isfinite(after)):
        raise NotAvailable(
            tr("no head can be scored for this role on this text (a duplicate head needs a repeated token)"),
            "token",
        )
    change = after - before
    direction = "same" if abs(change) < SAME_SCORE else ("higher" if change > 0 else "lower")
    words = {"higher": tr("higher"), "lower": tr("lower"), "same": tr("about the same")}
    return Question(
        template="positions_off_role",
        concept="positions",
        page="positional",
        prompt=tr(
            "On this text, layer {layer}, head {head} puts {score} of its weight on {role} on average. With "
            "the positions switched off, will that share be higher, lower or about the same?",
            layer=layer,
            head=head,
            score=format_number(before, 2),
            role=role_name(role),
        ),
        answer=DirectionAnswer(direction, change, SAME_SCORE, words),
        explanation=tr(
            "Its share on {role} goes from {before} to {after} without positions. A head that finds a token "
            "by where it stands (the one before, the one after) loses its way when the positions are gone; "
            "one that looks for a kind of token does not.",
            role=role_name(role),
            before=format_number(before, 2),
            after=format_number(after, 2),
        ),
        hint=tr("How would a head know which token comes just before, without positions?"),
        mark=Mark("roles", layer=layer, head=head, part=role),
        params={"layer": layer, "head": head, "role": role},
    )


# --- FFN, residual and LayerNorm -------------------------------------------------------------


@template(concept="ffn", kind="number", page="encoder", summary="the FFN's inner width d_ff of this model")
def d_ff(ctx: QuestionContext) -> Question:
    cfg = ctx.cfg
    ratio = cfg.d_mlp / cfg.d_model
    return Question(
        template="d_ff",
        concept="ffn",
        page="encoder",
        prompt=tr(
            "This model has d_model = {dm}. How wide is the hidden layer of its feed-forward network (d_ff)?",
            dm=cfg.d_model,
        ),
        answer=NumberAnswer(float(cfg.d_mlp), Tolerance(), unit="count"),
        explanation=tr(
            "d_ff = {f} = {ratio} × d_model ({dm}). The paper uses 4 × (2048 = 4 × 512): W_1 widens each "
            "token to d_ff, the activation acts there, W_2 brings it back to d_model.",
            f=format_number(cfg.d_mlp),
            ratio=format_number(ratio, 0 if ratio.is_integer() else 2),
            dm=cfg.d_model,
        ),
        hint=tr("The Transformer paper's ratio of d_ff to d_model is a small whole number."),
        mark=Mark("params", part="mlp"),
    )


@template(
    concept="ffn",
    kind="number",
    page="encoder",
    summary="the mean of a token's LayerNorm output (x − μ)/σ before γ and β: 0",
    params=(
        LAYER,
        QUERY,
        Param(
            "which", "choice", "ln1 (after attention) or ln2 (after the FFN)", "ln1", choices=("ln1", "ln2")
        ),
    ),
    needs=("ln1_normalized", "ln1_scale", "ln2_normalized", "ln2_scale"),
)
def layernorm_mean(
    ctx: QuestionContext, *, layer: int | None = None, query: str | int | None = None, which: str = "ln1"
) -> Question:
    layer, _ = ctx.head_at(layer, None)
    qpos = ctx.position(query)
    normalized = ctx.array(f"{which}_normalized", layer)[qpos]  # [d_model]
    sigma_in = float(ctx.array(f"{which}_scale", layer)[qpos, 0])
    stats = layernorm_stats(normalized[None], eps=0.0)
    mean, spread = float(stats.mean[0]), float(stats.sigma[0])
    token = quoted(ctx.labels[qpos])
    return Question(
        template="layernorm_mean",
        concept="ffn",
        page="encoder",
        prompt=tr(
            "In layer {layer}, the LayerNorm {which} normalizes the token {token}: (x − μ)/σ, before γ and β. "
            "What is the mean of its {d} values?",
            layer=layer,
            which=which,
            token=token,
            d=ctx.cfg.d_model,
        ),
        answer=NumberAnswer(mean, Tolerance(abs=0.05), digits=3),
        explanation=tr(
            "LayerNorm subtracts the token's own mean μ and divides by its spread σ (here {sigma}), so "
            "what comes out has mean {mean} and standard deviation {spread}, whatever the token was; γ "
            "and β then scale and shift it.",
            sigma=format_number(sigma_in, 3),
            mean=format_number(mean + 0.0, 3),
            spread=format_number(spread, 3),
        ),
        hint=tr("What is the mean of x − μ, if μ is the mean of x?"),
        mark=Mark(f"{which}_normalized", layer=layer, row=qpos),
        params={"layer": layer, "query": qpos, "which": which},
    )


# --- the whole encoder -----------------------------------------------------------------------


def _group_name(group: str) -> str:
    return {
        "W_Q": tr("W_Q (with its bias)"),
        "W_K": tr("W_K (with its bias)"),
        "W_V": tr("W_V (with its bias)"),
        "W_O": tr("W_O (with its bias)"),
        "W_1": tr("W_1 (with its bias)"),
        "W_2": tr("W_2 (with its bias)"),
        "ln1": tr("the first LayerNorm (γ and β)"),
        "ln2": tr("the second LayerNorm (γ and β)"),
        "attn": tr("the attention sublayer (W_Q, W_K, W_V, W_O)"),
        "mlp": tr("the feed-forward network (W_1, W_2)"),
        "embed": tr("the token embedding"),
        "token_type_embed": tr("the segment embedding"),
        "pos_embed": tr("the learned positions"),
        "embed_ln": tr("the embedding LayerNorm"),
        "embed_proj": tr("the embedding projection"),
        "ln_final": tr("the final LayerNorm"),
        "head": tr("the output Linear"),
        "lm_head": tr("the language-model head"),
    }[group]


def _formula(group: str, ctx: QuestionContext) -> str:
    """How one layer's (or the model's) count of ``group`` comes about, with this model's sizes."""
    d, f, e, v = ctx.cfg.d_model, ctx.cfg.d_mlp, ctx.cfg.d_embed_size, ctx.cfg.vocab_size
    n = format_number
    return {
        "W_Q": f"{d} × {d} + {d}",
        "W_K": f"{d} × {d} + {d}",
        "W_V": f"{d} × {d} + {d}",
        "W_O": f"{d} × {d} + {d}",
        "W_1": f"{d} × {f} + {f}",
        "W_2": f"{f} × {d} + {d}",
        "ln1": f"2 × {d}",
        "ln2": f"2 × {d}",
        "attn": f"4 × ({d} × {d} + {d})",
        "mlp": f"{d} × {f} + {f} + {f} × {d} + {d}",
        "embed": f"{n(v)} × {e}",
        "token_type_embed": f"{ctx.cfg.type_vocab_size} × {e}",
        "pos_embed": f"{ctx.cfg.max_len} × {e}",
        "embed_ln": f"2 × {e}",
        "embed_proj": f"{e} × {d} + {d}",
        "ln_final": f"2 × {d}",
        "head": f"{d} × {ctx.cfg.n_outputs} + {ctx.cfg.n_outputs}",
        "lm_head": f"{d} × {d} + {d} + 2 × {d} + {n(v)}",
    }[group]


def group_params(ctx: QuestionContext, group: str) -> int:
    """Parameters of ``group`` in one block (a block group) or in the model (the others)."""
    block = ctx.cfg.block_params()
    if group in SUMS:
        return sum(block[g] for g in SUMS[group])
    return block[group] if group in block else ctx.cfg.top_params()[group]


@template(
    concept="encoder",
    kind="number",
    page="encoder",
    summary="the parameters of a named part (W_Q, W_1, ln1, attn, mlp, embed, ...), per layer or in all",
    params=(
        Param("group", "choice", "the part (its weights and biases)", "W_Q", choices=GROUPS),
        Param(
            "scope",
            "choice",
            "layer: one block; model: every block (parts outside the blocks: the model)",
            "layer",
            choices=("layer", "model"),
        ),
    ),
)
def n_params(ctx: QuestionContext, *, group: str = "W_Q", scope: str = "layer") -> Question:
    per = group_params(ctx, group)
    in_block = group not in TOP_GROUPS
    if per == 0:
        raise NotAvailable(tr("this model has no {part}", part=_group_name(group)), "part", "group")
    layers = ctx.cfg.n_layers if in_block and scope == "model" else 1
    total = per * layers
    name = _group_name(group)
    if not in_block:
        prompt = tr("How many parameters does {part} of this model have?", part=name)
        explanation = tr(
            "{part}: {formula} = {total} parameters.",
            part=name,
            formula=_formula(group, ctx),
            total=format_number(total),
        )
    elif layers == 1:
        prompt = tr("How many parameters does {part} have in one layer of this model?", part=name)
        explanation = tr(
            "{part}: {formula} = {per} parameters per layer (weights and biases), the same in each of the {n} layers.",
            part=name,
            formula=_formula(group, ctx),
            per=format_number(per),
            n=ctx.cfg.n_layers,
        )
    else:
        prompt = tr(
            "How many parameters does {part} have in all {n} layers of this model together?",
            part=name,
            n=layers,
        )
        explanation = tr(
            "{part}: {formula} = {per} parameters per layer, × {n} layers = {total}.",
            part=name,
            formula=_formula(group, ctx),
            per=format_number(per),
            n=layers,
            total=format_number(total),
        )
    return Question(
        template="n_params",
        concept="encoder",
        page="encoder",
        prompt=prompt,
        answer=NumberAnswer(float(total), Tolerance(), unit="count"),
        explanation=explanation,
        hint=tr("A Linear layer from a to b numbers holds a × b weights and b biases."),
        mark=Mark("params", part=group),
        params={"group": group, "scope": scope if in_block else "model"},
    )


@template(concept="encoder", kind="number", page="encoder", summary="the model's total parameter count")
def total_params(ctx: QuestionContext) -> Question:
    cfg = ctx.cfg
    block = sum(cfg.block_params().values())
    top = sum(cfg.top_params().values())
    total = cfg.n_params()
    return Question(
        template="total_params",
        concept="encoder",
        page="encoder",
        prompt=tr("How many parameters does this model have in all (to within 5%)?"),
        answer=NumberAnswer(float(total), Tolerance(rel=0.05), unit="count"),
        explanation=tr(
            "{total} in all: {n} blocks of {block} each ({blocks}) and {top} outside them, most of it the "
            "token embedding ({embed} = {vocab} tokens × {e}).",
            total=format_number(total),
            n=cfg.n_layers,
            block=format_number(block),
            blocks=format_number(cfg.n_layers * block),
            top=format_number(top),
            embed=format_number(cfg.top_params()["embed"]),
            vocab=format_number(cfg.vocab_size),
            e=cfg.d_embed_size,
        ),
        hint=tr(
            "One block holds about 12 × d_model² (attention 4 d², the FFN 8 d²); add the embedding, vocabulary × d_model."
        ),
        mark=Mark("params", part="total"),
    )


@template(
    concept="encoder", kind="number", page="encoder", summary="how many layers (blocks) the model stacks"
)
def n_layers(ctx: QuestionContext) -> Question:
    cfg = ctx.cfg
    return Question(
        template="n_layers",
        concept="encoder",
        page="encoder",
        prompt=tr("How many encoder layers (blocks) does this model stack?"),
        answer=NumberAnswer(float(cfg.n_layers), Tolerance(), unit="count"),
        explanation=tr(
            "{n} blocks, each attention then a feed-forward network, each with its residual and LayerNorm "
            "({norm}); the paper's encoder stacks 6.",
            n=cfg.n_layers,
            norm=tr("post-norm: LayerNorm after each residual sum")
            if cfg.norm == "post"
            else tr("pre-norm: LayerNorm before each sublayer"),
        ),
        hint=tr("Count the rows of the heads' overview grid."),
        mark=Mark("params", part="layers"),
    )
