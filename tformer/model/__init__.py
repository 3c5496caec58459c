"""The model: the encoder of "Attention Is All You Need" and what reads it, the first chapter of
the lesson. Its config, hooks (the TransformerLens names every capture reads), attention,
LayerNorm, positions, the encoder itself, the tokenizers, the pretrained and local model
folders, the capture of a text's activations, interventions (ablation, positions off) and the
LM head's predictions.

This package's own namespace stays empty on purpose: most of these modules import torch, and
``tformer.model.config`` must not (the app's view state reads its choices before torch loads). The public
names are re-exported by ``tformer`` itself (``tformer.Encoder``, ``tformer.capture_text``,
...), or import them from their module (``from tformer.model.capture import TextCapture``).
"""

from __future__ import annotations

__all__: list[str] = []
