"""Every supported family loads into our Encoder and equals transformers' own forward pass.

Per family (tiny random models built and saved by transformers, tests/_hf_models.py): the last
hidden state to 1e-4 and every layer's attention weights to 1e-5, on one text and on a padded
batch, through the hooked (explicit attention) path; the plain forward (SDPA) agrees with it;
every activation a model has is captured. transformers is imported only in tests.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from tformer.model.capture import available_names, capture_text
from tformer.model.model_files import ModelFolderError
from tformer.model.model_loader import load_model_folder
from tformer.model.pretrained import load_pretrained

from . import _hf_models as H

ENCODERS = [v for v in H.FAMILY_VARIANTS if v != "gpt2"]


@pytest.fixture(scope="session")
def hf_root(tmp_path_factory) -> Path:
    return H.session_root(tmp_path_factory)


def compare(model, ref, ids: torch.Tensor, mask: torch.Tensor | None = None) -> None:
    """Our hooked run against transformers (eager) on the same ids; pads are not compared."""
    out, cache = model.run_with_cache(ids, attention_mask=mask)
    with torch.inference_mode():
        res = ref(input_ids=ids, attention_mask=mask, output_attentions=True)
    keep = torch.ones_like(ids, dtype=torch.bool) if mask is None else mask.bool()
    torch.testing.assert_close(out[keep], res.last_hidden_state[keep], atol=1e-4, rtol=0)
    assert len(res.attentions) == model.cfg.n_layers
    for layer, theirs in enumerate(res.attentions):
        ours = cache["pattern", layer]  # [batch, head_index, query_pos, key_pos]
        assert ours.shape == theirs.shape
        rows = keep[:, None, :, None].expand_as(ours)  # real queries only
        torch.testing.assert_close(ours[rows], theirs[rows], atol=1e-5, rtol=0)


@pytest.mark.parametrize("variant", H.FAMILY_VARIANTS)
def test_family_matches_transformers_on_one_text(hf_root: Path, variant: str) -> None:
    folder = H.folder_of(hf_root, variant)
    loaded = load_model_folder(folder)
    ids = torch.tensor([loaded.tokenizer.encode(H.TEXT).ids])
    assert ids.shape[1] > 8  # a real sentence, not two specials
    compare(loaded.model, H.reference(folder, variant), ids)


@pytest.mark.parametrize("variant", ENCODERS)
def test_encoder_family_matches_transformers_on_a_padded_batch(hf_root: Path, variant: str) -> None:
    folder = H.folder_of(hf_root, variant)
    loaded = load_model_folder(folder)
    tok = loaded.tokenizer
    a, b = tok.encode(H.TEXT).ids, tok.encode(H.OTHER_TEXT).ids
    n = max(len(a), len(b))
    ids = torch.tensor([a + [tok.pad_id] * (n - len(a)), b + [tok.pad_id] * (n - len(b))])
    mask = torch.tensor([[1] * len(a) + [0] * (n - len(a)), [1] * len(b) + [0] * (n - len(b))])
    assert mask.sum() < mask.numel()  # there is padding
    compare(loaded.model, H.reference(folder, variant), ids, mask)


@pytest.mark.parametrize("variant", H.FAMILY_VARIANTS)
def test_plain_forward_equals_the_captured_path_and_every_hook_fires(hf_root: Path, variant: str) -> None:
    """The one explicit attention path (captured) and SDPA (plain forward) give one answer."""
    loaded = load_model_folder(H.folder_of(hf_root, variant))
    model, tok = loaded.model, loaded.tokenizer
    names = available_names(model.cfg)
    cap = capture_text(model, tok, H.TEXT, names=names)
    with torch.inference_mode():
        plain = model(torch.tensor([cap.encoded.ids]))[0].numpy()
    assert set(cap.names) == set(names)
    last = cap["ln_final_normalized"] if model.cfg.norm == "pre" else cap["resid_post"][-1]
    if model.cfg.norm == "post":
        torch.testing.assert_close(torch.from_numpy(last), torch.from_numpy(plain), atol=1e-5, rtol=0)
    torch.testing.assert_close(torch.from_numpy(cap.output), torch.from_numpy(plain), atol=1e-5, rtol=0)
    rows = cap.pattern.sum(-1)  # [layer, head_index, query_pos]
    torch.testing.assert_close(
        torch.from_numpy(rows), torch.ones_like(torch.from_numpy(rows)), atol=1e-5, rtol=0
    )


def test_family_quirks_in_the_configs(hf_root: Path) -> None:
    cfg = {v: load_model_folder(H.folder_of(hf_root, v)).model.cfg for v in H.FAMILY_VARIANTS}
    # RoBERTa / XLM-R: positions start at pad_token_id + 1 = 2; 66 rows leave 64 positions.
    assert cfg["roberta_mlm"].max_len == cfg["xlm-roberta"].max_len == H.POSITIONS
    assert cfg["roberta_mlm"].type_vocab_size == 1
    # ELECTRA: embeddings 16 wide, projected to 32.
    assert (cfg["electra"].d_embed_size, cfg["electra"].d_model) == (16, 32)
    # DistilBERT: no segment embeddings; its sinusoidal option is our sinusoidal encoding.
    assert cfg["distilbert"].type_vocab_size == 0
    assert cfg["distilbert"].pos_encoding == "learned"
    assert cfg["distilbert_mlm_sinusoidal"].pos_encoding == "sinusoidal"
    assert cfg["distilbert"].layer_norm_eps == 1e-12  # fixed in DistilBERT's code
    # GPT-2: causal, pre-norm, learned positions, tied LM head, its own eps and GELU.
    g = cfg["gpt2"]
    assert (g.causal, g.norm, g.pos_encoding, g.lm_head, g.activation) == (
        True,
        "pre",
        "learned",
        "tied",
        "gelu_tanh",
    )
    assert g.layer_norm_eps == H.EPS
    assert cfg["bert_mlm"].layer_norm_eps == H.EPS
    # The masked-LM heads found in the checkpoints.
    assert (
        cfg["bert_mlm"].lm_head
        == cfg["roberta_mlm"].lm_head
        == cfg["distilbert_mlm_sinusoidal"].lm_head
        == "mlm"
    )
    assert cfg["electra"].lm_head == cfg["distilbert"].lm_head == cfg["xlm-roberta"].lm_head == "none"


@pytest.mark.parametrize("variant", H.FAMILY_VARIANTS)
def test_parameter_count_is_the_config_s(hf_root: Path, variant: str) -> None:
    model = load_model_folder(H.folder_of(hf_root, variant)).model
    assert sum(p.numel() for p in model.parameters()) == model.cfg.n_params()


def test_unused_heads_are_reported_not_refused(hf_root: Path) -> None:
    notes = load_model_folder(H.folder_of(hf_root, "electra")).notes
    assert any("discriminator_predictions" in n for n in notes)
    assert load_model_folder(H.folder_of(hf_root, "gpt2")).notes == ()


@pytest.mark.parametrize("act", ["gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "relu"])
def test_each_gelu_variant_matches(tmp_path: Path, act: str) -> None:
    torch.manual_seed(0)
    ref, tok = H.build("bert", hidden_act=act)
    folder = H.save(ref, tok, tmp_path / act)
    loaded = load_model_folder(folder)
    ids = torch.tensor([loaded.tokenizer.encode(H.TEXT).ids])
    compare(loaded.model, H.reference(folder, "bert"), ids)


def test_gpt2_activation_and_epsilon_follow_the_config(tmp_path: Path) -> None:
    torch.manual_seed(0)
    ref, tok = H.build("gpt2", activation_function="gelu", layer_norm_epsilon=0.3)
    folder = H.save(ref, tok, tmp_path / "g")
    loaded = load_model_folder(folder)
    assert (loaded.model.cfg.activation, loaded.model.cfg.layer_norm_eps) == ("gelu", 0.3)
    compare(loaded.model, H.reference(folder, "gpt2"), torch.tensor([loaded.tokenizer.encode(H.TEXT).ids]))


def test_wrong_epsilon_would_be_caught(hf_root: Path) -> None:
    """The comparison is sharp enough to see a lost layer_norm_eps (1e-2 read as 1e-12)."""
    folder = H.folder_of(hf_root, "bert_mlm")
    loaded = load_model_folder(folder)
    wrong = type(loaded.model)(
        dataclasses.replace(loaded.model.cfg, layer_norm_eps=1e-12), init_weights=False
    )
    wrong.load_state_dict(loaded.model.state_dict())
    ids = torch.tensor([loaded.tokenizer.encode(H.TEXT).ids])
    with pytest.raises(AssertionError):
        compare(wrong.eval(), H.reference(folder, "bert_mlm"), ids)


@pytest.mark.parametrize("variant", ["gpt2", "roberta_mlm"])
def test_weights_only_pytorch_bin_loads_the_same(hf_root: Path, tmp_path: Path, variant: str) -> None:
    folder = shutil.copytree(H.folder_of(hf_root, variant), tmp_path / variant)
    weights = load_file(str(folder / "model.safetensors"))
    (folder / "model.safetensors").unlink()
    torch.save(weights, folder / "pytorch_model.bin")
    loaded = load_model_folder(folder)
    compare(loaded.model, H.reference(folder, variant), torch.tensor([loaded.tokenizer.encode(H.TEXT).ids]))


def test_old_style_names_load(hf_root: Path, tmp_path: Path) -> None:
    """TF-era gamma/beta LayerNorm names and GPT-2's saved causal-mask buffers."""
    folder = shutil.copytree(H.folder_of(hf_root, "gpt2"), tmp_path / "g")
    weights = load_file(str(folder / "model.safetensors"))
    for i in range(H.LAYERS):
        weights[f"transformer.h.{i}.attn.bias"] = torch.ones(1, 1, H.POSITIONS, H.POSITIONS).tril()
    save_file(weights, str(folder / "model.safetensors"))
    loaded = load_model_folder(folder)
    compare(loaded.model, H.reference(folder, "gpt2"), torch.tensor([loaded.tokenizer.encode(H.TEXT).ids]))

    bert = shutil.copytree(H.folder_of(hf_root, "bert_mlm"), tmp_path / "b")
    w = load_file(str(bert / "model.safetensors"))
    renamed = {
        k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
        for k, v in w.items()
    }
    assert renamed.keys() != w.keys()
    save_file(renamed, str(bert / "model.safetensors"))
    ours = load_model_folder(bert).model
    ref = load_model_folder(H.folder_of(hf_root, "bert_mlm")).model
    for (name, a), (_, b) in zip(ours.state_dict().items(), ref.state_dict().items(), strict=True):
        assert torch.equal(a, b), name


def test_sinusoid_table_that_is_not_the_formula_is_refused(hf_root: Path, tmp_path: Path) -> None:
    folder = shutil.copytree(H.folder_of(hf_root, "distilbert_mlm_sinusoidal"), tmp_path / "d")
    w = load_file(str(folder / "model.safetensors"))
    name = "distilbert.embeddings.position_embeddings.weight"
    w[name] = w[name] + 0.01
    save_file(w, str(folder / "model.safetensors"))
    with pytest.raises(ModelFolderError, match="sinusoid") as info:
        load_model_folder(folder)
    assert "model.safetensors" in str(info.value)
    assert name in str(info.value)


def test_load_pretrained_opens_every_family(hf_root: Path) -> None:
    for variant in H.FAMILY_VARIANTS:
        model, tok = load_pretrained(H.folder_of(hf_root, variant), device="cpu")
        assert not model.training
        assert tok.vocab_size <= model.cfg.vocab_size
