r"""The Transformer encoder: embeddings + positions -> N blocks -> (optional) Linear -> softmax.

Each block, post-norm as in the paper:
:math:`x' = \mathrm{LayerNorm}(x + \mathrm{MultiHead}(x))`,
:math:`x'' = \mathrm{LayerNorm}(x' + \mathrm{FFN}(x'))`,
with :math:`\mathrm{FFN}(x) = \max(0, xW_1 + b_1)W_2 + b_2`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .activations import activation_fn
from .attention import MultiHeadAttention
from .config import EncoderConfig
from .heads import LMHead
from .hooks import HookedRootModule, HookPoint
from .layernorm import LayerNorm
from .positional import sinusoidal_encoding

# Token ids as a model takes them: [batch, pos] or [pos], a tensor or nested lists of ints.
Ids = torch.Tensor | Sequence[int] | Sequence[Sequence[int]]
# An extra attention mask, True (or 1) where query_pos may attend to key_pos:
# [query_pos, key_pos] for every text of the batch, or [batch, query_pos, key_pos].
AttnMask = torch.Tensor | np.ndarray | Sequence[Sequence[bool]] | Sequence[Sequence[Sequence[bool]]]


class MLP(nn.Module):
    r""":math:`\mathrm{FFN}(x) = \mathrm{act}(xW_1 + b_1)W_2 + b_2`, act = max(0, .) or a GELU."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_model, cfg.d_mlp)  # W_1, b_1
        self.fc2 = nn.Linear(cfg.d_mlp, cfg.d_model)  # W_2, b_2
        self.act = activation_fn(cfg.activation)  # relu, gelu (erf, as BERT) or gelu_tanh (GPT-2)
        self.hook_pre = HookPoint()  # [batch, pos, d_mlp]
        self.hook_post = HookPoint()  # [batch, pos, d_mlp]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pre = self.hook_pre(self.fc1(x))  # [batch, pos, d_mlp]
        post = self.hook_post(self.act(pre))  # [batch, pos, d_mlp]
        out: torch.Tensor = self.fc2(post)  # [batch, pos, d_model]
        return out


class EncoderBlock(nn.Module):
    """Self-attention then FFN, each wrapped in a residual connection and a LayerNorm."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        # Declared in the order the forward pass reaches them, so hook names list in that order.
        self.hook_resid_pre = HookPoint()  # [batch, pos, d_model]
        self.attn = MultiHeadAttention(cfg)
        self.hook_attn_out = HookPoint()  # [batch, pos, d_model]
        self.ln1 = LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.hook_resid_mid = HookPoint()  # [batch, pos, d_model]
        self.mlp = MLP(cfg)
        self.hook_mlp_out = HookPoint()  # [batch, pos, d_model]
        self.ln2 = LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.hook_resid_post = HookPoint()  # [batch, pos, d_model]

    def _drop(self, x: torch.Tensor) -> torch.Tensor:
        return F.dropout(x, self.cfg.dropout, self.training) if self.cfg.dropout else x

    def forward(
        self, x: torch.Tensor, attn_mask: torch.Tensor | None = None, dead_rows: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``attn_mask``: bool [batch or 1, 1, query_pos, key_pos], True where a query may attend
        (`Encoder.layer_attn_mask`), with its ``dead_rows``."""
        resid_pre = self.hook_resid_pre(x)  # [batch, pos, d_model]
        resid_post: torch.Tensor
        if self.cfg.norm == "post":  # x' = LayerNorm(x + SubLayer(x))
            attn_out = self.hook_attn_out(self.attn(resid_pre, attn_mask, dead_rows))
            resid_mid = self.hook_resid_mid(self.ln1(resid_pre + self._drop(attn_out)))
            mlp_out = self.hook_mlp_out(self.mlp(resid_mid))
            resid_post = self.hook_resid_post(self.ln2(resid_mid + self._drop(mlp_out)))
            return resid_post
        # pre-norm: x' = x + SubLayer(LayerNorm(x))
        attn_out = self.hook_attn_out(self.attn(self.ln1(resid_pre), attn_mask, dead_rows))
        resid_mid = self.hook_resid_mid(resid_pre + self._drop(attn_out))
        mlp_out = self.hook_mlp_out(self.mlp(self.ln2(resid_mid)))
        resid_post = self.hook_resid_post(resid_mid + self._drop(mlp_out))
        return resid_post


