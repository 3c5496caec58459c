"""How the FlashAttention page draws: the tile pickers and the loop's size, one step of the
loop (its tiles, running max and sum, rescaling and partial output) and, at the last step, the
check against the model's own z and the memory the loop needed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from ....analysis.masks import causal_mask
from ....efficiency.flash import FlashStep, Footprint, flash_steps, n_tiles, skipped_tiles, step_at
from ....figures.flash import running_rows, tile_grid
from ....figures.walkthrough import step_heatmap
from ....i18n import tr
from ...charts import chart
from ...context import PageContext, formula, layer_head, source_text
from .compute import NUMBERS, full_run, labels_of, size_text, step_bar, tile_picker, without_docstring

WIDTH = 460  # the left column's charts, in pixels


@dataclass(frozen=True)
class Loop:
    """The chosen head's arrays and the tiling the user picked."""

    layer: int
    head: int
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    z: np.ndarray  # the model's own output of the head: what the loop must reproduce
    attn_mask: np.ndarray | None  # the causal mask, None when nothing is masked
    block_q: int
    block_k: int

    @property
    def n(self) -> int:
        return int(self.q.shape[0])

    @property
    def n_steps(self) -> int:
        return n_tiles(self.n, self.block_q) * n_tiles(self.n, self.block_k)


def intro() -> None:
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


def controls(ctx: PageContext) -> Loop:
    """Layer, head and the two tile sizes; the loop's formula and how many steps it takes."""
    cap, cfg = ctx.capture, ctx.capture.cfg
    c1, c2, c3, c4 = st.columns(4)
    layer, head = layer_head(ctx, (c1, c2))
    n = cap.n_pos
    block_q = tile_picker(c3, "query tile: rows", "flash.block_q", n)
    block_k = tile_picker(c4, "key tile: rows of K and V", "flash.block_k", n)
    q, k, v, z = (np.ascontiguousarray(cap.at(name, layer)[:, head]) for name in ("q", "k", "v", "z"))
    loop = Loop(layer, head, q, k, v, z, causal_mask(n) if cfg.causal else None, block_q, block_k)
    formula(flash_steps, code=False)
    st.caption(
        tr(
            "{n} tokens in {t_r} query tiles × {t_c} key tiles: {steps} steps. d_k = {d}. {mask}",
            n=n,
            t_r=n_tiles(n, block_q),
            t_c=n_tiles(n, block_k),
            steps=loop.n_steps,
            d=cfg.d_head,
            mask=tr(
                "This model is causal: a tile whose keys all come after its queries is fully masked and skipped."
            )
            if cfg.causal
            else tr("Nothing is masked: this model reads in both directions and one text has no padding."),
        )
    )
    return loop


def step_part(ctx: PageContext, loop: Loop) -> int:
    """The step bar and the chosen step: what it did, in words and charts. Returns the step shown
    (1-based)."""
    shown = step_bar(loop.n_steps)
    s = shown - 1
    rec = step_at(
        loop.q, loop.k, loop.v, s, block_q=loop.block_q, block_k=loop.block_k, attn_mask=loop.attn_mask
    )
    st.subheader(
        tr(
            "Step {shown} of {n}: query tile {i} (tokens {q0}–{q1}) × key tile {j} (tokens {k0}–{k1})",
            shown=shown,
            n=loop.n_steps,
            i=rec.i,
            q0=rec.q0,
            q1=rec.q1 - 1,
            j=rec.j,
            k0=rec.k0,
            k1=rec.k1 - 1,
        )
    )
    st.markdown(_what_happened(rec))
    _step_charts(ctx, loop, rec, s)
    return shown


def _what_happened(rec: FlashStep) -> str:
    """One step in words: a skipped tile, the first tile of a row of tiles, or a rescaling one."""
    rows = rec.q1 - rec.q0
    if rec.skipped:
        what = tr(
            "Every cell of this tile is masked: keys {k0}–{k1} all come after queries {q0}–{q1}. A real "
            "kernel skips it and does not even load K_j and V_j; m, ℓ and O stay as they were.",
            k0=rec.k0,
            k1=rec.k1 - 1,
            q0=rec.q0,
            q1=rec.q1 - 1,
        )
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
            rises=rec.rises,
            rows=rows,
        )
    if rec.last:
        what += " " + tr(
            "This was query tile {i}'s last key tile: O_i / ℓ_i is now its final output, softmax(S)V for "
            "these {rows} rows.",
            i=rec.i,
            rows=rows,
        )
    return what


