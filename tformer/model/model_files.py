"""Reading a model folder's files as untrusted input: sizes bounded before anything is allocated.

A model folder is whatever a user copied into ``TFORMER_MODELS_DIR``: ``config.json`` may claim
any size, ``pytorch_model.bin`` may be a pickle that runs code, a tensor may have any shape. So:

1. every file's size is checked before it is read (``MAX_*_BYTES``);
2. ``config.json``'s numbers are checked against hard bounds (``MAX_VOCAB``, ``MAX_D_MODEL``...,
   ``MAX_MODEL_PARAMS``) before a config, let alone a model, is built (`tformer.model.families`);
3. weights come from safetensors, or from ``torch.load(weights_only=True)`` (memory-mapped),
   which refuses any pickle that holds more than tensors and never runs its code;
4. tensor names and shapes are read from the file's header and compared with the config before
   one tensor is loaded;
5. a file is opened only when it resolves inside its folder (`contained`): a symlink that leads
   elsewhere is refused, never followed;
6. a refusal is remembered per folder state (`Refusals`, `folder_stamp`): the next visitor is
   answered at once, and a folder whose files changed (inode, size, mtime) is read again.

Every refusal is a `ModelFolderError` (a ValueError) naming the file and the problem.
The bounds live here as named constants, for model folders and saved training runs alike
(`tformer.training.checkpoints` checks a run's config with `check_config_bounds`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch.overrides import TorchFunctionMode

from ..i18n import language, tr

if TYPE_CHECKING:
    from .config import EncoderConfig

__all__ = [
    "CONFIG_BOUNDS",
    "MAX_CONFIG_BYTES",
    "MAX_D_FF",
    "MAX_D_MODEL",
    "MAX_HEADS",
    "MAX_LAYERS",
    "MAX_MODEL_PARAMS",
    "MAX_POSITIONS",
    "MAX_TENSORS",
    "MAX_TOKENIZER_BYTES",
    "MAX_TYPE_VOCAB",
    "MAX_VOCAB",
    "MAX_WEIGHTS_BYTES",
    "ModelFolderError",
    "Refusals",
    "WeightsFile",
    "check_config_bounds",
    "check_file_size",
    "contained",
    "expected_shapes",
    "find_weights_file",
    "folder_stamp",
    "inside",
    "open_weights",
    "read_json_file",
]

# --- hard bounds (a model folder is untrusted input) --------------------------------------------
# config.json files of real models are a few kB; 1 MiB leaves room for long id2label maps.
MAX_CONFIG_BYTES = 1 * 2**20
# XLM-R's tokenizer.json, with its 250,002-piece vocabulary, is 17 MB.
MAX_TOKENIZER_BYTES = 64 * 2**20
# 400 M parameters: float32 weights of 1.6 GB, room for RoBERTa-large and GPT-2 medium (355 M)
# on a 24 GB machine that several classroom sessions share; GPT-2 large (774 M) is refused.
MAX_MODEL_PARAMS = 400_000_000
# The weights file: float32 at the bound, plus room for heads and buffers the encoder skips.
MAX_WEIGHTS_BYTES = 4 * MAX_MODEL_PARAMS + 512 * 2**20
# Per-field bounds, far above every released model of these families (XLM-R: 250,002 tokens;
# GPT-2 XL: 1600 wide, 48 layers, 25 heads, 1024 positions) and small enough to rule out a
# config whose product of sizes overflows memory before the parameter bound is even checked.
MAX_VOCAB = 1_000_000
MAX_D_MODEL = 8192
MAX_LAYERS = 128
MAX_HEADS = 256
MAX_D_FF = 65536
MAX_POSITIONS = 16384
MAX_TYPE_VOCAB = 1024
# Tensors listed in one weights file (BERT-base: ~200; GPT-2 XL: ~580).
MAX_TENSORS = 20_000
# The same bounds by EncoderConfig field, (least, most), for a config read as it is (a saved
# run's config.json holds EncoderConfig's fields).
CONFIG_BOUNDS: Mapping[str, tuple[int, int]] = {
    "vocab_size": (1, MAX_VOCAB),
    "d_model": (1, MAX_D_MODEL),
    "d_embed": (1, MAX_D_MODEL),
    "n_layers": (1, MAX_LAYERS),
    "n_heads": (1, MAX_HEADS),
    "d_ff": (1, MAX_D_FF),
    "max_len": (1, MAX_POSITIONS),
    "type_vocab_size": (0, MAX_TYPE_VOCAB),
    "n_outputs": (0, MAX_VOCAB),
}


class ModelFolderError(ValueError):
    """A model folder cannot be loaded; the message names the file and the problem."""


def check_file_size(path: Path, limit: int, what: str) -> int:
    """The size of ``path`` in bytes; ModelFolderError when it is missing, empty or over ``limit``."""
    if not path.is_file():
        raise ModelFolderError(tr("missing file {path}", path=path))
    size = path.stat().st_size
    if size == 0:
        raise ModelFolderError(tr("{path} is empty", path=path))
    if size > limit:
        raise ModelFolderError(
            tr(
                "{path} is {size:.1f} MB, over the {limit:.0f} MB allowed for {what}",
                path=path,
                size=size / 2**20,
                limit=limit / 2**20,
                what=what,
            )
        )
    return size


def read_json_file(path: Path, limit: int = MAX_CONFIG_BYTES) -> dict[str, Any]:
    """A JSON object from ``path``, its size checked first."""
    check_file_size(path, limit, tr("a JSON file"))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    # ValueError: bad JSON, bad UTF-8, or an integer of over 4,300 digits (Python's limit)
    except (ValueError, RecursionError) as exc:
        raise ModelFolderError(tr("{path} is not valid JSON: {err}", path=path, err=exc)) from exc
    if not isinstance(data, dict):
        raise ModelFolderError(
            tr("{path} must hold a JSON object, found {kind}", path=path, kind=type(data).__name__)
        )
    return data


def find_weights_file(folder: Path) -> Path:
    """``model.safetensors``, else ``pytorch_model.bin``; ModelFolderError naming both if neither."""
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (folder / name).is_file():
            return folder / name
    if (folder / "model.safetensors.index.json").is_file() or (
        folder / "pytorch_model.bin.index.json"
    ).is_file():
        raise ModelFolderError(
            tr(
                "{folder} holds weights split into shards, which are not supported: save it as one file",
                folder=folder,
            )
        )
    raise ModelFolderError(
        tr("{folder} has no weights: expected model.safetensors or pytorch_model.bin", folder=folder)
    )


class WeightsFile:
    """An open weights file: tensor names and shapes without loading, then tensors one by one.

    Use `open_weights`. ``shapes`` comes from the safetensors header, or from a memory-mapped
    ``torch.load(weights_only=True)`` (no tensor data is read until a tensor is used).
    """

    def __init__(
        self, path: Path, shapes: Mapping[str, tuple[int, ...]], getter: Callable[[str], torch.Tensor]
    ) -> None:
        self.path = path
        self.shapes = dict(shapes)
        self._get = getter

    def tensor(self, name: str) -> torch.Tensor:
        """Tensor ``name`` as float32 on the CPU (floating-point tensors only)."""
        try:
            t = self._get(name)
        except Exception as exc:  # a truncated file fails only when the tensor is read
            raise ModelFolderError(
                tr(
                    "{path} cannot be read (corrupt or not a weights file): `{kind}: {err}`",
                    path=self.path,
                    kind=type(exc).__name__,
                    err=exc,
                )
            ) from exc
        if not t.is_floating_point():
            raise ModelFolderError(
                tr(
                    "{path}: tensor {name} has dtype {dtype}, not floating point",
                    path=self.path,
                    name=repr(name),
                    dtype=t.dtype,
                )
            )
        return t.to(torch.float32)


@contextmanager
def open_weights(path: Path) -> Iterator[WeightsFile]:
    """Open ``path`` (safetensors or a weights-only pickle) for `WeightsFile` reads."""
    check_file_size(path, MAX_WEIGHTS_BYTES, tr("a weights file"))
    if path.suffix == ".safetensors":
        with _open_safetensors(path) as weights:
            yield weights
    else:
        yield _open_pickle(path)


def _unreadable(path: Path, exc: BaseException) -> ModelFolderError:
    return ModelFolderError(
        tr(
            "{path} cannot be read (corrupt or not a weights file): `{kind}: {err}`",
            path=path,
            kind=type(exc).__name__,
            err=exc,
        )
    )


@contextmanager
def _open_safetensors(path: Path) -> Iterator[WeightsFile]:
    from safetensors import safe_open

    try:
        handle = safe_open(str(path), framework="pt", device="cpu")
    except Exception as exc:  # the library raises its own SafetensorError, OSError, ...
        raise _unreadable(path, exc) from exc
    with handle as f:
        names = list(f.keys())
        _check_count(path, len(names))
        try:
            shapes = {name: tuple(int(n) for n in f.get_slice(name).get_shape()) for name in names}
        except Exception as exc:
            raise _unreadable(path, exc) from exc
        yield WeightsFile(path, shapes, f.get_tensor)


# torch's refusal names what the pickle asked for ("Unsupported global: GLOBAL os.system ...").
_REFUSED = re.compile(r"WeightsUnpickler error: ([^\n]*?)(?: was not an allowed global|\. |\n|$)")


def _load_pickle(path: Path) -> Any:
    # weights_only=True: the unpickler accepts tensors and plain containers only, and never calls
    # what a pickle names. mmap=True: tensor data stays on disk until it is used; files in the
    # pre-2020 format cannot be mapped and are read whole (their size is already bounded).
    try:
        return torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except RuntimeError as exc:
        if "mmap can only be used" not in str(exc):
            raise
    return torch.load(path, map_location="cpu", weights_only=True)


def _open_pickle(path: Path) -> WeightsFile:
    try:
        state = _load_pickle(path)
    except pickle.UnpicklingError as exc:
        found = _REFUSED.search(str(exc))
        raise ModelFolderError(
            tr(
                "{path} is a pickle that holds more than tensors ({what}), so it was not loaded and "
                "none of its code ran. Save the weights with safetensors, or as a plain dict of tensors",
                path=path,
                what=found.group(1).strip() if found else type(exc).__name__,
            )
        ) from exc
    except Exception as exc:  # zip errors, truncated files
        raise _unreadable(path, exc) from exc
    if not isinstance(state, Mapping) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        raise ModelFolderError(tr("{path} does not hold a flat mapping of names to tensors", path=path))
    _check_count(path, len(state))
    return WeightsFile(path, {k: tuple(v.shape) for k, v in state.items()}, state.__getitem__)


def _check_count(path: Path, n: int) -> None:
    if n > MAX_TENSORS:
        raise ModelFolderError(
            tr("{path} lists {n} tensors, more than the {limit} allowed", path=path, n=n, limit=MAX_TENSORS)
        )


# --- a config read as it is ----------------------------------------------------------------------


def check_config_bounds(cfg: EncoderConfig, source: str | Path) -> None:
    """Refuse ``cfg`` when a size is outside `CONFIG_BOUNDS` or the model it describes (its
    parameters and a sinusoid table) passes MAX_MODEL_PARAMS; nothing is allocated."""
    for key, (lo, hi) in CONFIG_BOUNDS.items():
        value = getattr(cfg, key, None)
        if value is not None and not lo <= value <= hi:
            raise ModelFolderError(
                tr(
                    "{source}: {key}={value} must be an integer from {lo} to {hi}",
                    source=source,
                    key=key,
                    value=repr(value),
                    lo=lo,
                    hi=hi,
                )
            )
    # The sinusoid table is a buffer, not a parameter, but it takes memory all the same.
    n = cfg.n_params() + (cfg.max_len * cfg.d_embed_size if cfg.pos_encoding == "sinusoidal" else 0)
    if n > MAX_MODEL_PARAMS:
        raise ModelFolderError(
            tr(
                "{source} describes {n:.0f} M parameters, over the {limit:.0f} M this app loads",
                source=source,
                n=n / 1e6,
                limit=MAX_MODEL_PARAMS / 1e6,
            )
        )


def expected_shapes(cfg: EncoderConfig) -> dict[str, tuple[int, ...]]:
    """Our state dict's shapes for ``cfg``, from a model on the meta device (no memory), its
    parameters left uninitialised (`NoInit`). Call it once the config's sizes are bounded."""
    from .encoder import Encoder

    # The sinusoidal table is derived from the config and not saved: without it the state dict
    # is the same, and computing it on the meta device would run those reference kernels too.
    plain = dataclasses.replace(cfg, pos_encoding="none") if cfg.pos_encoding == "sinusoidal" else cfg
    with torch.device("meta"), NoInit():
        meta = Encoder(plain, init_weights=False)
    return {name: tuple(t.shape) for name, t in meta.state_dict().items()}


