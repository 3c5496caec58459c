"""How the Linear -> Softmax -> Output page draws: where a model without an output head ends,
the top tokens at one position and temperature, and GPT-2's greedy generation with the
attention of each new token."""

from __future__ import annotations

import streamlit as st

from ....figures.predictions import generation_attention_figure, top_tokens_figure
from ....figures.walkthrough import step_heatmap
from ....i18n import language, tr
from ....model.predictions import Generation, Prediction
from ...binding import bind, bind_number
from ...charts import chart
from ...context import PageContext, formula, layer_head, source
from ...tables import fitted_table
from .compute import HeadInfo, continuation, generation, mask_positions, prediction, start_position

KIND_NOTES = {
    "next": "A causal language model (GPT-2): the scores at position i are for the token at i + 1, "
    "so the last position predicts what follows your text.",
    "mlm": "A masked language model: the scores at position i are for the token at i itself; it was "
    "trained to fill in {mask}, so put {mask} where a word should be guessed.",
    "task": "A model trained on the Train page: its task head gives a score to each output symbol at "
    "every position.",
}


def no_head(ctx: PageContext) -> None:
    """A model without an output head: what it would need, and where it ends instead."""
    st.info(
        tr(
            "{model} has no output head: it ends with the last hidden states, which every other page "
            "shows. The seeds' last step, Linear → Softmax → Output, needs a model with one: GPT-2 "
            "(its LM head, tied to the token embeddings), a BERT-family folder saved with its "
            "masked-LM head (such as `BertForMaskedLM` or `RobertaForMaskedLM`), or a model trained on "
            "the Train page (its task head). Point TFORMER_MODELS_DIR at such a folder, or train one.",
            model=ctx.choice.label,
        )
    )
    out = ctx.capture.output  # [pos, d_model]: where this model ends
    last = step_heatmap(
        out,
        ctx.labels,
        [str(i) for i in range(out.shape[1])],
        title=tr("Where this model ends: the last hidden state of every token"),
        row_title=tr("token"),
        col_title=tr("dimension"),
    )
    chart(last, key="last_hidden")
    st.caption(
        tr(
            "With an output head, each row ({d} numbers) would go through a Linear layer to one score per "
            "token of the vocabulary, then through the softmax.",
            d=out.shape[1],
        )
    )


def top_tokens(ctx: PageContext, info: HeadInfo) -> None:
    """The position, temperature and k pickers, the top tokens there, and the code that ran."""
    assert info.kind is not None  # the page drew no_head otherwise
    masks = mask_positions(ctx.choice, ctx.text)
    st.caption(tr(KIND_NOTES[info.kind], mask=info.mask_token or "[MASK]"))
    if info.kind == "mlm" and not masks:
        st.info(
            tr(
                "The text has no {mask}: the scores below are for the token already there.",
                mask=info.mask_token,
            )
        )
    position, temperature, k = _pickers(ctx, info, masks)
    pred = prediction(ctx.choice, ctx.text, position, float(temperature), k, language())
    _top_tokens_chart(ctx, pred, position, temperature)
    if info.kind == "task":
        formula("Encoder.logits", label="The Linear: the task head's code")
    else:
        source("model.heads.LMHead", label="The Linear: the LM head's code (W is the token embedding matrix)")
    formula("model.predictions.predict", label="Softmax and the top tokens: the code that ran")


def _pickers(ctx: PageContext, info: HeadInfo, masks: list[int]) -> tuple[int, str, int]:
    """Position, temperature (as its option is written) and k."""
    n, labels = ctx.capture.n_pos, ctx.labels
    c1, c2, c3 = st.columns([2, 2, 1])
    start = start_position(info, ctx.capture.encoded.special, masks)
    position = c1.selectbox(
        tr("position"),
        range(n),
        format_func=lambda i: f"{i} · {labels[i]}",
        **bind("predictions.position", range(n), clamp=True, fallback=start),
    )
    temperature = c2.select_slider(
        tr("temperature T"),
        options=ctx.view.choices("predictions.temperature"),
        help=tr(
            "The logits are divided by T before the softmax: T < 1 sharpens the distribution, T > 1 flattens it."
        ),
        **bind("predictions.temperature"),
    )
    k = c3.number_input(tr("top k"), **bind_number("predictions.k"))
    return int(position), str(temperature), int(k)