def _step_charts(ctx: PageContext, loop: Loop, rec: FlashStep, s: int) -> None:
    """The tile grid, this tile's scores and P̃ beside the loop's code, then the running
    statistics of its rows and the partial output."""
    labels, d_head = ctx.labels, ctx.capture.cfg.d_head
    rows = rec.q1 - rec.q0
    row_labels = labels_of(labels, rec.q0, rec.q1)
    col_labels = labels_of(labels, rec.k0, rec.k1)
    numbers = rows <= NUMBERS and rec.k1 - rec.k0 <= NUMBERS
    row_title, col_title = tr("query token (row)"), tr("key token (column)")
    left, right = st.columns(2)
    with left:
        skipped = skipped_tiles(loop.attn_mask, loop.n, loop.n, loop.block_q, loop.block_k)
        grid = tile_grid(
            labels, block_q=loop.block_q, block_k=loop.block_k, step=s, width=WIDTH, skipped=skipped
        )
        chart(grid, key="flash_grid")
        st.caption(
            tr(
                "The n × n score matrix as the loop's tiles. The loop only ever holds one tile of it; the "
                "dotted bands are the current query tile's rows and key tile's columns."
            )
        )
        scores = step_heatmap(
            rec.scores,
            row_labels,
            col_labels,
            numbers=numbers,
            width=WIDTH,
            title=tr("this tile's scores S_ij"),
            value_title=tr("score"),
            row_title=row_title,
            col_title=col_title,
        )
        chart(scores, key="flash_scores")
        p = step_heatmap(
            rec.p,
            row_labels,
            col_labels,
            numbers=numbers,
            width=WIDTH,
            weights=True,
            title=tr("P̃ = exp(S_ij − m_new)"),
            value_title="P̃",
            row_title=row_title,
            col_title=col_title,
        )
        chart(p, key="flash_p")
    with right:
        st.markdown(tr("**The loop** (`tformer.efficiency.flash.flash_steps`), as it ran:"))
        st.code(without_docstring(source_text(flash_steps)), language="python", wrap_lines=True)
    running = running_rows(
        row_labels,
        m_old=rec.m_old,
        m_new=rec.m_new,
        l_old=rec.l_old,
        l_new=rec.l_new,
        alpha=rec.alpha,
        tile_sum=rec.p.sum(axis=1),
    )
    chart(running, key="flash_rows")
    out = step_heatmap(
        rec.out,
        row_labels,
        [str(d) for d in range(d_head)],
        numbers=rows <= NUMBERS and d_head <= NUMBERS,
        title=tr(
            "the partial output O_i / ℓ_i: softmax over the keys seen so far (0–{k1}), times their values",
            k1=rec.k1 - 1,
        ),
        row_title=tr("query token (row)"),
        col_title=tr("dimension (d_head)"),
        value_title="O_i / ℓ_i",
    )
    chart(out, key="flash_out")


def end_part(ctx: PageContext, loop: Loop, shown: int) -> None:
    """Before the last step, a pointer to it; at the last step, the whole loop's output against
    the model's own z, and the memory the loop needed against the explicit n × n."""
    if shown < loop.n_steps:
        st.caption(
            tr(
                "Step to the end (step {n}) to compare the result with the model's own output and to see "
                "how much memory the loop needed.",
                n=loop.n_steps,
            )
        )
        return
    with st.spinner(tr("Running the whole loop...")):
        out, fp = full_run(loop.q, loop.k, loop.v, bool(ctx.capture.cfg.causal), loop.block_q, loop.block_k)
    diff = float(np.abs(out - loop.z).max())
    said = {"hook": f"`blocks.{loop.layer}.attn.hook_z`", "head": loop.head, "diff": f"{diff:.1e}"}
    if diff <= 1e-5:
        st.success(
            tr(
                "✓ The loop's output equals the explicit result softmax(QKᵀ/√d_k)V, the model's own z "
                "for this head ({hook}, head {head}): largest difference {diff}",
                **said,
            )
        )
    else:
        st.warning(
            tr(
                "The loop's output differs from the model's own z for this head ({hook}, head {head}): "
                "largest difference {diff}",
                **said,
            )
        )
    st.markdown(_memory_text(fp, loop.n))


def _memory_text(fp: Footprint, n: int) -> str:
    """The largest array the loop held against the whole score matrix."""
    said = {
        "name": f"`{fp.name}`",
        "shape": " × ".join(str(x) for x in fp.shape),
        "elements": f"{fp.elements:,}",
        "nbytes": size_text(fp.bytes),
        "n": n,
        "full": f"{fp.full_elements:,}",
        "full_bytes": size_text(fp.full_bytes),
    }
    if fp.elements < fp.full_elements:
        return tr(
            "**Memory.** The largest array the loop ever held was {name} [{shape}]: {elements} numbers, "
            "{nbytes} in float32; its largest score tile S_ij was [{tile}]. The explicit attention "
            "builds the whole {n} × {n} score matrix: {full} numbers, {full_bytes}, {ratio} times "
            "as many. The loop's memory grows with the tile sizes and d_k, not with the square of "
            "the text's length.",
            tile=" × ".join(str(x) for x in fp.score_tile),
            ratio=f"{fp.ratio:.1f}",
            **said,
        )
    return tr(
        "**Memory.** The largest array the loop ever held was {name} [{shape}]: {elements} numbers, "
        "{nbytes}. The whole {n} × {n} score matrix has only {full} numbers ({full_bytes}): at "
        "this length tiling saves nothing. It pays off for long texts, where n × n outgrows "
        "every tile.",
        **said,
    )
