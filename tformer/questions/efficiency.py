"""Questions on what attention costs: the bytes of the n × n scores for this text
(`tformer.model.capture.capture_shape`), FlashAttention's largest tile against the n × n matrix
(`tformer.efficiency.flash`), and how much smaller INT8 weights are
(`tformer.efficiency.precision`)."""

from __future__ import annotations

import math

from ..efficiency.flash import TILE_SIDES, auto_tile, flash_attention
from ..i18n import tr
from .answers import Mark, NumberAnswer, Question, Tolerance, format_number
from .context import NotAvailable, QuestionContext
from .registry import HEAD, LAYER, Param, template

__all__ = ["flash_ratio", "int8_ratio", "scores_bytes"]

FLOAT32_BYTES = 4  # a capture's arrays are float32


@template(
    concept="efficiency",
    kind="number",
    page="costs",
    summary="bytes of the n × n attention scores for this text, one head or one layer's heads",
    params=(
        Param(
            "scope",
            "choice",
            "head: one head; layer: every head of a layer",
            "head",
            choices=("head", "layer"),
        ),
    ),
)
def scores_bytes(ctx: QuestionContext, *, scope: str = "head") -> Question:
    from ..model.capture import capture_shape

    n, h = ctx.n_pos, ctx.cfg.n_heads
    shape = capture_shape(ctx.cfg, n, "attn_scores", n_layers=1)[1:]  # [head_index, query_pos, key_pos]
    if scope == "head":
        shape = shape[1:]
    nbytes = math.prod(shape) * FLOAT32_BYTES
    long = 512 * 512 * FLOAT32_BYTES * (1 if scope == "head" else h)
    return Question(
        template="scores_bytes",
        concept="efficiency",
        page="costs",
        prompt=(
            tr("This text has {n} tokens. How many bytes do one head's n × n scores take in float32?", n=n)
            if scope == "head"
            else tr(
                "This text has {n} tokens. How many bytes do the n × n scores of all {h} heads of one layer take in float32?",
                n=n,
                h=h,
            )
        ),
        answer=NumberAnswer(float(nbytes), Tolerance(rel=0.01), unit="bytes"),
        explanation=tr(
            "{shape} scores × 4 bytes = {bytes} bytes. The count grows as n²: at 512 tokens it would be "
            "{long} bytes, {times} times more.",
            shape=" × ".join(str(s) for s in shape),
            bytes=format_number(nbytes),
            long=format_number(long),
            times=format_number(long / nbytes, 0 if long % nbytes == 0 else 1),
        ),
        hint=tr("One score per (query, key) pair, 4 bytes each."),
        mark=Mark("attn_scores", part=scope),
        params={"scope": scope},
    )


@template(
    concept="efficiency",
    kind="number",
    page="flash",
    summary="how many times larger the n × n scores are than FlashAttention's largest working array",
    params=(
        LAYER,
        HEAD,
        Param(
            "block",
            "int",
            "the tile side (default: the Flash page's choice for this length)",
            None,
            low=2,
            high=512,
        ),
    ),
    needs=("q", "k", "v", "attn_scores"),
)
def flash_ratio(
    ctx: QuestionContext, *, layer: int | None = None, head: int | None = None, block: int | None = None
) -> Question:
    layer, head = ctx.head_at(layer, head)
    n = ctx.n_pos
    side = auto_tile(n) if block is None else int(block)
    if block is not None and side not in TILE_SIDES:
        raise NotAvailable(
            tr("tiles of {b} rows are not offered; choose one of {sides}", b=side, sides=list(TILE_SIDES)),
            "part",
            "block",
        )
    q, k, v = (ctx.array(name, layer)[:, head] for name in ("q", "k", "v"))  # [pos, d_head]
    fp = flash_attention(
        q, k, v, block_q=side, block_k=side, attn_mask=ctx.attn_mask(layer, head), record=False
    ).footprint
    return Question(
        template="flash_ratio",
        concept="efficiency",
        page="flash",
        prompt=tr(
            "FlashAttention walks this text's {n} tokens in tiles of {b} rows and never builds the n × n "
            "scores. How many times larger is that n × n matrix than the largest array the loop holds?",
            n=n,
            b=side,
        ),
        answer=NumberAnswer(fp.ratio, Tolerance(rel=0.1), unit="ratio", digits=1),
        explanation=tr(
            "The largest array the loop holds is {name} [{shape}] = {elements} numbers; the n × n scores "
            "would be {n} × {n} = {full}: {ratio} times more. The gap grows with n: the tiles stay the same size.",
            name=fp.name,
            shape=" × ".join(str(s) for s in fp.shape),
            elements=format_number(fp.elements),
            n=n,
            full=format_number(fp.full_elements),
            ratio=format_number(fp.ratio, 1),
        ),
        hint=tr("Compare one tile's rows × columns (or rows × d_head) with n × n."),
        mark=Mark("flash", layer=layer, head=head, part=fp.name),
        params={"layer": layer, "head": head, "block": side},
    )


@template(
    concept="efficiency",
    kind="number",
    page="precision",
    summary="how many times smaller the weights are in INT8 than in float32 (Linear layers or all)",
    params=(
        Param(
            "part",
            "choice",
            "linear: the Linear layers' weights; all: every weight",
            "linear",
            choices=("linear", "all"),
        ),
    ),
    runs_model=True,
)
def int8_ratio(ctx: QuestionContext, *, part: str = "linear") -> Question:
    from ..efficiency.precision import make_variant, weight_bytes

    model = ctx.need_model()
    variant = make_variant(model, "int8")
    if variant.model is None:
        raise NotAvailable(tr("INT8 is not available here: {problem}", problem=variant.problem), "engine")
    (f_all, f_lin), (i_all, i_lin) = weight_bytes(model), weight_bytes(variant.model)
    before, after = (f_lin, i_lin) if part == "linear" else (f_all, i_all)
    ratio = before / after
    return Question(
        template="int8_ratio",
        concept="efficiency",
        page="precision",
        prompt=(
            tr(
                "Dynamic INT8 stores each Linear weight in 1 byte instead of float32's 4. How many times smaller do the Linear layers' weights get?"
            )
            if part == "linear"
            else tr(
                "Dynamic INT8 quantizes the Linear layers only. How many times smaller does the whole model's weights get?"
            )
        ),
        answer=NumberAnswer(ratio, Tolerance(rel=0.05), unit="ratio", digits=2),
        explanation=tr(
            "The Linear layers take {f_lin} bytes in float32 and {i_lin} in INT8 (their biases and one scale "
            "per matrix stay float): {r_lin} times smaller. The whole model goes from {f_all} to {i_all} bytes, "
            "{r_all} times: the embeddings and LayerNorms stay float32.",
            f_lin=format_number(f_lin),
            i_lin=format_number(i_lin),
            r_lin=format_number(f_lin / i_lin),
            f_all=format_number(f_all),
            i_all=format_number(i_all),
            r_all=format_number(f_all / i_all),
        ),
        hint=tr("4 bytes become 1, but not everything is a Linear weight."),
        mark=Mark("precision", part=part),
        params={"part": part},
    )
