"""What a model folder on disk may ask for, checked before anything is allocated.

A saved run (`tformer.checkpoints`) and a local BERT folder (`tformer.pretrained`) are files
people can edit: their ``config.json`` says how large the model is, and building an `Encoder`
from it allocates what it says. One edited number (``"max_len": 2147483648``) is 16 GB of
sinusoid table before any weight is read. So every loader here:

1. reads each JSON file only when its size is under a bound (`read_json`);
2. checks the config against `CONFIG_BOUNDS` and `MAX_LOAD_PARAMS` (`check_config`);
3. reads the weights' header only (safetensors' header, or a pickle's tensor records on the
   meta device) and compares every name and shape with those the config calls for
   (`header_tensors`, `state_shapes`): no tensor data is read or allocated until both agree;
4. opens a file only when it resolves inside its folder (`contained`): a symlink pointing
   elsewhere is refused, never followed;
5. remembers a refusal per folder state (`Refusals`): the next visitor gets it at once, and a
   folder whose files changed (mtime, size) is read again.

Every bound is stated here, once; the refusals name the file and the field.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import torch

from .config import EncoderConfig
from .i18n import language, tr

__all__ = [
    "CONFIG_BOUNDS",
    "MAX_CONFIG_BYTES",
    "MAX_LOAD_PARAMS",
    "MAX_RUN_JSON_BYTES",
    "MAX_TOKENIZER_BYTES",
    "Refusals",
    "check_config",
    "check_file_size",
    "contained",
    "folder_stamp",
    "header_tensors",
    "inside",
    "read_json",
    "state_shapes",
]

# Hard bounds of every size a config file gives: (least, most), in EncoderConfig's names.
CONFIG_BOUNDS: Mapping[str, tuple[int, int]] = {
    "vocab_size": (1, 262_144),  # the largest multilingual vocabularies (XLM-R: 250,002) fit
    "d_model": (2, 4_096),
    "n_layers": (1, 64),  # the app's layer picker goes up to 63
    "n_heads": (1, 64),  # and its head picker too
    "d_ff": (1, 16_384),
    "max_len": (1, 8_192),  # a text is cut to max_len tokens; 8,192 is past every capture bound
    "type_vocab_size": (0, 16),  # BERT uses 2
    "n_outputs": (0, 262_144),
}
# The whole model: BERT-large (335 M) fits; at float32 this is 1.6 GB of weights.
MAX_LOAD_PARAMS = 400_000_000
MAX_CONFIG_BYTES = 1 * 2**20  # a config.json is a few hundred bytes
MAX_RUN_JSON_BYTES = 16 * 2**20  # run.json holds the training history
MAX_TOKENIZER_BYTES = 64 * 2**20  # multilingual tokenizer.json files are ~10-20 MB

_DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}

Error = Callable[[str], Exception]


# --- files --------------------------------------------------------------------------------------


def inside(path: Path, root: Path) -> bool:
    """True when ``path`` resolves (symlinks followed) to ``root`` itself or below it."""
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # a symlink loop
        return False


def contained(folder: Path, name: str, error: Error = ValueError) -> Path:
    """``folder / name`` when it is a regular file that resolves inside ``folder``.

    A missing file raises ``error`` naming it; a symlink that leads outside the folder is
    refused without being opened."""
    path = folder / name
    if not inside(path, folder):
        raise error(
            tr(
                "{path} points outside its folder ({target}): a model folder's files are never followed "
                "elsewhere; copy the file into the folder",
                path=path,
                target=_target(path),
            )
        )
    if not path.is_file():
        raise error(tr("missing file {path}", path=path))
    return path


def _target(path: Path) -> str:
    try:
        return str(path.resolve())
    except (OSError, RuntimeError):
        return "?"


def check_file_size(path: Path, most: int, error: Error = ValueError) -> int:
    """The size of ``path`` in bytes; ``error`` when it is over ``most`` (before reading it)."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise error(tr("cannot read {path}: {error}", path=path, error=exc)) from exc
    if size > most:
        raise error(
            tr(
                "{path} is {size:.1f} MB; a file of this kind is at most {most:.1f} MB here",
                path=path,
                size=size / 2**20,
                most=most / 2**20,
            )
        )
    return size


def read_json(path: Path, most: int, error: Error = ValueError) -> dict[str, Any]:
    """A JSON object from ``path``, read only when the file is at most ``most`` bytes."""
    check_file_size(path, most, error)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise error(tr("{path} is not valid JSON: {error}", path=path, error=exc)) from exc
    except (OSError, RecursionError) as exc:
        raise error(tr("cannot read {path}: {error}", path=path, error=exc)) from exc
    if not isinstance(data, dict):
        raise error(tr("{path} must hold a JSON object, found {kind}", path=path, kind=type(data).__name__))
    return data


# --- the config -----------------------------------------------------------------------------------


