"""Model folders are untrusted: every refusal is one ModelFolderError naming the file and the
problem, config.json's sizes are refused before anything is allocated, and a pickle that is
not weights-only never runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

import tformer.model.model_files
import tformer.model.model_loader
from tformer.i18n import use_language
from tformer.model.model_files import MAX_MODEL_PARAMS, ModelFolderError
from tformer.model.model_loader import load_model_folder
from tformer.model.pretrained import load_pretrained

from . import _hf_models as H


@pytest.fixture(scope="session")
def hf_root(tmp_path_factory) -> Path:
    return H.session_root(tmp_path_factory)


@pytest.fixture
def bert(hf_root: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(H.folder_of(hf_root, "bert_mlm"), tmp_path / "bert"))


@pytest.fixture
def gpt2(hf_root: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(H.folder_of(hf_root, "gpt2"), tmp_path / "gpt2"))


@pytest.fixture
def no_allocation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Building the model fails the test: what is refused must be refused before it."""

    real = tformer.model.model_loader.Encoder

    def allocate(*args, **kwargs):
        if torch.get_default_device().type == "meta":  # shapes only: no memory
            return real(*args, **kwargs)
        raise AssertionError("the model was allocated before the folder was refused")

    monkeypatch.setattr(tformer.model.model_loader, "Encoder", allocate)


def test_the_allocation_guard_fires_on_a_folder_that_loads(bert: Path, no_allocation) -> None:
    """Proof that `no_allocation` can fail: a good folder gets as far as building the model."""
    with pytest.raises(AssertionError, match="allocated"):
        load_model_folder(bert)


def edit_config(folder: Path, **changes) -> None:
    path = folder / "config.json"
    hf = json.loads(path.read_text())
    hf.update(changes)
    path.write_text(json.dumps(hf))


def refusal(folder: Path, *fragments: str) -> str:
    """The message of the refusal; it must contain every fragment."""
    with pytest.raises(ModelFolderError) as info:
        load_model_folder(folder)
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    return message


# --- config.json -------------------------------------------------------------------------------


def test_unsupported_architecture_names_the_type_and_the_supported_ones(bert: Path) -> None:
    edit_config(bert, model_type="t5", architectures=["T5Model"])
    refusal(
        bert,
        "config.json",
        "model_type='t5'",
        "T5Model",
        "bert, roberta, xlm-roberta, electra, distilbert, gpt2",
    )


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"num_hidden_layers": 10**9}, "num_hidden_layers=1000000000 must be an integer from 1 to 128"),
        ({"vocab_size": 10**12}, "vocab_size=1000000000000 must be an integer from 1 to 1000000"),
        ({"hidden_size": "32"}, "hidden_size='32' must be an integer"),
        ({"num_attention_heads": True}, "num_attention_heads=True must be an integer"),
        ({"max_position_embeddings": -1}, "max_position_embeddings=-1"),
        ({"layer_norm_eps": float("nan")}, "layer_norm_eps=nan must be a number in (0, 1]"),
        ({"hidden_size": 8192, "intermediate_size": 32768, "num_attention_heads": 64}, "over the 400 M"),
        ({"hidden_act": "quick_gelu"}, "hidden_act='quick_gelu' is not supported"),
        ({"num_attention_heads": 5}, "d_model=32 is not divisible by n_heads=5"),
        ({"is_decoder": True}, "is_decoder=True is not supported"),
    ],
)
def test_config_is_refused_before_anything_is_allocated(
    bert: Path, no_allocation, changes: dict, fragment: str
) -> None:
    edit_config(bert, **changes)
    refusal(bert, "config.json", fragment)


def test_the_parameter_bound_counts_what_would_load(bert: Path, no_allocation) -> None:
    # Each number is within its own bound; together they pass MAX_MODEL_PARAMS.
    edit_config(bert, hidden_size=4096, num_attention_heads=32, intermediate_size=16384, num_hidden_layers=24)
    msg = refusal(bert, "config.json", "M parameters")
    assert f"{MAX_MODEL_PARAMS / 1e6:.0f} M" in msg


def test_gpt2_attention_variants_we_do_not_compute_are_refused(gpt2: Path) -> None:
    edit_config(gpt2, scale_attn_by_inverse_layer_idx=True)
    refusal(gpt2, "config.json", "scale_attn_by_inverse_layer_idx=True", "layer number")


def test_oversized_config_is_not_read(bert: Path) -> None:
    (bert / "config.json").write_text("{" + " " * (2 * 2**20) + "}")
    refusal(bert, "config.json", "over the 1 MB allowed")


@pytest.mark.parametrize("name", ["config.json", "tokenizer.json"])
def test_missing_files_are_named(bert: Path, name: str) -> None:
    (bert / name).unlink()
    refusal(bert, name)


def test_missing_weights_name_both_formats_and_shards_are_explained(bert: Path) -> None:
    (bert / "model.safetensors").unlink()
    refusal(bert, "model.safetensors or pytorch_model.bin")
    (bert / "model.safetensors.index.json").write_text("{}")
    refusal(bert, "shards")