def _top_tokens_chart(ctx: PageContext, pred: Prediction, position: int, temperature: str) -> None:
    """The top tokens' probabilities and logits, the text's own token highlighted."""
    cap, labels = ctx.capture, ctx.labels
    ids = cap.encoded.ids
    target = position + 1 if pred.predicts_next else position  # the token the text has there
    actual = ids[target] if target < len(ids) else None
    highlight = pred.top_ids.index(actual) if actual in pred.top_ids else None
    title = (
        tr(
            "What comes after “{token}” (position {pos}), at T = {t}",
            token=labels[position],
            pos=position,
            t=temperature,
        )
        if pred.predicts_next
        else tr(
            "What fits at “{token}” (position {pos}), at T = {t}",
            token=labels[position],
            pos=position,
            t=temperature,
        )
    )
    logits = pred.logits[list(pred.top_ids)]
    chart(
        top_tokens_figure(pred.top_labels, pred.top_probs, logits, title=title, highlight=highlight),
        key="top_tokens",
    )
    st.caption(
        tr(
            "The hidden state at position {pos} ({d} numbers, after the last layer) goes through the "
            "Linear layer to {n_out:,} scores z (the logits, from {lo:.2f} to {hi:.2f}); the softmax of z / T "
            "turns them into probabilities. The top {k} shown hold {share:.1%} of the probability.",
            pos=position,
            d=cap.cfg.d_model,
            n_out=pred.logits.shape[0],
            lo=float(pred.logits.min()),
            hi=float(pred.logits.max()),
            k=len(pred.top_ids),
            share=sum(pred.top_probs),
        )
        + (" " + tr("The highlighted bar is the token the text has there.") if highlight is not None else "")
    )


def greedy_generation(ctx: PageContext) -> None:
    """GPT-2 continuing the text with its most probable token, and where each new token's
    predicting position looked."""
    st.subheader(tr("Greedy generation: the most probable token, again and again"))
    n_new = int(st.number_input(tr("new tokens"), **bind_number("predictions.n_new")))
    gen = generation(ctx.choice, ctx.text, n_new)
    if not gen.new_ids:
        st.info(
            tr(
                "The text already fills the {n} positions this model reads, so nothing can be added.",
                n=len(ctx.capture.encoded.ids),
            )
        )
        return
    fitted_table(
        [
            {tr("step"): s + 1, tr("new token"): lab, tr("probability (T = 1)"): f"{p:.1%}"}
            for s, (lab, p) in enumerate(zip(gen.new_labels, gen.new_probs, strict=True))
        ],
        key="generated",
    )
    st.text(tr("the text continued: {text}", text=continuation(ctx.choice, gen)))
    if gen.stopped_at_max_len:
        st.caption(tr("Generation stopped at the model's {n} positions.", n=ctx.capture.cfg.max_len))
    _generation_attention(ctx, gen)


def _generation_attention(ctx: PageContext, gen: Generation) -> None:
    layer, head = layer_head(ctx)
    rows = [a[layer, head] for a in gen.attention]
    n_prompt = len(gen.prompt_ids)
    chart(
        generation_attention_figure(
            rows,
            list(ctx.labels[:n_prompt]) + list(gen.new_labels),
            n_prompt,
            title=tr(
                "Where each new token's predicting position looked: layer {layer}, head {head}",
                layer=layer,
                head=head,
            ),
        ),
        key="generation_attention",
    )
    st.caption(
        tr(
            "Each step runs the whole text again (no cache), takes the last position's scores and appends "
            "the most probable token (T = 1, no sampling). A row is that last position's attention over "
            "every token before the new one; gray cells did not exist yet."
        )
    )
