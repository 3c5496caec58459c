"""Load a local model folder of any supported family into our `Encoder`, checking as it goes.

The order is what makes it safe on untrusted folders (see `tformer.model.model_files`):
every file inside the folder (no symlink out) -> config.json (size, then numbers, then
parameter count) -> tokenizer.json (size, then its vocabulary against the embedding) -> the
weights file's header (names and shapes, against config.json) -> the model is allocated ->
tensors are read one by one (finite values only). A refusal is remembered until a file of the
folder changes.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import torch

from ..i18n import tr
from .encoder import Encoder
from .families import ModelSpec, model_spec
from .family_weights import (
    GPT2_DECODER,
    Take,
    canonical_names,
    head_names,
    is_buffer,
    is_ignorable,
    their_shape,
    weight_plan,
)
from .model_files import (
    MAX_TOKENIZER_BYTES,
    ModelFolderError,
    NoInit,
    Refusals,
    WeightsFile,
    check_file_size,
    contained,
    expected_shapes,
    find_weights_file,
    folder_stamp,
    open_weights,
    read_json_file,
)
from .tokenizer import Tokenizer

__all__ = ["LoadedModel", "load_model_folder", "read_spec"]

_SINUSOID_TOLERANCE = 1e-5  # DistilBERT's stored sinusoid table against our formula (float32)
# The files a folder is read from; each must resolve inside it, and their state keys refusals.
_FILES = ("config.json", "model.safetensors", "pytorch_model.bin", "tokenizer.json")
_REFUSED = Refusals()  # refused folders, per folder state: the next visitor is told at once


@dataclass(frozen=True, eq=False)
class LoadedModel:
    """A loaded folder: the model (eval mode), its tokenizer, its family and what was skipped."""

    model: Encoder
    tokenizer: Tokenizer
    family: str  # a key of tformer.model.families.FAMILIES
    folder: Path
    notes: tuple[str, ...]  # tensors left unused, a head that could not be loaded; translated


def read_spec(folder: Path) -> ModelSpec:
    """The folder's config.json as a `ModelSpec` (bounded; no weights read)."""
    return model_spec(read_json_file(folder / "config.json"), source=folder / "config.json")


def load_model_folder(folder: str | Path, device: str | torch.device = "cpu") -> LoadedModel:
    """Load ``folder`` (config.json, model.safetensors or pytorch_model.bin, tokenizer.json).

    Raises `ModelFolderError` (a ValueError) naming the file and the problem; a refusal is
    remembered until a file of the folder changes (asking again costs a few stat calls).
    """
    folder = Path(folder)
    stamp = folder_stamp(folder, _FILES)
    _REFUSED.check(folder, stamp)
    try:
        return _load(folder, device)
    except ModelFolderError as err:
        _REFUSED.remember(folder, stamp, str(err))
        raise


def _load(folder: Path, device: str | torch.device) -> LoadedModel:
    for name in _FILES:
        if os.path.lexists(folder / name):
            contained(folder, name)  # a symlink that leads elsewhere is refused, not followed
    spec = read_spec(folder)
    weights_path = find_weights_file(folder)
    tokenizer = _read_tokenizer(folder, spec)
    with open_weights(weights_path) as weights:
        canon = canonical_names(weights.shapes, spec.family)
        if len(canon) < len(weights.shapes):
            raise ModelFolderError(
                tr("{path} holds the same tensor twice, with and without a prefix", path=weights_path)
            )
        spec, notes = _choose_head(spec, canon, weights)
        takes = weight_plan(spec, canon)
        used = _check_tensors(spec, takes, canon, weights)
        notes += _unused(canon, used, weights_path)
        with NoInit():  # every tensor of the state dict is filled below (the plan covers them all)
            model = Encoder(spec.cfg, init_weights=False)
        _fill(model, takes, canon, weights)
        if spec.sinusoidal_table:
            _check_sinusoid(model, canon, weights)
    return LoadedModel(model.eval().to(device), tokenizer, spec.family, folder, tuple(notes))


def _same(weights: WeightsFile, a: str, b: str) -> bool:
    if weights.shapes[a] != weights.shapes[b]:
        return False
    return bool(torch.equal(weights.tensor(a), weights.tensor(b)))


def _choose_head(
    spec: ModelSpec, canon: Mapping[str, str], weights: WeightsFile
) -> tuple[ModelSpec, list[str]]:
    """The spec with the LM head the checkpoint holds (if we can compute it exactly)."""
    cfg = spec.cfg
    if spec.family == "gpt2":
        decoder = canon.get(GPT2_DECODER)
        if decoder is not None and "wte.weight" in canon and not _same(weights, decoder, canon["wte.weight"]):
            return dataclasses.replace(spec, cfg=dataclasses.replace(cfg, lm_head="none")), [
                tr(
                    "{name} is not tied to the token embeddings, so its predictions are not shown",
                    name=decoder,
                )
            ]
        return spec, []
    head = head_names(spec.family)
    if head is None or head.marker not in canon:
        return spec, []
    if not head.head_act_is_model_act and cfg.activation != "gelu":
        return spec, [
            tr(
                "the masked-LM head uses GELU while the model uses {act}; it is not loaded",
                act=cfg.activation,
            )
        ]
    embed = canon.get("embeddings.word_embeddings.weight")
    if head.decoder in canon and embed is not None and not _same(weights, canon[head.decoder], embed):
        return spec, [
            tr(
                "{name} is not tied to the token embeddings, so its predictions are not shown",
                name=canon[head.decoder],
            )
        ]
    return dataclasses.replace(spec, cfg=dataclasses.replace(cfg, lm_head="mlm")), []


