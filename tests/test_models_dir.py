"""find_models: the models of TFORMER_MODELS_DIR with family, size and parameter count, or why
they are refused; no weights read; links out of the folder not followed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import tformer.model.model_files
import tformer.model.model_loader
from tformer.model.model_loader import load_model_folder
from tformer.model.models_dir import MODELS_DIR_ENV, describe_model, find_models, models_dirs

from . import _hf_models as H


@pytest.fixture(scope="session")
def hf_root(tmp_path_factory) -> Path:
    return H.session_root(tmp_path_factory)


@pytest.fixture
def models(hf_root: Path, tmp_path: Path) -> Path:
    """A models folder: gpt2, bert_mlm, electra, a T5 config, a folder without config, a file."""
    root = tmp_path / "models"
    root.mkdir()
    for variant in ("gpt2", "bert_mlm", "electra"):
        shutil.copytree(H.folder_of(hf_root, variant), root / variant)
    (root / "t5").mkdir()
    (root / "t5" / "config.json").write_text(json.dumps({"model_type": "t5"}))
    (root / "notes").mkdir()
    (root / "README.txt").write_text("my models")
    return root


@pytest.fixture
def no_weights_read(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args, **kwargs):
        raise AssertionError("a weights file was opened")

    monkeypatch.setattr(tformer.model.model_files, "open_weights", fail)
    monkeypatch.setattr(tformer.model.model_loader, "open_weights", fail)


def test_lists_models_with_family_size_and_parameters(models: Path, no_weights_read) -> None:
    entries = {e.name: e for e in find_models([models])}
    assert sorted(entries) == ["bert_mlm", "electra", "gpt2", "t5"]  # no notes/, no README
    gpt2 = entries["gpt2"]
    assert gpt2.ok
    assert gpt2.family == "gpt2"
    assert gpt2.family_label == "GPT-2"
    assert gpt2.size == f"{H.LAYERS} x {H.HEADS} x {H.HIDDEN}"
    assert entries["electra"].family_label == "ELECTRA"
    assert entries["bert_mlm"].family == "bert"
    t5 = entries["t5"]
    assert not t5.ok
    assert "model_type='t5'" in t5.error
    assert "config.json" in t5.error


def test_parameter_counts_are_those_of_the_loaded_models(models: Path) -> None:
    for entry in find_models([models]):
        if entry.ok:
            model = load_model_folder(entry.path).model
            assert entry.n_params == sum(p.numel() for p in model.parameters()), entry.name


def test_broken_folders_say_why(models: Path) -> None:
    (models / "gpt2" / "tokenizer.json").unlink()
    (models / "electra" / "model.safetensors").unlink()
    cfg = json.loads((models / "bert_mlm" / "config.json").read_text())
    (models / "bert_mlm" / "config.json").write_text(json.dumps({**cfg, "num_hidden_layers": 10**6}))
    entries = {e.name: e for e in find_models([models])}
    assert "tokenizer.json" in entries["gpt2"].error
    assert entries["gpt2"].size  # the config was still read: its size is shown with the reason
    assert "model.safetensors or pytorch_model.bin" in entries["electra"].error
    assert "num_hidden_layers=1000000" in entries["bert_mlm"].error
    assert entries["bert_mlm"].n_params is None


def test_several_folders_from_the_environment(
    models: Path, tmp_path: Path, hf_root: Path, monkeypatch
) -> None:
    other = tmp_path / "more"
    other.mkdir()
    shutil.copytree(H.folder_of(hf_root, "distilbert"), other / "distil")
    missing = tmp_path / "nowhere"
    monkeypatch.setenv(
        MODELS_DIR_ENV, os.pathsep.join([str(models), "", str(other), str(missing), str(models)])
    )
    assert models_dirs() == [models, other, missing]
    entries = find_models()
    names = [e.name for e in entries]
    assert names[:4] == ["bert_mlm", "electra", "gpt2", "t5"]
    assert names[4] == "distil"
    assert entries[-1].path == missing
    assert "not a folder" in entries[-1].error
    assert len(names) == 6  # the folder named twice is listed once


def test_a_model_folder_itself_can_be_named(hf_root: Path) -> None:
    folder = H.folder_of(hf_root, "xlm-roberta")
    [entry] = [e for e in find_models([folder]) if e.path == folder]
    assert entry.ok
    assert entry.family == "xlm-roberta"


def test_links_out_of_the_models_folder_are_not_followed(models: Path, tmp_path: Path, hf_root: Path) -> None:
    outside = Path(shutil.copytree(H.folder_of(hf_root, "roberta_mlm"), tmp_path / "elsewhere"))
    (models / "linked_out").symlink_to(outside, target_is_directory=True)
    shutil.copytree(models / "gpt2", models / "notes" / "kept_here")  # one level too deep to list
    (models / "linked_in").symlink_to(models / "notes" / "kept_here", target_is_directory=True)
    leaky = models / "leaky"
    leaky.mkdir()
    for name in ("model.safetensors", "tokenizer.json"):
        shutil.copy(outside / name, leaky / name)
    (leaky / "config.json").symlink_to(outside / "config.json")
    entries = {e.name: e for e in find_models([models])}
    assert not entries["linked_out"].ok
    assert "not followed" in entries["linked_out"].error
    assert entries["linked_out"].family is None  # nothing inside it was read
    assert not entries["leaky"].ok
    assert "config.json" in entries["leaky"].error
    assert entries["leaky"].family is None
    assert entries["linked_in"].ok
    assert entries["linked_in"].family == "gpt2"  # inside: followed


def test_describe_model_without_a_root_reads_the_folder(hf_root: Path) -> None:
    entry = describe_model(H.folder_of(hf_root, "gpt2"))
    assert entry.ok
    assert entry.n_params == load_model_folder(entry.path).model.cfg.n_params()
