"""TFORMER_MODELS_DIR for the app tests: a tiny RoBERTa with its masked-LM head and a tiny GPT-2,
saved by transformers' save_pretrained (`tests._hf_models`, built once per test session and
shared with the equality tests), copied into a folder of their own so that the list the
sidebar shows does not depend on which other variants a session built."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ._hf_models import folder_of, session_root

VARIANTS = ("gpt2", "roberta_mlm")  # sorted: the sidebar lists gpt2 first
_DIR: list[Path] = []


def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder (built once per session); tests must not change it."""
    if not _DIR:
        root = session_root(tmp_path_factory)
        target = tmp_path_factory.mktemp("models_dir")
        for variant in VARIANTS:
            shutil.copytree(folder_of(root, variant), target / variant)
        _DIR.append(target)
    return _DIR[0]
