"""Untrusted folders, saved runs first: a run whose files were edited is refused by file and
field before anything is built or read (the bounds of `tformer.model_files`, shared with model
folders), a refusal is remembered until the folder changes (runs and model folders), nothing
is followed outside its folder, and stale temporary folders go. tests/test_model_refusals.py
covers the model folders' own refusals."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import torch

import tformer.model.model_files as mf
import tformer.model.model_loader as loader
import tformer.training.checkpoints as ck
from tformer import Encoder, EncoderConfig
from tformer.model.model_files import CONFIG_BOUNDS, MAX_CONFIG_BYTES, MAX_MODEL_PARAMS, expected_shapes
from tformer.model.pretrained import load_pretrained
from tformer.training.checkpoints import (
    CheckpointError,
    list_runs,
    load_run,
    read_run_meta,
    remove_stale_temp,
)

from ._folders import tiny_bert_folder, tiny_run

# --- the shapes a config calls for ---------------------------------------------------------------


@pytest.mark.parametrize(
    "cfg",
    [
        EncoderConfig(vocab_size=11, max_len=9, d_model=8, n_heads=2, n_layers=1),
        EncoderConfig(
            vocab_size=11,
            max_len=9,
            d_model=8,
            n_heads=4,
            n_layers=3,
            d_ff=20,
            pos_encoding="learned",
            type_vocab_size=2,
            embed_norm=True,
            norm="pre",
            n_outputs=5,
        ),
        EncoderConfig(vocab_size=7, max_len=5, d_model=6, n_heads=3, n_layers=2, pos_encoding="none"),
    ],
)
def test_expected_shapes_are_the_encoders_state_dict(cfg: EncoderConfig) -> None:
    real = {k: tuple(v.shape) for k, v in Encoder(cfg).state_dict().items()}
    assert expected_shapes(cfg) == real
    assert list(expected_shapes(cfg)) == list(real)  # in the same order, for the messages


# --- a saved run's config.json ---------------------------------------------------------------------


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(ck.RUNS_DIR_ENV, str(tmp_path))
    return tiny_run(tmp_path)


def edit(path: Path, **changes: object) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


@pytest.fixture
def nothing_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """Building the model or reading a weight fails the test: a refusal must come before both."""

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the model was built or its weights read before the config was checked")

    monkeypatch.setattr(ck, "Encoder", never)
    monkeypatch.setattr(ck, "_read_weights", never)
    monkeypatch.setattr(loader, "Encoder", never)


HOSTILE_RUN = [
    ({"max_len": 2**31}, "max_len=2147483648 must be an integer from 1 to"),  # 16 GB before the fix
    ({"d_model": 10**12, "n_heads": 1}, "d_model=1000000000000"),
    ({"n_layers": 10**6}, "n_layers=1000000"),
    ({"vocab_size": 10**9}, "vocab_size=1000000000"),
    ({"d_ff": 2**40}, "d_ff=1099511627776"),
    ({"d_embed": 10**7}, "d_embed=10000000"),
    # inside every field's bounds, 3.2 G parameters in all (17 s before its refusal, before)
    ({"d_model": 4096, "n_heads": 64, "n_layers": 16, "d_ff": 16384}, "over the 400 M this app loads"),
]


@pytest.mark.parametrize(("changes", "named"), HOSTILE_RUN)
def test_a_hostile_run_config_is_refused_at_once_by_file_and_field(
    run: Path, nothing_built: None, changes: dict, named: str
) -> None:
    edit(run / ck.CONFIG_FILE, **changes)
    start = time.perf_counter()
    with pytest.raises(CheckpointError) as err:
        load_run(run.name)
    assert time.perf_counter() - start < 1.0
    assert str(run / ck.CONFIG_FILE) in str(err.value)
    assert named in str(err.value)


def test_a_config_within_bounds_that_the_weights_do_not_match_is_refused_from_the_header(
    run: Path, nothing_built: None
) -> None:
    """268 M parameters pass the bounds; the small file's header says otherwise."""
    edit(run / ck.CONFIG_FILE, vocab_size=262_144, d_model=1024, n_heads=2)
    with pytest.raises(CheckpointError) as err:
        load_run(run.name)
    assert "(262144, 1024) expected" in str(err.value)
    assert "model.safetensors does not match" in str(err.value)