class NoInit(TorchFunctionMode):
    """torch.nn.init's in-place initialisers do nothing under it (in this thread only, as every
    torch function mode does): for a model whose parameters are about to be overwritten, or
    whose shapes alone are read. Every module initialises its parameters in its constructor:
    random numbers the checkpoint then replaces, and on the meta device torch runs the
    initialisers through its Python reference kernels, whose first call imports torch._dynamo
    (most of a second of a fresh server's first page: docs/performance.md)."""

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        if func in _INITIALISERS:
            return args[0] if args else (kwargs or {}).get("tensor")
        return func(*args, **(kwargs or {}))


_INITIALISERS = frozenset(
    getattr(torch.nn.init, name)
    for name in dir(torch.nn.init)
    if name.endswith("_") and not name.startswith("_") and callable(getattr(torch.nn.init, name))
)


# --- files inside their folder ---------------------------------------------------------------------


def inside(path: Path, root: Path) -> bool:
    """True when ``path`` resolves (symlinks followed) to ``root`` itself or below it."""
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # a symlink loop
        return False


def contained(folder: Path, name: str) -> Path:
    """``folder / name``, refused (without being opened) when it resolves outside ``folder``:
    a symlink to a file elsewhere is never followed."""
    path = folder / name
    if not inside(path, folder):
        try:
            target = str(path.resolve())
        except (OSError, RuntimeError):
            target = "?"
        raise ModelFolderError(
            tr(
                "{path} points outside its folder ({target}): a model folder's files are never followed "
                "elsewhere; copy the file into the folder",
                path=path,
                target=target,
            )
        )
    return path


