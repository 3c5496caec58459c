"""Named capture points, with TransformerLens's names, safe for one model shared by many threads.

A `HookPoint` is an identity module placed inline wherever a tensor is worth seeing:
``pattern = self.hook_pattern(pattern)``. Its name comes from the module tree
(``blocks.0.attn.hook_pattern``) and is set once, when the model is built.

Which functions run at a hook point is *not* stored on the model. It lives in a `ContextVar`
that `hooks()` sets for the duration of one run and resets in ``finally``. Every thread starts
with its own empty context, so two browser sessions calling `run_with_cache` on the same cached
model at once each see only their own hooks, and nothing is left behind after an exception.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

HookFn = Callable[[torch.Tensor, "HookPoint"], "torch.Tensor | None"]
# How an ActivationCache is read: a full or short name, or (short name, layer): ``cache["v", 0]``.
CacheKey = str | tuple[str, int]

# name -> functions to run there, for the run in progress on this thread (None: no run is hooked).
_ACTIVE: ContextVar[Mapping[str, tuple[HookFn, ...]] | None] = ContextVar(
    "tformer_active_hooks", default=None
)


def capturing() -> bool:
    """True inside a hooked run. Attention then takes its explicit path so every step is seen."""
    return _ACTIVE.get() is not None


class HookPoint(nn.Module):
    """Identity on the tensor that flows through it, unless the current run hooks its name."""

    def __init__(self) -> None:
        super().__init__()
        self.name = ""  # set by HookedRootModule.setup_hooks() from the module tree

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        active = _ACTIVE.get()
        if active is None:
            return x
        for fn in active.get(self.name, ()):
            out = fn(x, self)
            if out is not None:  # a hook may return a replacement (ablation, patching)
                x = out
        return x

    @property
    def hooked(self) -> bool:
        """True when the run in progress on this thread has a function at this point."""
        active = _ACTIVE.get()
        return active is not None and self.name in active

    def extra_repr(self) -> str:
        return self.name

    if TYPE_CHECKING:
        # nn.Module's __call__ returns Any; calling a hook point runs `forward`, tensor in, tensor out.
        def __call__(self, x: torch.Tensor) -> torch.Tensor: ...


@dataclass(frozen=True)
class Act:
    """One capturable activation: its full hook name and its axes (batch dropped).

    ``template`` holds ``{layer}`` for the activations every block has. ``dims`` use the one
    shape vocabulary of the code, docstrings and figures.
    """

    template: str
    dims: tuple[str, ...]

    @property
    def per_layer(self) -> bool:
        return "{layer}" in self.template


_RESID = ("pos", "d_model")
# The embeddings' width: d_model, except where they are factorized and projected up (ELECTRA).
_EMBED = ("pos", "d_embed")
_HEADS = ("pos", "head_index", "d_head")
_SQUARE = ("head_index", "query_pos", "key_pos")
_SCALE = ("pos", "1")

# Every short name, in the order a forward pass reaches it. The short name is also the capture
# field, the figure argument and the state key; full names follow TransformerLens.
ACTS: dict[str, Act] = {
    "embed": Act("hook_embed", _EMBED),
    "pos_embed": Act("hook_pos_embed", _EMBED),
    "token_type_embed": Act("hook_token_type_embed", _EMBED),
    "embed_ln_scale": Act("embed_ln.hook_scale", _SCALE),
    "embed_ln_normalized": Act("embed_ln.hook_normalized", _EMBED),
    "resid_pre": Act("blocks.{layer}.hook_resid_pre", _RESID),
    "q": Act("blocks.{layer}.attn.hook_q", _HEADS),
    "k": Act("blocks.{layer}.attn.hook_k", _HEADS),
    "v": Act("blocks.{layer}.attn.hook_v", _HEADS),
    "attn_scores": Act("blocks.{layer}.attn.hook_attn_scores", _SQUARE),
    "pattern": Act("blocks.{layer}.attn.hook_pattern", _SQUARE),
    "z": Act("blocks.{layer}.attn.hook_z", _HEADS),
    "attn_out": Act("blocks.{layer}.hook_attn_out", _RESID),
    "ln1_scale": Act("blocks.{layer}.ln1.hook_scale", _SCALE),
    "ln1_normalized": Act("blocks.{layer}.ln1.hook_normalized", _RESID),
    "resid_mid": Act("blocks.{layer}.hook_resid_mid", _RESID),
    "mlp_pre": Act("blocks.{layer}.mlp.hook_pre", ("pos", "d_mlp")),
    "mlp_post": Act("blocks.{layer}.mlp.hook_post", ("pos", "d_mlp")),
    "mlp_out": Act("blocks.{layer}.hook_mlp_out", _RESID),
    "ln2_scale": Act("blocks.{layer}.ln2.hook_scale", _SCALE),
    "ln2_normalized": Act("blocks.{layer}.ln2.hook_normalized", _RESID),
    "resid_post": Act("blocks.{layer}.hook_resid_post", _RESID),
    "ln_final_scale": Act("ln_final.hook_scale", _SCALE),
    "ln_final_normalized": Act("ln_final.hook_normalized", _RESID),
    "logits": Act("hook_logits", ("pos", "n_outputs")),
}


def act_name(name: str, layer: int | None = None) -> str:
    """The full hook name of a short name: ``act_name("pattern", 0) == "blocks.0.attn.hook_pattern"``.

    Full names pass through unchanged. The one place where hook names are built.
    """
    if name not in ACTS:
        if "." in name or name.startswith("hook_"):
            return name
        near = difflib.get_close_matches(name, ACTS, n=3)
        raise ValueError(f"no activation named {name!r}" + (f"; did you mean {near}?" if near else ""))
    act = ACTS[name]
    if act.per_layer:
        if layer is None:
            raise ValueError(f"{name!r} is a per-layer activation: give a layer, e.g. ({name!r}, 0)")
        return act.template.format(layer=layer)
    if layer is not None:
        raise ValueError(f"{name!r} is not per layer: give no layer")
    return act.template


def act_shape(name: str, sizes: Mapping[str, int]) -> tuple[int, ...]:
    """Shape of one activation (batch dropped, one layer) from the sizes of its axes.

    ``sizes`` maps axis names (``pos``, ``d_model``, ``head_index``, ``d_head``, ``d_mlp``,
    ``n_outputs``, ``d_embed``) to lengths; ``query_pos`` and ``key_pos`` take ``pos``, and
    ``d_embed`` takes ``d_model`` when it is not given.
    """
    alias = {"query_pos": "pos", "key_pos": "pos"}
    if "d_embed" not in sizes:
        alias["d_embed"] = "d_model"
    return tuple(1 if d == "1" else int(sizes[alias.get(d, d)]) for d in ACTS[name].dims)


class ActivationCache(Mapping[str, torch.Tensor]):
    """What one `run_with_cache` captured: full hook name -> tensor, plus short-name lookup."""

    def __init__(self, store: dict[str, torch.Tensor]) -> None:
        self._store = store

    def _resolve(self, key: CacheKey) -> str:
        if isinstance(key, tuple):
            return act_name(*key)
        return act_name(key)

    def __getitem__(self, key: CacheKey) -> torch.Tensor:
        name = self._resolve(key)
        try:
            return self._store[name]
        except KeyError:
            near = difflib.get_close_matches(name, self._store, n=3)
            hint = f"; did you mean {near}?" if near else ""
            raise KeyError(f"{name!r} was not captured{hint}") from None

    def __contains__(self, key: object) -> bool:
        try:
            return self._resolve(key) in self._store  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return False

    def __iter__(self) -> Iterator[str]:
        return iter(self._store)

    def __len__(self) -> int:
        return len(self._store)

    def numpy(self, key: CacheKey) -> np.ndarray:
        """The tensor as a float32 numpy array on the CPU, ready for plotting."""
        return self[key].detach().to("cpu", torch.float32).numpy()

    def to(self, device: str | torch.device) -> ActivationCache:
        return ActivationCache({k: v.to(device) for k, v in self._store.items()})

    def __repr__(self) -> str:
        return f"ActivationCache({len(self)} tensors: {list(self._store)[:4]}...)"


class HookedRootModule(nn.Module):
    """Base of a model whose HookPoints are named from its module tree.

    Subclasses call `setup_hooks()` at the end of ``__init__``.
    """

    hook_points: dict[str, HookPoint]

    def setup_hooks(self) -> None:
        points = {}
        for name, module in self.named_modules():
            if isinstance(module, HookPoint):
                module.name = name
                points[name] = module
        # A plain dict, not registered as submodules twice: hook_points is a lookup table.
        object.__setattr__(self, "hook_points", points)

    def hook_names(self) -> list[str]:
        return list(self.hook_points)

    def _select(self, names_filter: str | Sequence[str] | Callable[[str], bool] | None) -> list[str]:
        if names_filter is None:
            return self.hook_names()
        if callable(names_filter):
            return [n for n in self.hook_points if names_filter(n)]
        wanted = [names_filter] if isinstance(names_filter, str) else list(names_filter)
        for name in wanted:
            self._check_name(name)
        return wanted

    def _check_name(self, name: str) -> None:
        if name not in self.hook_points:
            near = difflib.get_close_matches(name, self.hook_points, n=3)
            hint = f"; did you mean {near}?" if near else ""
            raise ValueError(f"no hook point named {name!r}{hint}")

    @contextmanager
    def hooks(self, fwd_hooks: Iterable[tuple[str | Callable[[str], bool], HookFn]]) -> Iterator[None]:
        """Run the given hooks during the ``with`` body, on this thread only.

        A name may be a filter function over names. Nested contexts do not merge: the inner
        run sees exactly its own hooks, and the outer ones come back when it ends.
        """
        table: dict[str, list[HookFn]] = {}
        for name, fn in fwd_hooks:
            names = [n for n in self.hook_points if name(n)] if callable(name) else [name]
            for n in names:
                self._check_name(n)
                table.setdefault(n, []).append(fn)
        token = _ACTIVE.set({n: tuple(fns) for n, fns in table.items()})
        try:
            yield
        finally:
            _ACTIVE.reset(token)

    def run_with_hooks(
        self, *args: Any, fwd_hooks: Iterable[tuple[str | Callable[[str], bool], HookFn]] = (), **kwargs: Any
    ) -> torch.Tensor:
        """Forward pass with ``fn(tensor, hook)`` run at each named point; a returned tensor
        replaces the activation. No hook outlives the call, also when ``fn`` raises."""
        with torch.inference_mode(), self.hooks(fwd_hooks):
            out: torch.Tensor = self(*args, **kwargs)
        return out

    def run_with_cache(
        self,
        *args: Any,
        names_filter: str | Sequence[str] | Callable[[str], bool] | None = None,
        device: str | torch.device | None = None,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, ActivationCache]:
        """Forward pass that returns ``(output, cache)`` with every selected activation.

        ``device="cpu"`` moves captured tensors to the CPU (for plotting from a GPU model).
        """
        store: dict[str, torch.Tensor] = {}

        def save(tensor: torch.Tensor, hook: HookPoint) -> None:
            store[hook.name] = tensor if device is None else tensor.to(device)

        with torch.inference_mode(), self.hooks((n, save) for n in self._select(names_filter)):
            out = self(*args, **kwargs)
        return out, ActivationCache(store)
