"""Why attention: a tanh RNN and a GRU stepping through the text's token vectors one token at a
time against one attention layer that computes every position at once; the sequential steps and
the measured time against length; the gradient of the last output with respect to each earlier
input against the distance; and a long-range recall task trained here, the attention head
shown looking back."""

from tformer import ui

with ui.page_context(__file__, ["embed"]) as ctx:
    from tformer.ui.views import why as view  # after the frame: a view loads torch

    view.intro(ctx)
    part = ui.section("why.section", view.WHY_SECTIONS)
    scale = float(ui.view().get("why.scale"))
    runs = view.why_layers(ctx.choice, ctx.text, scale)
    if part == "steps":
        view.steps_section(ctx, runs, scale)
    elif part == "gradients":
        view.gradients_section(ctx, runs, scale)
    else:
        view.recall_section()