def _expected_shapes(spec: ModelSpec) -> dict[str, tuple[int, ...]]:
    """Our state dict's shapes for ``spec.cfg``, from a model on the meta device (no memory)."""
    return expected_shapes(spec.cfg)


def _check_tensors(
    spec: ModelSpec, takes: list[Take], canon: Mapping[str, str], weights: WeightsFile
) -> set[str]:
    """Every tensor the plan needs exists with the shape config.json implies; returns their names."""
    expected = _expected_shapes(spec)
    planned = {t.ours for t in takes}
    if planned != set(expected):  # a bug in a plan, not in the folder
        raise RuntimeError(f"weight plan for {spec.family} misses {set(expected) ^ planned}")
    used: set[str] = set()
    for take in takes:
        for name, want in zip(take.theirs, their_shape(take, expected[take.ours]), strict=True):
            if name not in canon:
                raise ModelFolderError(
                    tr(
                        "{path} lacks tensor {name}, which config.json's {family} with {n} layers needs",
                        path=weights.path,
                        name=repr(name),
                        family=spec.label,
                        n=spec.cfg.n_layers,
                    )
                )
            got = weights.shapes[canon[name]]
            if got != want:
                raise ModelFolderError(
                    tr(
                        "{path}: tensor {name} has shape {got}, expected {want} from config.json",
                        path=weights.path,
                        name=repr(canon[name]),
                        got=list(got),
                        want=list(want),
                    )
                )
            used.add(name)
    if spec.sinusoidal_table:
        used.add("embeddings.position_embeddings.weight")
    if spec.family == "gpt2" and spec.cfg.lm_head == "tied":
        used.add(GPT2_DECODER)
    head = head_names(spec.family)
    if spec.cfg.lm_head == "mlm" and head is not None:
        used |= {head.decoder, head.decoder_bias}  # a stored copy of W_E, a second copy of the bias
    return used


def _unused(canon: Mapping[str, str], used: set[str], path: Path) -> list[str]:
    """Notes for tensors the encoder skips; ModelFolderError for any it cannot place."""
    left = sorted(n for n in canon if n not in used)
    extra = [canon[n] for n in left if not is_ignorable(n)]
    if extra:
        shown = ", ".join(extra[:5]) + (tr(" and {n} more", n=len(extra) - 5) if len(extra) > 5 else "")
        raise ModelFolderError(
            tr("{path} has tensors this encoder has no place for: {names}", path=path, names=shown)
        )
    heads = [n for n in left if not is_buffer(n)]
    groups = sorted({".".join(n.split(".")[: 2 if n.startswith("cls.") else 1]) for n in heads})
    return [tr("not used here: {names}", names=", ".join(groups))] if groups else []


@torch.no_grad()
def _fill(model: Encoder, takes: list[Take], canon: Mapping[str, str], weights: WeightsFile) -> None:
    """Copy the checkpoint into the model tensor by tensor (at most one extra copy at a time)."""
    for take in takes:
        parts = [weights.tensor(canon[name]) for name in take.theirs]
        for name, part in zip(take.theirs, parts, strict=True):
            if not bool(torch.isfinite(part).all()):
                raise ModelFolderError(
                    tr(
                        "{path}: tensor {name} holds NaN or infinite values",
                        path=weights.path,
                        name=repr(canon[name]),
                    )
                )
        parts = [p.t() if take.transpose else p for p in parts]
        value = torch.cat(parts, dim=0) if len(parts) > 1 else parts[0]
        model.get_parameter(take.ours).copy_(value[take.skip_rows :])


def _check_sinusoid(model: Encoder, canon: Mapping[str, str], weights: WeightsFile) -> None:
    """DistilBERT with sinusoidal_pos_embds stores its table: it must be the formula we compute."""
    name = canon.get("embeddings.position_embeddings.weight")
    if name is None:
        return
    pe = model.get_buffer("pe")  # [max_len, d_embed]
    stored = weights.tensor(name)
    diff = (stored - pe).abs().max().item() if stored.shape == pe.shape else float("inf")
    if not diff <= _SINUSOID_TOLERANCE:
        raise ModelFolderError(
            tr(
                "{path}: tensor {name} is not the sinusoid table that config.json's "
                "sinusoidal_pos_embds=true describes (largest difference {diff:.2g})",
                path=weights.path,
                name=repr(name),
                diff=diff,
            )
        )


def _read_tokenizer(folder: Path, spec: ModelSpec) -> Tokenizer:
    path = folder / "tokenizer.json"
    if not path.is_file():
        raise ModelFolderError(
            tr(
                "{folder} has no tokenizer.json (the tokenizers-library file; vocab.txt or merges.txt "
                "alone are not read)",
                folder=folder,
            )
        )
    check_file_size(path, MAX_TOKENIZER_BYTES, tr("a tokenizer"))
    try:
        tokenizer = Tokenizer.from_file(path, max_len=spec.cfg.max_len)
    except ValueError as exc:
        raise ModelFolderError(
            tr(
                "{path} is not a tokenizer file the tokenizers library can read: {err}",
                path=path,
                err=exc.__cause__ or exc,
            )
        ) from exc
    if tokenizer.vocab_size > spec.cfg.vocab_size:
        raise ModelFolderError(
            tr(
                "{path} has {n} tokens but {config} has vocab_size={vocab}: ids past {last} have no "
                "embedding, so this tokenizer belongs to another model",
                path=path,
                n=tokenizer.vocab_size,
                config=folder / "config.json",
                vocab=spec.cfg.vocab_size,
                last=spec.cfg.vocab_size - 1,
            )
        )
    return tokenizer
