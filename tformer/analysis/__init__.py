"""Analysis: what the lessons compute from a capture, the chapter on reading the heads. Per-head
metrics (``metrics``: entropy, distance, divergence between heads), the roles a head plays
(``head_roles``), heads combined and attention rollout (``rollout``), what each layer's FFN and
LayerNorm do (``layer_stats``), the √d_k scale and temperature (``scaling``), the numpy
reference of scaled, masked attention (``reference``), one layer recomputed step by step in
numpy on it (``walkthrough``), the mask builders (``masks``) and the model drawn as its parts
(``architecture``). All numpy, no torch; ``layouts`` (the two ways to write
attention's projections, in torch) and ``why`` (a recurrent layer against attention on a text:
its steps and its gradients by distance, in torch) are imported from their modules and are not
re-exported here.
"""

from __future__ import annotations

from .architecture import ArchitectureSpec, Component, architecture_spec, parameter_counts
from .head_roles import ROLES, average_scores, rank_heads, role_scores
from .layer_stats import (
    FfnSparsity,
    LayerNormStats,
    SublayerNorms,
    ffn_sparsity,
    layernorm_stats,
    sublayer_norms,
)
from .masks import MAX_ITEMS, causal_mask, custom_mask, describe, full_mask, output_shift, window_mask
from .metrics import (
    METRICS,
    cluster_order,
    head_metrics,
    js_divergence_matrix,
    js_rows_budget,
    metrics_table,
    offset_similarity,
    output_change,
    sample_rows,
)
from .reference import attention_np
from .rollout import HOW, Projection, attention_rollout, combine_heads, project_2d, top_pairs
from .scaling import (
    ScalingSweep,
    jacobian_norm,
    normalised_entropy,
    row_entropy,
    row_max,
    scaling_sweep,
    temperature_pattern,
)
from .walkthrough import (
    NeuronView,
    Step,
    input_weights,
    layer_weights,
    neuron_view,
    walk_final,
    walk_input,
    walk_layer,
)

__all__ = [
    "HOW",
    "MAX_ITEMS",
    "METRICS",
    "ROLES",
    "ArchitectureSpec",
    "Component",
    "FfnSparsity",
    "LayerNormStats",
    "NeuronView",
    "Projection",
    "ScalingSweep",
    "Step",
    "SublayerNorms",
    "architecture_spec",
    "attention_np",
    "attention_rollout",
    "average_scores",
    "causal_mask",
    "cluster_order",
    "combine_heads",
    "custom_mask",
    "describe",
    "ffn_sparsity",
    "full_mask",
    "head_metrics",
    "input_weights",
    "jacobian_norm",
    "js_divergence_matrix",
    "js_rows_budget",
    "layer_weights",
    "layernorm_stats",
    "metrics_table",
    "neuron_view",
    "normalised_entropy",
    "offset_similarity",
    "output_change",
    "output_shift",
    "parameter_counts",
    "project_2d",
    "rank_heads",
    "role_scores",
    "row_entropy",
    "row_max",
    "sample_rows",
    "scaling_sweep",
    "sublayer_norms",
    "temperature_pattern",
    "top_pairs",
    "walk_final",
    "walk_input",
    "walk_layer",
    "window_mask",
]
