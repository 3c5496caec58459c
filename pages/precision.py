"""The model in float32, bfloat16, float16 and with INT8 Linear layers on the user's text: forward
time, weight size, how far the attention weights and the output move, which heads' top keys
change; one head in float32 beside the chosen variant, with their difference."""

from tformer import ui

with ui.page_context(__file__, ["pattern"]) as ctx:
    from tformer.ui.views import precision as view  # after the frame: a view loads torch

    run = view.precision_run(ctx.choice, ctx.text)
    view.intro(run.report)
    view.numbers_part(ctx, run)
    view.heads_part(ctx, run.report)
