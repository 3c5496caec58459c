"""The Linear -> Softmax -> Output page's view: the model's output head, predictions and greedy
generation cached (`compute`), and the page's parts drawn (`draw`)."""

from __future__ import annotations

from .compute import HeadInfo, head_info
from .draw import greedy_generation, no_head, top_tokens

__all__ = ["HeadInfo", "greedy_generation", "head_info", "no_head", "top_tokens"]
