"""Linear -> Softmax -> Output: logits equal transformers' heads, softmax with temperature, top-k,
and GPT-2's greedy generation equal to transformers' generate."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers as hf

from tformer import Encoder
from tformer.model.capture import capture_text
from tformer.model.model_loader import load_model_folder
from tformer.model.predictions import (
    MAX_NEW_TOKENS,
    generate_greedy,
    output_head_kind,
    output_logits,
    predict,
    softmax_with_temperature,
    top_k,
)
from tformer.model.tokenizer import scratch_tokenizer, visible_label

from . import _hf_models as H
from ._models import tiny

HEADS = {
    "gpt2": hf.GPT2LMHeadModel,
    "bert_mlm": hf.BertForMaskedLM,
    "roberta_mlm": hf.RobertaForMaskedLM,
    "distilbert_mlm_sinusoidal": hf.DistilBertForMaskedLM,
}


@pytest.fixture(scope="session")
def hf_root(tmp_path_factory) -> Path:
    return H.session_root(tmp_path_factory)


def reference_head(folder: Path, variant: str):
    return HEADS[variant].from_pretrained(str(folder), attn_implementation="eager").eval()


@pytest.mark.parametrize("variant", list(HEADS))
def test_logits_equal_the_reference_head(hf_root: Path, variant: str) -> None:
    folder = H.folder_of(hf_root, variant)
    loaded = load_model_folder(folder)
    assert output_head_kind(loaded.model) == "lm"
    ids = torch.tensor([loaded.tokenizer.encode(H.TEXT).ids])
    ours = output_logits(loaded.model, ids)  # [batch, pos, vocab]
    with torch.inference_mode():
        theirs = reference_head(folder, variant)(input_ids=ids).logits
    assert ours.shape == theirs.shape
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=0)


def test_predict_at_a_position_equals_the_reference_softmax(hf_root: Path) -> None:
    folder = H.folder_of(hf_root, "bert_mlm")
    loaded = load_model_folder(folder)
    tok = loaded.tokenizer
    text = "the quick [MASK] fox"
    enc = tok.encode(text)
    pos = enc.tokens.index("[MASK]")
    with torch.inference_mode():
        ref = reference_head(folder, "bert_mlm")(input_ids=torch.tensor([enc.ids])).logits[0, pos]
    for t in (0.5, 1.0, 2.0):
        p = predict(loaded.model, tok, text, pos, temperature=t, k=5)
        want = torch.softmax(ref.double() / t, dim=-1).numpy()
        np.testing.assert_allclose(p.probs, want, atol=1e-5, rtol=0)
        assert p.top_ids == tuple(int(i) for i in np.argsort(-want, kind="stable")[:5])
        assert p.top_probs == tuple(sorted(p.top_probs, reverse=True))
        assert not p.predicts_next
        decoded = [tok.backend.decode([i], skip_special_tokens=False) for i in p.top_ids]
        assert all(decoded)
        assert p.top_labels == tuple(visible_label(d) for d in decoded)
    assert predict(loaded.model, tok, text, -1).position == len(enc.ids) - 1


def test_temperature_sharpens_and_flattens() -> None:
    z = np.array([2.0, 1.0, 0.0, -1.0])
    cold, one, hot = (softmax_with_temperature(z, t) for t in (0.1, 1.0, 10.0))
    for p in (cold, one, hot):
        assert abs(p.sum() - 1) < 1e-12
    assert cold[0] > one[0] > hot[0] > 0.25
    np.testing.assert_allclose(one, np.exp(z) / np.exp(z).sum(), rtol=1e-12)
    for bad in (0, -1.0, float("nan"), float("inf"), 1e6):
        with pytest.raises(ValueError, match="temperature="):
            softmax_with_temperature(z, bad)


def test_top_k_orders_breaks_ties_by_id_and_bounds_k() -> None:
    ids, values = top_k(np.array([0.1, 0.4, 0.1, 0.4]), 3)
    assert ids.tolist() == [1, 3, 0]
    assert values.tolist() == [0.4, 0.4, 0.1]
    assert top_k(np.array([0.5, 0.5]), 10)[0].tolist() == [0, 1]
    for bad in (0, 101, 2.0, True):
        with pytest.raises(ValueError, match="k="):
            top_k(np.ones(4), bad)


def test_task_head_of_a_from_scratch_encoder() -> None:
    tok = scratch_tokenizer(max_len=64)
    model = Encoder(tiny(vocab_size=tok.vocab_size, n_outputs=5)).eval()
    assert output_head_kind(model) == "task"
    text = "copy these words"
    ids = tok.encode(text).ids
    p = predict(model, tok, text, 1, k=5, labels=["a", "b", "c", "d", "e"])
    with torch.inference_mode():
        probs = model([ids])[0, 1].double().numpy()  # forward's own softmax
    np.testing.assert_allclose(p.probs, probs, atol=1e-6, rtol=0)
    assert set(p.top_labels) == {"a", "b", "c", "d", "e"}
    with pytest.raises(ValueError, match="3 labels given for 5 outputs"):
        predict(model, tok, text, 1, labels=["a", "b", "c"])


def test_no_head_no_prediction(hf_root: Path) -> None:
    loaded = load_model_folder(H.folder_of(hf_root, "electra"))
    assert output_head_kind(loaded.model) is None
    with pytest.raises(ValueError, match="no output head"):
        predict(loaded.model, loaded.tokenizer, "a", 0)
    with pytest.raises(ValueError, match="position=99"):
        predict(load_model_folder(H.folder_of(hf_root, "bert_mlm")).model, loaded.tokenizer, "a", 99)


def test_greedy_generation_equals_transformers_generate(hf_root: Path) -> None:
    folder = H.folder_of(hf_root, "gpt2")
    loaded = load_model_folder(folder)
    tok = loaded.tokenizer
    prompt = "the quick brown"
    gen = generate_greedy(loaded.model, tok, prompt, n_new=6)
    ids = torch.tensor([tok.encode(prompt).ids])
    ref = reference_head(folder, "gpt2")
    with torch.inference_mode():
        out = ref.generate(ids, max_new_tokens=6, do_sample=False, pad_token_id=ref.config.eos_token_id)
    assert gen.new_ids == tuple(out[0, ids.shape[1] :].tolist())
    assert len(gen.new_ids) == 6
    assert not gen.stopped_at_max_len
    # Step s: the attention of the position that chose token s, over every earlier position.
    n = len(gen.prompt_ids)
    full = capture_text(loaded.model, tok, prompt, names=["pattern"])
    np.testing.assert_allclose(gen.attention[0], full.pattern[:, :, -1, :], atol=1e-6)
    for s, rows in enumerate(gen.attention):
        assert rows.shape == (H.LAYERS, H.HEADS, n + s)
        np.testing.assert_allclose(rows.sum(-1), 1.0, atol=1e-5)
    with torch.inference_mode():
        res = ref(input_ids=out[:, :-1], output_attentions=True)
    last = np.stack([a[0, :, -1, :].numpy() for a in res.attentions])  # [layer, head, key_pos]
    np.testing.assert_allclose(gen.attention[-1], last, atol=1e-5)
    assert 0 < min(gen.new_probs)
    assert max(gen.new_probs) <= 1


def test_generation_stops_at_max_len_and_refuses_encoders(hf_root: Path) -> None:
    loaded = load_model_folder(H.folder_of(hf_root, "gpt2"))
    long_prompt = "the quick brown fox " * 40  # past 64 tokens: truncated to max_len
    gen = generate_greedy(loaded.model, loaded.tokenizer, long_prompt, n_new=3)
    assert gen.new_ids == ()
    assert gen.stopped_at_max_len
    for bad in (0, MAX_NEW_TOKENS + 1):
        with pytest.raises(ValueError, match="n_new="):
            generate_greedy(loaded.model, loaded.tokenizer, "a", n_new=bad)
    bert = load_model_folder(H.folder_of(hf_root, "bert_mlm"))
    with pytest.raises(ValueError, match="causal model with an LM head"):
        generate_greedy(bert.model, bert.tokenizer, "a")


@pytest.mark.parametrize(
    ("variant", "decoder", "embedding"),
    [
        ("bert_mlm", "cls.predictions.decoder.weight", "bert.embeddings.word_embeddings.weight"),
        ("gpt2", "lm_head.weight", "transformer.wte.weight"),
    ],
)
def test_a_stored_output_matrix_is_used_only_when_tied(
    hf_root: Path, tmp_path: Path, variant: str, decoder: str, embedding: str
) -> None:
    """Older checkpoints store the tied output matrix; an untied one is not what we compute."""
    from safetensors.torch import load_file, save_file

    folder = Path(shutil.copytree(H.folder_of(hf_root, variant), tmp_path / "tied"))
    w = load_file(str(folder / "model.safetensors"))
    w[decoder] = w[embedding].clone()
    save_file(w, str(folder / "model.safetensors"))
    tied = load_model_folder(folder)
    assert output_head_kind(tied.model) == "lm"
    assert tied.notes == load_model_folder(H.folder_of(hf_root, variant)).notes
    w[decoder] = w[embedding] + 0.5
    save_file(w, str(folder / "model.safetensors"))
    untied = load_model_folder(folder)
    assert output_head_kind(untied.model) is None
    assert any(decoder in note and "not tied" in note for note in untied.notes)