def test_an_oversized_config_file_is_not_read(run: Path, nothing_built: None) -> None:
    path = run / ck.CONFIG_FILE
    path.write_text(json.dumps({**json.loads(path.read_text()), "pad": "x" * MAX_CONFIG_BYTES}))
    with pytest.raises(CheckpointError, match="over the 1 MB allowed for a JSON file"):
        load_run(run.name)


def test_a_refusal_is_remembered_until_the_folder_changes(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = (run / ck.CONFIG_FILE).read_text()
    edit(run / ck.CONFIG_FILE, max_len=2**31)
    reads: list[Path] = []
    real = ck.read_json_file
    monkeypatch.setattr(ck, "read_json_file", lambda path, *a: reads.append(path) or real(path, *a))
    with pytest.raises(CheckpointError, match="max_len") as first:
        load_run(run.name)
    n = len(reads)
    with pytest.raises(CheckpointError, match="max_len") as second:
        load_run(run.name)
    assert len(reads) == n  # the second visitor is answered without reading a file
    assert str(second.value) == str(first.value)
    (run / ck.CONFIG_FILE).write_text(good)  # fixed: a new mtime, so it is read again
    model, _tokenizer, meta = load_run(run.name)
    assert len(reads) > n
    assert model.cfg.max_len == 8
    assert meta["examples"]


def test_a_broken_run_is_refused_by_name_not_by_a_crash(run: Path) -> None:
    (run / ck.MODEL_FILE).write_bytes(b"\x00" * 7)
    with pytest.raises(CheckpointError, match=r"model\.safetensors cannot be read"):
        load_run(run.name)


# --- symlinks and temporary folders ----------------------------------------------------------------


def test_a_run_symlinked_from_outside_is_neither_listed_nor_loaded(tmp_path: Path, monkeypatch) -> None:
    outside = tiny_run(tmp_path / "elsewhere", "outside")
    root = tmp_path / "runs"
    root.mkdir()
    monkeypatch.setenv(ck.RUNS_DIR_ENV, str(root))
    tiny_run(root, "inside")
    (root / "sneaky").symlink_to(outside, target_is_directory=True)
    assert [r.name for r in list_runs()] == ["inside"]
    with pytest.raises(CheckpointError, match="points outside the runs folder"):
        load_run("sneaky")
    with pytest.raises(CheckpointError, match="points outside the runs folder"):
        read_run_meta("sneaky")


@pytest.mark.parametrize("name", ck.RUN_FILES)
def test_a_file_symlinked_from_outside_a_run_is_refused(run: Path, tmp_path: Path, name: str) -> None:
    stolen = tmp_path / "elsewhere" / name
    stolen.parent.mkdir()
    (run / name).rename(stolen)
    (run / name).symlink_to(stolen)
    assert list_runs() == []
    with pytest.raises(CheckpointError, match="points outside its folder"):
        load_run(run.name)


def test_stale_temporary_folders_are_removed_and_fresh_ones_kept(tmp_path: Path) -> None:
    old, fresh = tmp_path / ".tmp-a-0001", tmp_path / ".tmp-b-0002"
    for folder in (old, fresh):
        folder.mkdir()
        (folder / ck.MODEL_FILE).write_bytes(b"x" * 1000)
    outside = tmp_path / "keep"
    outside.mkdir()
    (outside / "precious").write_text("x")
    link = tmp_path / ".tmp-link-0003"
    link.symlink_to(outside, target_is_directory=True)
    hour_ago = time.time() - 3600
    for path in (old, link):
        os.utime(path, (hour_ago, hour_ago), follow_symlinks=False)
    tiny_run(tmp_path, "a-run")
    removed = remove_stale_temp(tmp_path)
    assert sorted(p.name for p in removed) == [".tmp-a-0001", ".tmp-link-0003"]
    assert not old.exists()
    assert not os.path.lexists(link)
    assert fresh.is_dir()
    assert (outside / "precious").is_file()  # a symlink is unlinked, never followed
    assert [r.name for r in list_runs(tmp_path)] == ["a-run"]


# --- a local BERT folder ---------------------------------------------------------------------------


@pytest.fixture
def bert(tmp_path: Path) -> Path:
    return tiny_bert_folder(tmp_path / "bert")


def test_the_tiny_bert_folder_loads(bert: Path) -> None:
    model, tokenizer = load_pretrained(bert, device="cpu")
    assert (model.cfg.n_layers, model.cfg.n_heads, model.cfg.d_model) == (2, 2, 16)
    assert tokenizer.encode("猫").ids


def test_a_hostile_bert_config_is_refused_at_once(bert: Path, nothing_built: None) -> None:
    edit(bert / "config.json", max_position_embeddings=2**31)
    start = time.perf_counter()
    with pytest.raises(ValueError, match="max_position_embeddings=2147483648") as err:
        load_pretrained(bert, device="cpu")
    assert time.perf_counter() - start < 1.0
    assert str(bert / "config.json") in str(err.value)


def test_a_bert_refusal_is_remembered_until_the_folder_changes(bert: Path, monkeypatch) -> None:
    good = (bert / "config.json").read_text()
    edit(bert / "config.json", max_position_embeddings=2**31)
    reads: list[Path] = []
    real = mf.read_json_file
    monkeypatch.setattr(loader, "read_json_file", lambda path, *a: reads.append(path) or real(path, *a))
    for _ in range(2):
        with pytest.raises(ValueError, match="max_position_embeddings"):
            load_pretrained(bert, device="cpu")
    assert len(reads) == 1  # the second visitor is answered without reading a file
    (bert / "config.json").write_text(good)
    assert load_pretrained(bert, device="cpu")[0].cfg.max_len == 64
    assert len(reads) == 2


@pytest.mark.parametrize("name", ["config.json", "model.safetensors", "tokenizer.json"])
def test_a_bert_file_symlinked_from_outside_is_refused(bert: Path, tmp_path: Path, name: str) -> None:
    stolen = tmp_path / "elsewhere" / name
    stolen.parent.mkdir()
    (bert / name).rename(stolen)
    (bert / name).symlink_to(stolen)
    with pytest.raises(ValueError, match="points outside its folder"):
        load_pretrained(bert, device="cpu")


def test_the_bounds_are_stated_once_and_admit_the_bundled_minilm() -> None:
    model, _ = load_pretrained("minilm", device="cpu")
    for field, (least, most) in CONFIG_BOUNDS.items():
        value = getattr(model.cfg, field)
        assert value is None or least <= value <= most, field
    assert model.cfg.n_params() <= MAX_MODEL_PARAMS
    assert torch.is_tensor(next(model.parameters()))


@pytest.mark.parametrize(
    "cfg",
    [
        EncoderConfig(vocab_size=11, max_len=9, d_model=8, n_heads=2, n_layers=2, d_embed=4),
        EncoderConfig(vocab_size=11, max_len=9, d_model=8, n_heads=2, n_layers=2, lm_head="mlm", norm="pre"),
        EncoderConfig(
            vocab_size=11, max_len=9, d_model=8, n_heads=2, n_layers=1, lm_head="tied", causal=True
        ),
    ],
)
def test_expected_shapes_with_factorised_embeddings_and_lm_heads(cfg: EncoderConfig) -> None:
    real = {k: tuple(v.shape) for k, v in Encoder(cfg).state_dict().items()}
    assert list(expected_shapes(cfg).items()) == list(real.items())


def test_expected_shapes_run_no_reference_kernels_in_a_fresh_process() -> None:
    """On the meta device torch runs a parameter's initialiser (and the sinusoidal table's
    arithmetic) through Python reference kernels whose first call imports torch._dynamo: 1.2 s
    of a fresh server's first page. The shape check runs none of them."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from tformer.model.config import EncoderConfig\n"
        "from tformer.model.model_files import expected_shapes\n"
        "expected_shapes(EncoderConfig(vocab_size=11, max_len=9, d_model=8, n_heads=2, n_layers=1))\n"
        "expected_shapes(EncoderConfig(vocab_size=30, max_len=9, d_model=8, n_heads=2, n_layers=1,"
        " pos_encoding='learned', type_vocab_size=2, embed_norm=True, lm_head='mlm'))\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "False", out.stderr


def test_a_folder_loads_the_same_model_without_the_initialisers_it_overwrites(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """load_model_folder builds the encoder under NoInit: every tensor of its state dict is the
    checkpoint's, exactly as when the initialisers ran first."""
    import contextlib

    folder = tiny_bert_folder(tmp_path / "bert")
    skipped = loader.load_model_folder(folder).model.state_dict()
    monkeypatch.setattr(loader, "NoInit", contextlib.nullcontext)
    initialised = loader.load_model_folder(folder).model.state_dict()
    assert list(skipped) == list(initialised)
    for name, value in initialised.items():
        assert torch.equal(skipped[name], value), name
