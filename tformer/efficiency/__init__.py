"""Efficiency: what attention costs and the ways around it, the lesson's chapter on scale.
``costs`` times dense attention against length (``measure``: how each number is measured),
``rnn`` sets it against a recurrent layer, ``sparse`` and ``sparse_costs`` compute and time
local and strided patterns by blocks, ``tiled`` is the online-softmax loop in torch, ``flash``
FlashAttention's loop in numpy, step by step, and ``precision`` runs the model in bf16, fp16
and INT8.

This package's own namespace stays empty on purpose: ``tformer.efficiency.flash`` is numpy
only (its page imports it before torch loads) and the other modules import torch. Import the
names from their module (``from tformer.efficiency.flash import flash_attention``).
"""

from __future__ import annotations

__all__: list[str] = []
