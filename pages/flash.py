"""FlashAttention, stepped: the chosen head's attention on the user's text, computed tile by tile
with the online softmax (`tformer.efficiency.flash`); each step's tiles, running max, running sum,
rescaling and partial output; at the end, the model's own z and the memory the loop needed."""

from tformer import ui

with ui.page_context(__file__, ("q", "k", "v", "z"), one_layer=True) as ctx:
    from tformer.ui.views import flash as view  # after the frame: a view loads torch

    view.intro()
    loop = view.controls(ctx)
    shown = view.step_part(ctx, loop)
    view.end_part(ctx, loop, shown)