# --- weights ------------------------------------------------------------------------------------


def test_shapes_that_disagree_with_config_are_refused_before_allocating(bert: Path, no_allocation) -> None:
    edit_config(bert, intermediate_size=48)
    refusal(
        bert, "model.safetensors", "bert.encoder.layer.0.intermediate.dense.weight", "[64, 32]", "[48, 32]"
    )


def test_fewer_layers_in_the_file_than_in_the_config(bert: Path, no_allocation) -> None:
    edit_config(bert, num_hidden_layers=3)
    refusal(bert, "model.safetensors", "lacks tensor", "encoder.layer.2.", "3 layers")


def test_a_tensor_with_no_place_is_refused(bert: Path) -> None:
    w = load_file(str(bert / "model.safetensors"))
    w["bert.encoder.layer.0.adapter.weight"] = torch.zeros(3)
    save_file(w, str(bert / "model.safetensors"))
    refusal(bert, "model.safetensors", "no place for", "adapter")


def test_non_finite_weights_are_refused(gpt2: Path) -> None:
    w = load_file(str(gpt2 / "model.safetensors"))
    w["transformer.h.1.mlp.c_fc.weight"][0, 0] = float("nan")
    save_file(w, str(gpt2 / "model.safetensors"))
    refusal(gpt2, "model.safetensors", "transformer.h.1.mlp.c_fc.weight", "NaN")


@pytest.mark.parametrize("damage", ["garbage", "truncated", "header only"])
def test_damaged_safetensors(bert: Path, damage: str) -> None:
    path = bert / "model.safetensors"
    data = path.read_bytes()
    cut = {
        "garbage": b"\x00not a safetensors file",
        "truncated": data[: len(data) // 2],
        "header only": data[:8],
    }
    path.write_bytes(cut[damage])
    refusal(bert, "model.safetensors cannot be read")


class RunsCode:
    """A pickle that runs code when loaded without weights_only (the attack being refused)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').close()",))


def test_a_pickle_that_is_not_weights_only_is_refused_and_never_runs(bert: Path, tmp_path: Path) -> None:
    marker = tmp_path / "code_ran"
    weights = load_file(str(bert / "model.safetensors"))
    (bert / "model.safetensors").unlink()
    torch.save({**weights, "payload": RunsCode(marker)}, bert / "pytorch_model.bin")
    refusal(bert, "pytorch_model.bin", "pickle", "exec", "none of its code ran")
    assert not marker.exists()
    with pytest.raises(ModelFolderError):
        load_pretrained(bert, device="cpu")  # the app's entry point refuses it the same way
    assert not marker.exists()
    # The payload is live: a plain (unsafe) load does run it. This is what was refused.
    torch.load(bert / "pytorch_model.bin", weights_only=False)
    assert marker.exists()


def test_a_pickle_of_tensors_not_in_a_mapping_is_refused(bert: Path) -> None:
    (bert / "model.safetensors").unlink()
    torch.save([torch.zeros(2)], bert / "pytorch_model.bin")
    refusal(bert, "pytorch_model.bin", "flat mapping of names to tensors")


def test_broken_zip_pickle(bert: Path) -> None:
    (bert / "model.safetensors").unlink()
    (bert / "pytorch_model.bin").write_bytes(b"PK\x03\x04 broken zip")
    refusal(bert, "pytorch_model.bin cannot be read")


def test_oversized_weights_are_not_read(bert: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tformer.model.model_files, "MAX_WEIGHTS_BYTES", 1000)
    refusal(bert, "model.safetensors", "allowed for a weights file")


# --- tokenizer ----------------------------------------------------------------------------------


def test_tokenizer_larger_than_the_embedding_is_refused(bert: Path, no_allocation) -> None:
    n = json.loads((bert / "config.json").read_text())["vocab_size"]
    edit_config(bert, vocab_size=100)  # the tokenizer is checked before the weights
    refusal(bert, "tokenizer.json", f"has {n} tokens", "config.json", "vocab_size=100")


def test_damaged_or_oversized_tokenizer(bert: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (bert / "tokenizer.json").write_text('{"model": ', encoding="utf-8")
    refusal(bert, "tokenizer.json")
    monkeypatch.setattr(tformer.model.model_loader, "MAX_TOKENIZER_BYTES", 4)
    # a refusal is remembered while the folder is unchanged: change the file, it is read again
    (bert / "tokenizer.json").write_text('{"model": null}', encoding="utf-8")
    refusal(bert, "tokenizer.json", "allowed for a tokenizer")


# --- the language of refusals ---------------------------------------------------------------------


def test_refusals_speak_chinese(bert: Path) -> None:
    edit_config(bert, model_type="t5", architectures=["T5Model"])
    with use_language("zh"), pytest.raises(ModelFolderError) as info:
        load_model_folder(bert)
    msg = str(info.value)
    assert "不支持" in msg
    assert "config.json" in msg
    assert "is not supported" not in msg
