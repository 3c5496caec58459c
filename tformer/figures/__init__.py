"""Figure builders: numpy in, ``plotly.graph_objects.Figure`` out. No streamlit, no torch.

The one exception is the all-heads overview: `head_grid_data` returns the JSON-ready dict (a
PNG mosaic and its geometry) that the app's head grid draws without Plotly.

Parameters carry the model's hook short names: ``pattern`` (softmax weights), ``attn_scores``
(scaled, masked scores), ``q``, ``k``, ``v``, ``z``; a ``kind=`` selector takes the same names.

Every builder validates shapes (``ValueError`` naming the shape and the token count), shows
user text through :func:`safe_label`, and follows the same readability rules (a class reads
the figures projected, from the back of the room; :mod:`.labels`, :mod:`.layout`,
:mod:`.colors`):

- sized for the column it is drawn in: a ``width=`` argument (px; defaults for a 1400 x 1000
  window: 940 for the main area, 745 for the Attention page's detail column, 460 for half),
  ``layout.height`` set so square plots fill that width, colorbars beside their plot and no
  taller; ``layout.meta["width"]`` says the width a figure was designed for;
- up to 64 tokens every token is labelled on every token axis; beyond, every k-th (the same k
  on every token axis of a figure) and the hover names every position; tick labels 12-14 px,
  Chinese kept upright (flat labels in staggered rows), axis titles in plain words;
- colors match the values: sequential on a fixed 0..1 for weights and divergences, diverging
  around 0 for signed values, clipped at the 99th percentile of the magnitudes when a few
  outliers would wash the rest out (stated on the colorbar and in ``layout.meta``).

And the same payload rules (the browser, not the model, is the bottleneck):

- arrays handed to plotly are float32 or uint8 numpy (plotly.py base64-encodes those;
  float16 would become text JSON, many times larger);
- a [query_pos, key_pos] matrix is sent at full resolution up to
  :data:`~tformer.figures.pooling.MAX_SIDE` positions a side and max-pooled in square blocks
  above that (:mod:`~tformer.figures.pooling`);
- token axes are category axes of unique ``"pos: token"`` names with ticks at integer
  positions (:mod:`~tformer.figures.labels`);
- margins are sized for the tick labels up front, so plotly lays a chart out once
  (:class:`~tformer.figures.labels.TokenAxis` ``.margin``); no ``make_subplots``.

Shared helpers live in :mod:`.checks` (input validation), :mod:`.colors` (color scales and
limits), :mod:`.labels` (token text, planned token axes, label margins), :mod:`.layout`
(column widths, panel geometry, colorbars) and :mod:`.pooling` (max-pooling of long inputs).
Everything here is deterministic.
"""

from .attention import attention_heatmap
from .heads import (
    ablation_effect_figure,
    head_metrics_figure,
    head_similarity_heatmap,
    heads_side_by_side,
)
from .labels import safe_label
from .overview import grid_selection, head_grid_data, mosaic_png
from .qkv import head_output_heatmap, qkv_figure

__all__ = [
    "ablation_effect_figure",
    "attention_heatmap",
    "grid_selection",
    "head_grid_data",
    "head_metrics_figure",
    "head_output_heatmap",
    "head_similarity_heatmap",
    "heads_side_by_side",
    "mosaic_png",
    "qkv_figure",
    "safe_label",
]
