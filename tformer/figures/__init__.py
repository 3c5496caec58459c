"""Figure builders: numpy in, ``plotly.graph_objects.Figure`` out. No streamlit, no torch.

The one exception is the all-heads overview: `head_grid_data` returns the JSON-ready dict (a
PNG mosaic and its geometry) that the app's head grid draws without Plotly.

Every builder validates shapes (``ValueError`` naming the shape and the token count), shows
user text through :func:`safe_label`, and sends float32/uint8 arrays only (binary in the JSON).
"""

from ._common import safe_label
from .attention import attention_heatmap
from .heads import (
    ablation_effect_figure,
    head_metrics_figure,
    head_similarity_heatmap,
    heads_side_by_side,
)
from .overview import grid_selection, head_grid_data, mosaic_png
from .qkv import head_output_heatmap, qkv_figure

__all__ = [
    "ablation_effect_figure",
    "attention_heatmap",
    "head_metrics_figure",
    "head_output_heatmap",
    "head_similarity_heatmap",
    "heads_side_by_side",
    "grid_selection",
    "head_grid_data",
    "mosaic_png",
    "qkv_figure",
    "safe_label",
]
