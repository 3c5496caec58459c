"""Linear -> Softmax -> Output: the last hidden state at one position, its logits, the softmax at
a temperature, the top tokens; for GPT-2 the next token and a short greedy generation with the
attention of each new token; for a masked LM the predictions at its [MASK]."""

from tformer import ui

with ui.page_context(__file__) as ctx:
    from tformer.ui.views import predictions as view  # after the frame: a view loads torch

    info = view.head_info(ctx.choice)
    if info.kind is None:
        view.no_head(ctx)
    else:
        view.top_tokens(ctx, info)
        if info.kind == "next":
            view.greedy_generation(ctx)