class Encoder(HookedRootModule):
    """A Transformer encoder whose every step is a named HookPoint.

    ``model(ids, attention_mask=None, token_type_ids=None, attn_mask=None)`` -> hidden states
    [batch, pos, d_model] (or softmax probabilities [batch, pos, n_outputs] when
    ``cfg.n_outputs > 0``; ``model.logits(ids)`` gives the scores before that softmax, which is
    what training needs). ``forward``, ``logits`` and ``hidden`` take their arguments in this
    one order. Two masks, two names (as Hugging Face and PyTorch name them):

    - ``attention_mask`` [batch, key_pos]: the padding mask, 1 for a real token, 0 for padding;
    - ``attn_mask`` [query_pos, key_pos] (or [batch, query_pos, key_pos]): which keys a query may
      attend to, True (or 1) = may attend; any extra rule (a window, blocked cells).

    Both, with the causal mask, become one ``attn_mask`` per layer (`Encoder.layer_attn_mask`).
    """

    def __init__(self, cfg: EncoderConfig, *, init_weights: bool = True) -> None:
        super().__init__()
        self.cfg = cfg
        # Building nn.Linear draws from the global RNG; fork it so building a model changes
        # nothing outside. Our own weights come from a generator seeded with cfg.seed.
        self.hook_embed = HookPoint()  # [batch, pos, d_embed]
        self.hook_pos_embed = HookPoint()  # [batch, pos, d_embed]
        if cfg.type_vocab_size:
            self.hook_token_type_embed = HookPoint()  # [batch, pos, d_embed]
        e = cfg.d_embed_size  # d_model, unless the embeddings are factorized (ELECTRA)
        with torch.random.fork_rng(devices=[]):
            self.embed = nn.Embedding(cfg.vocab_size, e)
            self.pos_embed = nn.Embedding(cfg.max_len, e) if cfg.pos_encoding == "learned" else None
            self.token_type_embed = nn.Embedding(cfg.type_vocab_size, e) if cfg.type_vocab_size else None
            self.embed_ln = LayerNorm(e, eps=cfg.layer_norm_eps) if cfg.embed_norm else None
            self.embed_proj = nn.Linear(e, cfg.d_model) if e != cfg.d_model else None
            self.blocks = nn.ModuleList(EncoderBlock(cfg) for _ in range(cfg.n_layers))
            self.ln_final = LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps) if cfg.norm == "pre" else None
            self.head = nn.Linear(cfg.d_model, cfg.n_outputs) if cfg.n_outputs else None
            self.lm_head = LMHead(cfg) if cfg.lm_head != "none" else None
        if cfg.pos_encoding == "sinusoidal":
            # Derived from the config, not learned: not saved in the state dict.
            self.register_buffer("pe", sinusoidal_encoding(cfg.max_len, e), persistent=False)
        if self.head is not None:
            self.hook_logits = HookPoint()  # [batch, pos, n_outputs]
        if init_weights:
            self.init_weights()
        self.setup_hooks()

    @torch.no_grad()
    def init_weights(self) -> None:
        """Xavier-uniform matrices (as the Annotated Transformer), zero biases, N(0, 1)
        embeddings, unit LayerNorms, drawn in a fixed order from a generator seeded by cfg.seed."""
        g = torch.Generator().manual_seed(self.cfg.seed)
        for name, module in self.named_modules():
            if isinstance(module, nn.Linear):
                fan_out, fan_in = module.weight.shape
                if name.endswith("attn.qkv"):
                    fan_out = fan_in  # W_Q, W_K, W_V are three d_model x d_model maps
                bound = math.sqrt(6.0 / (fan_in + fan_out))
                fan_out = module.weight.shape[0]
                module.weight.copy_(torch.empty(fan_out, fan_in).uniform_(-bound, bound, generator=g))
                module.bias.zero_()
            elif isinstance(module, nn.Embedding):
                module.weight.copy_(torch.randn(module.weight.shape, generator=g))
            elif isinstance(module, LayerNorm):
                module.weight.fill_(1.0)
                module.bias.zero_()

    @property
    def device(self) -> torch.device:
        return self.embed.weight.device

    def _as_ids(self, ids: Ids) -> torch.Tensor:
        ids = torch.as_tensor(ids, dtype=torch.long, device=self.device)
        if ids.dim() == 1:
            ids = ids[None, :]  # [batch=1, pos]
        if ids.dim() != 2:
            raise ValueError(f"ids must be [batch, pos] or [pos], got shape {tuple(ids.shape)}")
        return ids

    def positions(self, n_pos: int) -> torch.Tensor:
        """Positional vectors for positions 0..n_pos-1: [pos, d_model] (zeros for "none"; d_embed
        wide when the embeddings are factorized)."""
        if self.cfg.pos_encoding == "sinusoidal":
            pe = self.get_buffer("pe")  # [max_len, d_model]
            return pe[:n_pos]
        if self.pos_embed is not None:
            return self.pos_embed.weight[:n_pos]
        return self.embed.weight.new_zeros(n_pos, self.cfg.d_embed_size)

    def layer_attn_mask(
        self, attention_mask: Ids | None, batch: int, n_pos: int, attn_mask: AttnMask | None = None
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """(attn_mask, dead_rows) shared by every layer, computed once per forward.

        The padding mask (``attention_mask``, [batch, key_pos]), the causal mask (cfg.causal)
        and ``attn_mask`` (bool or 0/1, [query_pos, key_pos] or [batch, query_pos, key_pos],
        True where query_pos may attend to key_pos) are ANDed: a query attends to a key only
        where all of them allow it.

        The returned attn_mask: bool [batch or 1, 1, query_pos, key_pos], True where query_pos
        may attend to key_pos; None when everything may attend. dead_rows: bool
        [batch or 1, 1, query_pos, 1] for queries with nothing to attend to (their weights and z
        are 0), or None when there are none.
        """
        mask = None
        if attention_mask is not None:
            attention_mask = torch.as_tensor(attention_mask, device=self.device)
            if attention_mask.shape != (batch, n_pos):
                raise ValueError(
                    f"attention_mask has shape {tuple(attention_mask.shape)}, ids have ({batch}, {n_pos})"
                )
            mask = attention_mask.bool()[:, None, None, :]  # [batch, 1, 1, key_pos]
            mask = mask.expand(batch, 1, n_pos, n_pos)
        if self.cfg.causal:
            future = torch.ones(n_pos, n_pos, dtype=torch.bool, device=self.device).tril()
            mask = future[None, None] if mask is None else mask & future
        if attn_mask is not None:
            extra = self._as_attn_mask(attn_mask, batch, n_pos)  # [batch or 1, 1, query_pos, key_pos]
            mask = extra if mask is None else mask & extra
        if mask is None:
            return None, None
        dead = ~mask.any(dim=-1, keepdim=True)  # [batch, 1, query_pos, 1]
        return mask, (dead if bool(dead.any()) else None)

    def _as_attn_mask(self, attn_mask: AttnMask, batch: int, n_pos: int) -> torch.Tensor:
        """``attn_mask`` as bool [batch or 1, 1, query_pos, key_pos] on the model's device."""
        if isinstance(attn_mask, torch.Tensor):
            m = attn_mask.to(self.device)
        else:
            # torch.tensor copies: a read-only numpy array (a cache key) is never shared.
            m = torch.tensor(np.asarray(attn_mask), device=self.device)
        if m.shape not in ((n_pos, n_pos), (batch, n_pos, n_pos)):
            raise ValueError(
                f"attn_mask has shape {tuple(m.shape)}; ids have ({batch}, {n_pos}), so it must be "
                f"[query_pos, key_pos] = ({n_pos}, {n_pos}) or [batch, query_pos, key_pos] = "
                f"({batch}, {n_pos}, {n_pos})"
            )
        if m.dtype != torch.bool:
            if m.is_complex() or not bool(((m == 0) | (m == 1)).all()):
                raise ValueError(
                    f"attn_mask must be bool or 0/1 (True = may attend), got {m.dtype} with other values"
                )
            m = m != 0
        return m[None, None] if m.dim() == 2 else m[:, None]

    def forward(
        self,
        ids: Ids,
        attention_mask: Ids | None = None,
        token_type_ids: Ids | None = None,
        attn_mask: AttnMask | None = None,
    ) -> torch.Tensor:
        """Hidden states [batch, pos, d_model], or the head's softmax probabilities
        [batch, pos, n_outputs] when ``cfg.n_outputs > 0`` (see `Encoder.logits` for training)."""
        if self.head is None:
            return self.hidden(ids, attention_mask, token_type_ids, attn_mask)  # [batch, pos, d_model]
        logits = self.logits(ids, attention_mask, token_type_ids, attn_mask)
        return torch.softmax(logits, dim=-1)  # [batch, pos, n_outputs]

    def logits(
        self,
        ids: Ids,
        attention_mask: Ids | None = None,
        token_type_ids: Ids | None = None,
        attn_mask: AttnMask | None = None,
    ) -> torch.Tensor:
        r"""The output head's scores before the softmax: [batch, pos, n_outputs].

        .. math::
            \mathrm{logits} = hW_{out} + b_{out},\qquad
            \mathrm{forward}(x) = \mathrm{softmax}(\mathrm{logits})

        Training takes these: ``F.cross_entropy`` applies its own log-softmax, stably. The same
        ``hook_logits`` point fires as in `forward`. ValueError when the model has no head.
        """
        if self.head is None:
            raise ValueError("this model has no output head (n_outputs=0): it has no logits")
        x = self.hidden(ids, attention_mask, token_type_ids, attn_mask)  # [batch, pos, d_model]
        logits: torch.Tensor = self.hook_logits(self.head(x))  # [batch, pos, n_outputs]
        return logits

    def hidden(
        self,
        ids: Ids,
        attention_mask: Ids | None = None,
        token_type_ids: Ids | None = None,
        attn_mask: AttnMask | None = None,
    ) -> torch.Tensor:
        """The body both `forward` and `logits` run: embeddings + positions -> blocks -> the
        final LayerNorm (pre-norm). Returns the last hidden state [batch, pos, d_model]."""
        ids = self._as_ids(ids)
        B, T = ids.shape
        if T > self.cfg.max_len:
            raise ValueError(f"{T} tokens exceed max_len={self.cfg.max_len} of this model")
        if T == 0:
            raise ValueError("ids are empty: a sequence needs at least one token")
        x: torch.Tensor = self.hook_embed(self.embed(ids))  # [batch, pos, d_embed]
        pos = self.hook_pos_embed(self.positions(T).expand(B, T, -1))  # [batch, pos, d_embed]
        x = x + pos
        if self.token_type_embed is not None:
            tt = torch.zeros_like(ids) if token_type_ids is None else self._as_ids(token_type_ids)
            x = x + self.hook_token_type_embed(self.token_type_embed(tt))
        if self.embed_ln is not None:
            x = self.embed_ln(x)
        if self.embed_proj is not None:
            x = self.embed_proj(x)  # [batch, pos, d_embed] -> [batch, pos, d_model]
        if self.cfg.dropout:
            x = F.dropout(x, self.cfg.dropout, self.training)
        layer_mask, dead_rows = self.layer_attn_mask(attention_mask, B, T, attn_mask)
        for block in self.blocks:
            x = block(x, layer_mask, dead_rows)  # [batch, pos, d_model]
        if self.ln_final is not None:
            x = self.ln_final(x)
        return x


@torch.no_grad()
def unscaled_as_scaled(model: Encoder) -> Encoder:
    r"""The same function as ``model`` in the paper's form, for a model built with
    ``cfg.scaled=False`` (scores :math:`q\cdot k`, no division by :math:`\sqrt{d_{head}}`).

    .. math::
        \frac{(\sqrt{d_{head}}\,q)\cdot k}{\sqrt{d_{head}}} = q\cdot k

    so W_Q and its bias multiplied by :math:`\sqrt{d_{head}}` give the same scores, patterns and
    outputs in a model that divides by :math:`\sqrt{d_{head}}` as every page's formula does (its
    q is the trained q times :math:`\sqrt{d_{head}}`). A scaled model is returned as it is; the
    new one is on the same device, in the same train or eval mode.
    """
    if model.cfg.scaled:
        return model
    folded = Encoder(replace(model.cfg, scaled=True), init_weights=False).to(model.device)
    state = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    d, factor = model.cfg.d_model, math.sqrt(model.cfg.d_head)
    for i in range(model.cfg.n_layers):
        state[f"blocks.{i}.attn.qkv.weight"][:d] *= factor  # rows 0..d_model-1 are W_Q
        state[f"blocks.{i}.attn.qkv.bias"][:d] *= factor
    folded.load_state_dict(state)
    return folded.train(model.training)