# --- refusals, remembered -------------------------------------------------------------------------


def folder_stamp(folder: Path, names: Iterable[str]) -> tuple[Any, ...]:
    """What changes when anyone edits the folder: for the folder and each named file, the
    inode, size and modification time of the entry itself (repointing a symlink counts) and
    of what it leads to (editing a symlink's target counts)."""
    stamp: list[Any] = []
    for path in (folder, *(folder / n for n in names)):
        for follow in (False, True):
            try:
                st = os.stat(path, follow_symlinks=follow)
                stamp.append((path.name, st.st_ino, st.st_size, st.st_mtime_ns))
            except OSError:
                stamp.append((path.name, None))
    return tuple(stamp)


class Refusals:
    """Refusals remembered per (folder, language) and folder state (`folder_stamp`): a folder
    that was refused is refused again at once, until one of its files changes. Thread-safe:
    every browser session of the app asks the same one."""

    def __init__(self, max_entries: int = 256) -> None:
        self._lock = threading.Lock()
        self._seen: OrderedDict[tuple[str, str], tuple[tuple[Any, ...], str]] = OrderedDict()
        self.max_entries = max_entries

    def check(self, folder: Path, stamp: tuple[Any, ...], error: type[ValueError] = ModelFolderError) -> None:
        """Raise ``error`` with the remembered message when this folder state was refused."""
        with self._lock:
            found = self._seen.get((str(folder), language()))
        if found is not None and found[0] == stamp:
            raise error(found[1])

    def remember(self, folder: Path, stamp: tuple[Any, ...], message: str) -> None:
        key = (str(folder), language())
        with self._lock:
            self._seen[key] = (stamp, message)
            self._seen.move_to_end(key)
            while len(self._seen) > self.max_entries:
                self._seen.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()