def check_config(
    cfg: EncoderConfig,
    source: Path | str,
    *,
    names: Mapping[str, str] | None = None,
    error: Error = ValueError,
) -> None:
    """Refuse a config past `CONFIG_BOUNDS` or `MAX_LOAD_PARAMS`, naming ``source`` and the
    field. ``names``: the file's own name for a field (``{"d_model": "hidden_size"}`` for a
    BERT config), so the message names what the reader will find in the file."""
    names = names or {}
    for field, (least, most) in CONFIG_BOUNDS.items():
        value = getattr(cfg, field)
        if value is None:
            continue
        if not least <= value <= most:
            raise error(
                tr(
                    "{path}: {field}={value} is outside the bounds {least}..{most} that this app loads",
                    path=source,
                    field=names.get(field, field),
                    value=value,
                    least=least,
                    most=most,
                )
            )
    params = cfg.n_params()
    if params > MAX_LOAD_PARAMS:
        raise error(
            tr(
                "{path} describes a model of {params:,} parameters; this app loads at most {most:,}",
                path=source,
                params=params,
                most=MAX_LOAD_PARAMS,
            )
        )


def state_shapes(cfg: EncoderConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor name of ``Encoder(cfg).state_dict()`` and its shape, computed from the
    config alone (tests/test_limits.py holds it to the real state dict): a file's header is
    compared with it before any memory is spent on the model. Call it after `check_config`."""
    d, f = cfg.d_model, cfg.d_mlp
    shapes: dict[str, tuple[int, ...]] = {"embed.weight": (cfg.vocab_size, d)}
    if cfg.pos_encoding == "learned":
        shapes["pos_embed.weight"] = (cfg.max_len, d)
    if cfg.type_vocab_size:
        shapes["token_type_embed.weight"] = (cfg.type_vocab_size, d)
    if cfg.embed_norm:
        shapes |= {"embed_ln.weight": (d,), "embed_ln.bias": (d,)}
    for i in range(cfg.n_layers):
        block = {
            "attn.qkv": (3 * d, d),  # rows Q;K;V
            "attn.out": (d, d),
            "ln1": (d,),
            "mlp.fc1": (f, d),
            "mlp.fc2": (d, f),
            "ln2": (d,),
        }
        for name, shape in block.items():
            shapes[f"blocks.{i}.{name}.weight"] = shape
            shapes[f"blocks.{i}.{name}.bias"] = shape[:1]
    if cfg.norm == "pre":
        shapes |= {"ln_final.weight": (d,), "ln_final.bias": (d,)}
    if cfg.n_outputs:
        shapes |= {"head.weight": (cfg.n_outputs, d), "head.bias": (cfg.n_outputs,)}
    return shapes


# --- the weights' header ---------------------------------------------------------------------------


def header_tensors(path: Path, error: Error = ValueError) -> dict[str, torch.Tensor]:
    """Every tensor of a weights file as a meta tensor of its dtype and shape, from the file's
    header alone (safetensors) or its tensor records (a ``torch.save`` file, loaded with
    ``weights_only=True`` onto the meta device): no tensor data is read."""
    try:
        if path.suffix == ".safetensors":
            tensors = _safetensors_header(path)
        else:
            loaded = torch.load(path, map_location="meta", weights_only=True)
            if not isinstance(loaded, Mapping) or not all(
                isinstance(v, torch.Tensor) for v in loaded.values()
            ):
                raise ValueError(tr("it does not hold a flat mapping of names to tensors"))
            tensors = {str(k): v for k, v in loaded.items()}
    except Exception as exc:  # safetensors, pickle and zip raise many types
        raise error(
            tr(
                "{path} cannot be read (truncated, damaged or not a weights file): {kind}: {error}",
                path=path,
                kind=type(exc).__name__,
                error=exc,
            )
        ) from exc
    return tensors


def _safetensors_header(path: Path) -> dict[str, torch.Tensor]:
    from safetensors import safe_open

    out: dict[str, torch.Tensor] = {}
    # safe_open parses and checks the header (offsets inside the file, no overlap); the data
    # stays on disk, mapped, untouched.
    with safe_open(str(path), framework="pt") as f:
        for name in f.keys():
            part = f.get_slice(name)
            dtype, shape = part.get_dtype(), part.get_shape()
            if dtype not in _DTYPES:
                raise ValueError(
                    tr("tensor {name} has the unsupported dtype {dtype}", name=name, dtype=dtype)
                )
            out[name] = torch.empty(tuple(shape), dtype=_DTYPES[dtype], device="meta")
    return out


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
    """Refusals remembered per (folder, language) and folder state (`folder_stamp`), so that
    a folder that was refused is refused again at once, until one of its files changes.
    Thread-safe: every browser session of the app asks the same one."""

    def __init__(self, max_entries: int = 256) -> None:
        self._lock = threading.Lock()
        self._seen: OrderedDict[tuple[str, str], tuple[tuple[Any, ...], str]] = OrderedDict()
        self.max_entries = max_entries

    def check(self, folder: Path, stamp: tuple[Any, ...], error: Error) -> None:
        """Raise ``error`` with the remembered message when this folder state was refused."""
        key = (str(folder), language())
        with self._lock:
            found = self._seen.get(key)
        if found is not None and found[0] == stamp:
            raise error(found[1])

    def remember(self, folder: Path, stamp: tuple[Any, ...], message: str) -> None:
        key = (str(folder), language())
        with self._lock:
            self._seen[key] = (stamp, message)
            self._seen.move_to_end(key)
            while len(self._seen) > self.max_entries:
                self._seen.popitem(last=False)
