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

import numpy as np
import torch
from torch import nn

HookFn = Callable[[torch.Tensor, "HookPoint"], "torch.Tensor | None"]

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

    def extra_repr(self) -> str:
        return self.name


# Short names, as TransformerLens's utils.get_act_name understands them.
_BLOCK_ACTS = {
    "resid_pre": "blocks.{}.hook_resid_pre",
    "attn_out": "blocks.{}.hook_attn_out",
    "resid_mid": "blocks.{}.hook_resid_mid",
    "mlp_out": "blocks.{}.hook_mlp_out",
    "resid_post": "blocks.{}.hook_resid_post",
    "q": "blocks.{}.attn.hook_q",
    "k": "blocks.{}.attn.hook_k",
    "v": "blocks.{}.attn.hook_v",
    "attn_scores": "blocks.{}.attn.hook_attn_scores",
    "scores": "blocks.{}.attn.hook_attn_scores",
    "pattern": "blocks.{}.attn.hook_pattern",
    "attn": "blocks.{}.attn.hook_pattern",
    "z": "blocks.{}.attn.hook_z",
    "pre": "blocks.{}.mlp.hook_pre",
    "post": "blocks.{}.mlp.hook_post",
}


def act_name(name: str, layer: int | None = None) -> str:
    """``act_name("pattern", 0) == "blocks.0.attn.hook_pattern"``; full names pass through."""
    if "." in name or name.startswith("hook_"):
        return name
    if name in _BLOCK_ACTS:
        if layer is None:
            raise ValueError(f"{name!r} is a per-layer activation: give a layer, e.g. ({name!r}, 0)")
        return _BLOCK_ACTS[name].format(layer)
    return f"hook_{name}"


class ActivationCache(Mapping[str, torch.Tensor]):
    """What one `run_with_cache` captured: full hook name -> tensor, plus short-name lookup."""

    def __init__(self, store: dict[str, torch.Tensor]) -> None:
        self._store = store

    def _resolve(self, key: str | tuple) -> str:
        if isinstance(key, tuple):
            return act_name(*key)
        return act_name(key)

    def __getitem__(self, key: str | tuple) -> torch.Tensor:
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

    def numpy(self, key: str | tuple) -> np.ndarray:
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

    def run_with_hooks(self, *args, fwd_hooks: Iterable[tuple] = (), **kwargs):
        """Forward pass with ``fn(tensor, hook)`` run at each named point; a returned tensor
        replaces the activation. No hook outlives the call, also when ``fn`` raises."""
        with torch.inference_mode(), self.hooks(fwd_hooks):
            return self(*args, **kwargs)

    def run_with_cache(
        self,
        *args,
        names_filter: str | Sequence[str] | Callable[[str], bool] | None = None,
        device: str | torch.device | None = None,
        **kwargs,
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
