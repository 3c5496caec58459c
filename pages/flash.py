"""FlashAttention, stepped: the chosen head's attention on the user's text, computed tile by tile
with the online softmax (`tformer.efficiency.flash`); each step's tiles, running max, running sum,
rescaling and partial output; at the end, the model's own z and the memory the loop needed."""

import numpy as np
import streamlit as st

from tformer import ui
from tformer.analysis.masks import causal_mask
from tformer.efficiency.flash import (
    flash_steps,
    n_tiles,
    skipped_tiles,
    step_at,
)
from tformer.figures.flash import running_rows, tile_grid
from tformer.figures.walkthrough import step_heatmap
from tformer.i18n import tr

with ui.page_context(__file__, ("q", "k", "v", "z"), one_layer=True) as ctx:
    from tformer.ui.views import flash as view  # after the frame: a view loads torch

    cap, cfg = ctx.capture, ctx.capture.cfg
    st.markdown(
        tr(
            "The explicit attention builds the whole n × n matrix of scores before its softmax. "
            "FlashAttention never does: it cuts the queries into tiles of rows and the keys and values "
            "into tiles, and for each query tile walks the key tiles one after the other, keeping per "
            "row only a running maximum m, a running sum ℓ and an unnormalised output. When a tile "
            "brings a larger score, what was summed so far is rescaled by exp(m_old − m_new). Below, "
            "this loop runs on your text for the chosen head, one tile at a time."
        )
    )
    c1, c2, c3, c4 = st.columns(4)
    layer, head = ui.layer_head(ctx, (c1, c2))
    n, labels = cap.n_pos, ctx.labels
    block_q = view.tile_picker(c3, "query tile: rows", "flash.block_q", n)
    block_k = view.tile_picker(c4, "key tile: rows of K and V", "flash.block_k", n)
    q, k, v, z = (np.ascontiguousarray(cap.at(name, layer)[:, head]) for name in ("q", "k", "v", "z"))
    allowed = causal_mask(n) if cfg.causal else None
    t_r, t_c = n_tiles(n, block_q), n_tiles(n, block_k)
    n_steps = t_r * t_c
    ui.formula(flash_steps, code=False)
    st.caption(
        tr(
            "{n} tokens in {t_r} query tiles × {t_c} key tiles: {steps} steps. d_k = {d}. {mask}",
            n=n, t_r=t_r, t_c=t_c, steps=n_steps, d=cfg.d_head,
            mask=tr("This model is causal: a tile whose keys all come after its queries is fully masked and skipped.")
            if cfg.causal else tr("Nothing is masked: this model reads in both directions and one text has no padding."),
        )
    )  # fmt: skip

    shown = view.step_bar(n_steps)
    s = shown - 1
    rec = step_at(q, k, v, s, block_q=block_q, block_k=block_k, allowed=allowed)
    rows = rec.q1 - rec.q0
    st.subheader(
        tr(
            "Step {shown} of {n}: query tile {i} (tokens {q0}–{q1}) × key tile {j} (tokens {k0}–{k1})",
            shown=shown, n=n_steps, i=rec.i, q0=rec.q0, q1=rec.q1 - 1, j=rec.j, k0=rec.k0, k1=rec.k1 - 1,
        )
    )  # fmt: skip
    if rec.skipped:
        what = tr(
            "Every cell of this tile is masked: keys {k0}–{k1} all come after queries {q0}–{q1}. A real "
            "kernel skips it and does not even load K_j and V_j; m, ℓ and O stay as they were.",
            k0=rec.k0, k1=rec.k1 - 1, q0=rec.q0, q1=rec.q1 - 1,
        )  # fmt: skip
    elif rec.j == 0:
        what = tr(
            "The first key tile of query tile {i}: m starts at −∞, ℓ and O at 0, so α = exp(−∞) = 0: "
            "there is nothing to rescale yet. P̃ = exp(S − m) of this tile becomes the first sum and output.",
            i=rec.i,
        )
    else:
        what = tr(
            "In {rises} of the {rows} rows this tile holds a score larger than any seen before: m rises "
            "there, and α < 1 scales down the sum and the output gathered under the old maximum. In the "
            "other rows α = 1 and this tile's P̃ simply adds on.",
            rises=rec.rises, rows=rows,
        )  # fmt: skip
    if rec.last:
        what += " " + tr(
            "This was query tile {i}'s last key tile: O_i / ℓ_i is now its final output, softmax(S)V for "
            "these {rows} rows.",
            i=rec.i, rows=rows,
        )  # fmt: skip
    st.markdown(what)

    row_labels = view.labels_of(labels, rec.q0, rec.q1)
    col_labels = view.labels_of(labels, rec.k0, rec.k1)
    numbers = rows <= view.NUMBERS and rec.k1 - rec.k0 <= view.NUMBERS
    left, right = st.columns(2)
    with left:
        grid = tile_grid(
            labels, block_q=block_q, block_k=block_k, step=s, width=460,
            skipped=skipped_tiles(allowed, n, n, block_q, block_k),
        )  # fmt: skip
        ui.chart(grid, key="flash_grid")
        st.caption(
            tr(
                "The n × n score matrix as the loop's tiles. The loop only ever holds one tile of it; the "
                "dotted bands are the current query tile's rows and key tile's columns."
            )
        )
        ui.chart(
            step_heatmap(
                rec.scores, row_labels, col_labels, numbers=numbers, width=460,
                title=tr("this tile's scores S_ij"),
                row_title=tr("query token (row)"), col_title=tr("key token (column)"), value_title=tr("score"),
            ),
            key="flash_scores",
        )  # fmt: skip
        ui.chart(
            step_heatmap(
                rec.p, row_labels, col_labels, numbers=numbers, width=460, weights=True,
                title=tr("P̃ = exp(S_ij − m_new)"),
                row_title=tr("query token (row)"), col_title=tr("key token (column)"), value_title="P̃",
            ),
            key="flash_p",
        )  # fmt: skip
    with right:
        st.markdown(tr("**The loop** (`tformer.efficiency.flash.flash_steps`), as it ran:"))
        st.code(view.without_docstring(ui.source_text(flash_steps)), language="python", wrap_lines=True)
    ui.chart(
        running_rows(
            row_labels, m_old=rec.m_old, m_new=rec.m_new, l_old=rec.l_old, l_new=rec.l_new,
            alpha=rec.alpha, tile_sum=rec.p.sum(axis=1),
        ),
        key="flash_rows",
    )  # fmt: skip
    dims = [str(d) for d in range(cfg.d_head)]
    ui.chart(
        step_heatmap(
            rec.out, row_labels, dims, numbers=rows <= view.NUMBERS and cfg.d_head <= view.NUMBERS,
            title=tr("the partial output O_i / ℓ_i: softmax over the keys seen so far (0–{k1}), times their values",
                     k1=rec.k1 - 1),
            row_title=tr("query token (row)"), col_title=tr("dimension (d_head)"), value_title="O_i / ℓ_i",
        ),
        key="flash_out",
    )  # fmt: skip

    if shown < n_steps:
        st.caption(
            tr(
                "Step to the end (step {n}) to compare the result with the model's own output and to see "
                "how much memory the loop needed.",
                n=n_steps,
            )
        )
    else:
        with st.spinner(tr("Running the whole loop...")):
            out, fp = view.full_run(q, k, v, bool(cfg.causal), block_q, block_k)
        diff = float(np.abs(out - z).max())
        hook = f"`blocks.{layer}.attn.hook_z`"
        if diff <= 1e-5:
            st.success(
                tr(
                    "✓ The loop's output equals the explicit result softmax(QKᵀ/√d_k)V, the model's own z "
                    "for this head ({hook}, head {head}): largest difference {diff}",
                    hook=hook, head=head, diff=f"{diff:.1e}",
                )
            )  # fmt: skip
        else:
            st.warning(
                tr(
                    "The loop's output differs from the model's own z for this head ({hook}, head {head}): "
                    "largest difference {diff}",
                    hook=hook, head=head, diff=f"{diff:.1e}",
                )
            )  # fmt: skip
        shape = " × ".join(str(x) for x in fp.shape)
        tile = " × ".join(str(x) for x in fp.score_tile)
        if fp.elements < fp.full_elements:
            memory = tr(
                "**Memory.** The largest array the loop ever held was {name} [{shape}]: {elements} numbers, "
                "{nbytes} in float32; its largest score tile S_ij was [{tile}]. The explicit attention "
                "builds the whole {n} × {n} score matrix: {full} numbers, {full_bytes}, {ratio} times "
                "as many. The loop's memory grows with the tile sizes and d_k, not with the square of "
                "the text's length.",
                name=f"`{fp.name}`", shape=shape, elements=f"{fp.elements:,}", nbytes=view.size_text(fp.bytes),
                tile=tile, n=n, full=f"{fp.full_elements:,}", full_bytes=view.size_text(fp.full_bytes),
                ratio=f"{fp.ratio:.1f}",
            )  # fmt: skip
        else:
            memory = tr(
                "**Memory.** The largest array the loop ever held was {name} [{shape}]: {elements} numbers, "
                "{nbytes}. The whole {n} × {n} score matrix has only {full} numbers ({full_bytes}): at "
                "this length tiling saves nothing. It pays off for long texts, where n × n outgrows "
                "every tile.",
                name=f"`{fp.name}`", shape=shape, elements=f"{fp.elements:,}", nbytes=view.size_text(fp.bytes),
                n=n, full=f"{fp.full_elements:,}", full_bytes=view.size_text(fp.full_bytes),
            )  # fmt: skip
        st.markdown(memory)
