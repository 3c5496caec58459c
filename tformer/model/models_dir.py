"""The models a user put in a models folder, listed without loading one weight.

``TFORMER_MODELS_DIR`` names one or more folders (separated by ``os.pathsep``: ``:`` on Linux
and macOS, ``;`` on Windows). Each folder, and each of its direct subfolders, that holds a
``config.json`` is a model: `find_models` lists it with its family, size and parameter count
(from config.json alone), or with why it would be refused. A symbolic link that leads outside
its models folder is never followed (a shared folder must not read the rest of the disk).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..i18n import tr
from .families import FAMILIES, ModelSpec, model_spec
from .model_files import ModelFolderError, find_weights_file, read_json_file

__all__ = [
    "MAX_ENTRIES",
    "MAX_MODEL_DIRS",
    "MODELS_DIR_ENV",
    "ModelEntry",
    "describe_model",
    "find_models",
    "models_dirs",
]

MODELS_DIR_ENV = "TFORMER_MODELS_DIR"
MAX_MODEL_DIRS = 16  # folders named in the variable
MAX_ENTRIES = 1000  # directory entries looked at per models folder


@dataclass(frozen=True)
class ModelEntry:
    """One model folder: what it is, or why it cannot be loaded (``error``)."""

    path: Path
    name: str  # the folder's name inside its models folder
    family: str | None = None  # a key of FAMILIES
    n_layers: int | None = None
    n_heads: int | None = None
    d_model: int | None = None
    n_params: int | None = None  # what our Encoder holds (unused poolers and heads not counted)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def family_label(self) -> str:
        return FAMILIES.get(self.family or "", "?")

    @property
    def size(self) -> str:
        """``layers x heads x d_model``, e.g. ``12 x 12 x 768``."""
        if self.n_layers is None:
            return ""
        return f"{self.n_layers} x {self.n_heads} x {self.d_model}"


def models_dirs(value: str | None = None) -> list[Path]:
    """The folders ``TFORMER_MODELS_DIR`` (or ``value``) names, in order, without repeats."""
    raw = os.environ.get(MODELS_DIR_ENV, "") if value is None else value
    out: list[Path] = []
    for part in raw.split(os.pathsep):
        if part.strip() and Path(part.strip()) not in out:
            out.append(Path(part.strip()))
    return out[:MAX_MODEL_DIRS]


def _inside(path: Path, root: Path) -> bool:
    """``path`` resolves (links followed) to ``root`` or below it."""
    try:
        path.resolve(strict=True).relative_to(root)
    except (OSError, ValueError, RuntimeError):  # dangling link, outside, a link loop
        return False
    return True


def _params(spec: ModelSpec, architectures: object) -> int:
    """Parameters of what loads: with the masked-LM head when config.json's class has one."""
    cfg = spec.cfg
    if (
        spec.family != "gpt2"
        and isinstance(architectures, list)
        and (
            any(isinstance(a, str) and a.endswith("ForMaskedLM") for a in architectures)
            and cfg.d_embed is None
        )
    ):
        cfg = dataclasses.replace(cfg, lm_head="mlm")
    return cfg.n_params()


def describe_model(folder: str | Path, root: str | Path | None = None) -> ModelEntry:
    """Family, size and parameter count of ``folder`` from its config.json, or the reason it is
    refused. With ``root``, files whose links lead outside ``root`` refuse the folder."""
    folder = Path(folder)
    entry = ModelEntry(path=folder, name=folder.name)
    try:
        if root is not None:
            base = Path(root).resolve()
            for name in ("config.json", "model.safetensors", "pytorch_model.bin", "tokenizer.json"):
                f = folder / name
                if (f.exists() or f.is_symlink()) and not _inside(f, base):
                    raise ModelFolderError(
                        tr("{path} is a link to outside {root}; it is not followed", path=f, root=base)
                    )
        hf = read_json_file(folder / "config.json")
        spec = model_spec(hf, source=folder / "config.json")
        cfg = spec.cfg
        entry = dataclasses.replace(
            entry,
            family=spec.family,
            n_layers=cfg.n_layers,
            n_heads=cfg.n_heads,
            d_model=cfg.d_model,
            n_params=_params(spec, hf.get("architectures")),
        )
        find_weights_file(folder)
        if not (folder / "tokenizer.json").is_file():
            raise ModelFolderError(tr("{folder} has no tokenizer.json", folder=folder))
    except ModelFolderError as exc:
        return dataclasses.replace(entry, error=str(exc))
    return entry


def find_models(dirs: Iterable[str | Path] | None = None) -> list[ModelEntry]:
    """Every model in ``dirs`` (default: `models_dirs`), sorted by name within each folder."""
    roots = models_dirs() if dirs is None else [Path(d) for d in dirs]
    entries: list[ModelEntry] = []
    seen: set[Path] = set()
    for root in roots[:MAX_MODEL_DIRS]:
        for entry in _scan(root):
            key = Path(os.path.realpath(entry.path))
            if key not in seen:
                seen.add(key)
                entries.append(entry)
    return entries


def _scan(root: Path) -> list[ModelEntry]:
    if not root.is_dir():
        return [ModelEntry(root, root.name, error=tr("{path} is not a folder", path=root))]
    base = root.resolve()
    found = [describe_model(root, base)] if (root / "config.json").exists() else []
    try:
        with os.scandir(root) as it:
            children = sorted((e for _, e in zip(range(MAX_ENTRIES), it, strict=False)), key=lambda e: e.name)
    except OSError as exc:
        return [
            *found,
            ModelEntry(root, root.name, error=tr("cannot list {path}: {err}", path=root, err=exc)),
        ]
    for child in children:
        path = Path(child.path)
        if child.is_symlink() and not _inside(path, base):
            found.append(
                ModelEntry(
                    path,
                    child.name,
                    error=tr("{path} is a link to outside {root}; it is not followed", path=path, root=base),
                )
            )
            continue
        if child.is_dir() and (path / "config.json").exists():
            found.append(describe_model(path, base))
    return found
