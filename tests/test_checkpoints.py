"""Run folders: save -> load is exact, damaged folders are refused by name, listing skips junk."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
import tokenizers
import torch
from safetensors.torch import load_file, save_file
from tokenizers import models, pre_tokenizers, processors

from tformer import Encoder, Tokenizer
from tformer.training import checkpoints as ck
from tformer.training.checkpoints import (
    RUNS_DIR_ENV,
    CheckpointError,
    is_run_name,
    list_runs,
    load_run,
    runs_dir,
    sanitize_run_name,
    save_run,
)

from ._models import tiny

WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "good", "bad", "movie", "was"]


def word_tokenizer(max_len: int = 32) -> Tokenizer:
    """A WordLevel tokenizer: [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3, then one id per word."""
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *WORDS])}
    tok = tokenizers.Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens(["[PAD]", "[UNK]", "[CLS]", "[SEP]"])
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    return Tokenizer(tok, max_len=max_len)


def trained_model(n_outputs: int = 3) -> Encoder:
    """A tiny classifier whose weights differ from any fresh init (as after training)."""
    model = Encoder(tiny(n_outputs=n_outputs)).eval()
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=g))
    return model


TASK = {"name": "sentiment", "labels": ["neg", "pos", "neutral"]}
RECIPE = {"lr": np.float32(0.001), "steps": np.int64(200), "batch_size": 16}
HISTORY = {
    "steps": [{"step": 1, "loss": 1.1}, {"step": 2, "loss": 0.9}],
    "evals": [{"step": 1, "accuracy": 0.5}, {"step": 2, "accuracy": 0.75}],
}


def save(folder, model=None, **kw) -> Path:
    kw.setdefault("task", TASK)
    kw.setdefault("recipe", RECIPE)
    return save_run(folder, model or trained_model(), word_tokenizer(), **kw)


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    return save(tmp_path / "run-1", history=HISTORY, examples=["the movie was good", "a bad dog"])


# --- round trip ----------------------------------------------------------------------------


def test_save_then_load_gives_identical_outputs(tmp_path: Path) -> None:
    model = trained_model(n_outputs=3)
    folder = save(tmp_path / "run-1", model, history=HISTORY, examples=["the cat sat"])
    assert folder == tmp_path / "run-1"
    assert sorted(p.name for p in folder.iterdir()) == sorted(ck.RUN_FILES)

    loaded, tokenizer, run = load_run(folder)
    assert loaded.cfg == model.cfg
    assert not loaded.training
    ids = torch.randint(0, model.cfg.vocab_size, (3, 11), generator=torch.Generator().manual_seed(3))
    probs, cache = model.run_with_cache(ids)
    probs2, cache2 = loaded.run_with_cache(ids)
    assert probs.shape == (3, 11, 3)
    assert torch.equal(probs, probs2)
    assert torch.equal(cache["hook_logits"], cache2["hook_logits"])
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, loaded.state_dict()[name]), name

    original = word_tokenizer()
    for text in ["the cat sat on the mat", "a zebra ran"]:
        assert tokenizer.encode(text).ids == original.encode(text).ids
    assert tokenizer.max_len == original.max_len

    assert run["format_version"] == ck.FORMAT_VERSION
    assert run["name"] == "run-1"
    assert run["task"] == TASK
    assert run["recipe"] == {"lr": pytest.approx(0.001), "steps": 200, "batch_size": 16}
    assert run["history"] == HISTORY
    assert run["accuracy"] == 0.75
    assert run["examples"] == ["the cat sat"]
    assert run["n_params"] == model.cfg.n_params()


def test_safetensors_holds_contiguous_cpu_copies_of_the_state_dict(saved: Path) -> None:
    weights = load_file(str(saved / ck.MODEL_FILE))
    model, _, _ = load_run(saved)
    assert set(weights) == set(model.state_dict())
    assert json.loads((saved / ck.CONFIG_FILE).read_text())["d_ff"] == 4 * 24


def test_a_run_name_is_saved_under_the_runs_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RUNS_DIR_ENV, str(tmp_path / "mine"))
    assert runs_dir() == tmp_path / "mine"
    folder = save("my_run-2")
    assert folder == tmp_path / "mine" / "my_run-2"
    model, _, run = load_run("my_run-2")  # a name is looked up there too
    assert run["name"] == "my_run-2"
    assert isinstance(model, Encoder)
    assert [r.name for r in list_runs()] == ["my_run-2"]


def test_runs_dir_defaults_to_runs_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(RUNS_DIR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert runs_dir() == tmp_path / "runs"
    monkeypatch.setenv(RUNS_DIR_ENV, "elsewhere")
    assert runs_dir() == tmp_path / "elsewhere"


def test_the_history_gives_the_final_accuracy(tmp_path: Path) -> None:
    cases = {
        "final": ({"final": {"accuracy": 0.9}, "evals": [{"accuracy": 0.1}]}, 0.9),
        "top": ({"accuracy": np.float64(0.8)}, 0.8),
        "evals": ({"evals": [{"accuracy": 0.6}, {"loss": 1.0}]}, 0.6),
        "none": ({"steps": []}, None),
    }
    for name, (history, _) in cases.items():
        save(tmp_path / name, history=history)
    got = {r.name: r.accuracy for r in list_runs(tmp_path)}
    assert got == {name: accuracy for name, (_, accuracy) in cases.items()}


# --- damaged folders -------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["truncate", "empty", "garbage"])
def test_a_damaged_safetensors_file_is_refused_by_name(saved: Path, damage: str) -> None:
    path = saved / ck.MODEL_FILE
    data = path.read_bytes()
    path.write_bytes({"truncate": data[: len(data) // 2], "empty": b"", "garbage": b"\x00" * 64}[damage])
    with pytest.raises(CheckpointError, match=r"model\.safetensors (cannot be read|is empty)") as err:
        load_run(saved)
    assert str(path) in str(err.value)


def test_a_config_that_does_not_match_the_weights_names_each_shape(saved: Path) -> None:
    path = saved / ck.CONFIG_FILE
    cfg = json.loads(path.read_text())
    cfg["d_model"] = 48  # 3 heads still divide it; every d_model-sized tensor now disagrees
    path.write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError) as err:
        load_run(saved)
    message = str(err.value)
    assert str(saved / ck.MODEL_FILE) in message
    assert "config.json" in message
    assert "blocks.0.attn.qkv.weight: (72, 24) in the file, (144, 48) expected" in message


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        ({"d_modle": 24}, r"unknown keys \['d_modle'\]"),
        ({"n_heads": 5}, r"d_model=24 is not divisible by n_heads=5"),
        ({"activation": "swish"}, r"activation='swish'"),
    ],
)
def test_a_bad_config_is_refused_by_name(saved: Path, edit: dict, match: str) -> None:
    path = saved / ck.CONFIG_FILE
    path.write_text(json.dumps({**json.loads(path.read_text()), **edit}))
    with pytest.raises(CheckpointError, match=match) as err:
        load_run(saved)
    assert str(path) in str(err.value)


@pytest.mark.parametrize("name", [ck.CONFIG_FILE, ck.RUN_FILE])
def test_bad_json_is_refused_by_name(saved: Path, name: str) -> None:
    (saved / name).write_text('{"d_model": 24,')
    with pytest.raises(CheckpointError, match="is not valid JSON") as err:
        load_run(saved)
    assert str(saved / name) in str(err.value)


@pytest.mark.parametrize("name", ck.RUN_FILES)
def test_a_missing_file_is_named(saved: Path, name: str) -> None:
    (saved / name).unlink()
    with pytest.raises(CheckpointError, match="missing file") as err:
        load_run(saved)
    assert str(saved / name) in str(err.value)


def test_a_pickle_is_never_read_in_place_of_safetensors(saved: Path) -> None:
    model, _, _ = load_run(saved)
    (saved / ck.MODEL_FILE).unlink()
    torch.save(model.state_dict(), saved / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match=r"missing file .*model\.safetensors"):
        load_run(saved)


def test_missing_and_extra_tensors_are_named(saved: Path) -> None:
    path = saved / ck.MODEL_FILE
    weights = load_file(str(path))
    save_file({k: v for k, v in weights.items() if k != "head.bias"}, str(path))
    with pytest.raises(CheckpointError, match=r"lacks tensors .*head\.bias"):
        load_run(saved)
    save_file({**weights, "blocks.9.attn.qkv.weight": torch.zeros(2, 2)}, str(path))
    with pytest.raises(CheckpointError, match=r"no place for: blocks\.9\.attn\.qkv\.weight"):
        load_run(saved)


def test_a_tokenizer_larger_than_the_vocabulary_is_refused(saved: Path) -> None:
    path = saved / ck.CONFIG_FILE
    path.write_text(json.dumps({**json.loads(path.read_text()), "vocab_size": 10}))
    with pytest.raises(CheckpointError):  # the embedding no longer matches either
        load_run(saved)
    model = Encoder(tiny(vocab_size=10, n_outputs=2))
    with pytest.raises(CheckpointError, match="tokenizer has 16 tokens but the model's vocab_size is 10"):
        save_run(saved.parent / "small", model, word_tokenizer(), task=TASK, recipe=RECIPE)


def test_a_newer_format_is_refused(saved: Path) -> None:
    path = saved / ck.RUN_FILE
    path.write_text(json.dumps({**json.loads(path.read_text()), "format_version": ck.FORMAT_VERSION + 1}))
    with pytest.raises(CheckpointError, match="format_version=2 is not supported"):
        load_run(saved)


def test_a_missing_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="is not a run folder"):
        load_run(tmp_path / "nothing")


# --- names -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["../x", "..", ".", "", "a/b", "a\\b", "has space", "é", "x" * 65, ".hidden"]
)
def test_names_outside_the_rule_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    root = tmp_path / "runs"
    monkeypatch.setenv(RUNS_DIR_ENV, str(root))
    assert not is_run_name(name)
    with pytest.raises(CheckpointError, match="is not allowed"):
        save(name)
    with pytest.raises(CheckpointError, match="is not allowed"):
        load_run(name)
    assert sorted(p.name for p in tmp_path.rglob("*")) == []  # nothing written anywhere


def test_a_path_may_not_climb_or_end_in_a_bad_name(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match=r"may not contain '\.\.'"):
        save(tmp_path / "a" / ".." / "x")
    with pytest.raises(CheckpointError, match="not a valid run name"):
        save(tmp_path / "bad name")
    assert list(tmp_path.iterdir()) == []


def test_sanitize_run_name_makes_a_valid_name_from_any_text() -> None:
    assert sanitize_run_name("My run: 2 layers!") == "My-run-2-layers"
    assert sanitize_run_name("../../etc/passwd") == "etc-passwd"
    assert sanitize_run_name("情感 分类") == "run"
    assert sanitize_run_name("???", fallback="sentiment") == "sentiment"
    long = sanitize_run_name("a" * 63 + "!b" * 10)
    assert len(long) <= 64
    assert is_run_name(long)
    assert not long.endswith("-")
    for text in ["x", "A_b-9", "../x", "", " ", "a" * 200]:
        assert is_run_name(sanitize_run_name(text))


def test_an_existing_run_is_never_overwritten(saved: Path) -> None:
    before = (saved / ck.MODEL_FILE).read_bytes()
    with pytest.raises(CheckpointError, match="already exists"):
        save(saved)
    assert (saved / ck.MODEL_FILE).read_bytes() == before
    assert [p.name for p in saved.parent.iterdir()] == ["run-1"]


def test_unserialisable_metadata_fails_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match=r"cannot write run\.json"):
        save(tmp_path / "run", task={"name": "x", "model": object()})
    with pytest.raises(TypeError, match="sequence of str"):
        save(tmp_path / "run", examples="one text")
    assert list(tmp_path.iterdir()) == []


# --- listing and atomic writes ---------------------------------------------------------------


def test_list_runs_skips_junk_and_lists_newest_first(tmp_path: Path) -> None:
    first = save(tmp_path / "first", history={"evals": [{"accuracy": 0.5}]})
    second = save(tmp_path / "second", task={"name": "topic"})
    # junk: none of these may raise or be listed
    (tmp_path / "empty").mkdir()
    (tmp_path / "a-file.txt").write_text("not a folder")
    (tmp_path / "bad-json").mkdir()
    (tmp_path / "bad-json" / "run.json").write_text("{")
    for name, text in [("not-object", "[1, 2]"), ("foreign", '{"format": "other"}'), ("no-date", "{}")]:
        shutil.copytree(first, tmp_path / name)
        (tmp_path / name / "run.json").write_text(text)
    shutil.copytree(first, tmp_path / "bad date")  # a name that is not a run name
    shutil.copytree(first, tmp_path / "no-weights")
    (tmp_path / "no-weights" / ck.MODEL_FILE).unlink()
    shutil.copytree(first, tmp_path / "binary-run-json")
    (tmp_path / "binary-run-json" / "run.json").write_bytes(b"\xff\xfe\x00")
    shutil.copytree(first, tmp_path / "date-junk")
    run = json.loads((first / "run.json").read_text())
    (tmp_path / "date-junk" / "run.json").write_text(json.dumps({**run, "created": "yesterday"}))
    (tmp_path / "link").symlink_to(tmp_path / "missing-target")

    runs = list_runs(tmp_path)
    assert [r.name for r in runs] == ["second", "first"]
    assert runs[0].path == second
    assert runs[0].task == "topic"
    assert runs[0].accuracy is None
    assert runs[1].path == first
    assert runs[1].task == "sentiment"
    assert runs[1].accuracy == 0.5
    assert runs[0].created > runs[1].created
    assert runs[0].created.tzinfo is not None


def test_list_runs_of_a_missing_or_odd_root_is_empty(tmp_path: Path) -> None:
    assert list_runs(tmp_path / "missing") == []
    (tmp_path / "file").write_text("x")
    assert list_runs(tmp_path / "file") == []


def test_a_half_written_run_is_never_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pause save_run just before its last file: nothing is listed, the target does not exist."""
    real_write = ck._write_text
    reached, release = threading.Event(), threading.Event()

    def slow_write(path: Path, text: str) -> None:
        if path.name == ck.RUN_FILE:
            reached.set()
            assert release.wait(10)
        real_write(path, text)

    monkeypatch.setattr(ck, "_write_text", slow_write)
    result: list[Path] = []
    saver = threading.Thread(target=lambda: result.append(save(tmp_path / "slow")))
    saver.start()
    try:
        assert reached.wait(10)
        assert list_runs(tmp_path) == []
        assert not (tmp_path / "slow").exists()
        (tmp,) = tmp_path.iterdir()
        assert tmp.name.startswith(".tmp-slow-")
        assert (tmp / ck.MODEL_FILE).is_file()
    finally:
        release.set()
        saver.join(10)
    assert result == [tmp_path / "slow"]
    assert [p.name for p in tmp_path.iterdir()] == ["slow"]
    assert [r.name for r in list_runs(tmp_path)] == ["slow"]


def test_a_failed_write_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full_disk(path: Path, text: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ck, "_write_text", full_disk)
    with pytest.raises(OSError, match="No space left"):
        save(tmp_path / "doomed")
    assert list(tmp_path.iterdir()) == []
    assert list_runs(tmp_path) == []
