"""Tiny random models of every supported family, saved with transformers' own save_pretrained.

Each folder is what a researcher would copy into TFORMER_MODELS_DIR: config.json, the weights
(safetensors) and a tokenizer.json built here with the tokenizers library (WordPiece for the BERT
family, byte-level BPE for RoBERTa, XLM-R and GPT-2). Nothing is downloaded.

Every parameter is perturbed after transformers' initialisation, so that no two LayerNorms are
alike (all-ones gammas would hide a swapped mapping) and attention is far from uniform.
layer_norm_eps is 1e-2 where the family's config has the key, so a lost eps shows.
"""

from __future__ import annotations

from pathlib import Path

import torch
import transformers as hf
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, normalizers, pre_tokenizers, processors, trainers

CORPUS = [
    "the quick brown fox jumps over the lazy dog",
    "attention heads watch every token of the sentence at once",
    "transformers read words and weigh each one against the rest",
    "注意力机制让每个位置都能看到其他所有位置",
    "a model of language predicts the next word from the words before it",
    "emoji 🙂 and numbers 12345 and punctuation !?., are tokens too",
]
TEXT = "The fox 注意力 watches every token 🙂, at once!"
OTHER_TEXT = "a model"

HIDDEN, LAYERS, HEADS, FFN, POSITIONS = 32, 2, 4, 64, 64
EPS = 1e-2


def wordpiece_tokenizer() -> HFTokenizer:
    """[PAD] [UNK] [CLS] [SEP] [MASK] = 0..4, then characters and whole words; [CLS] text [SEP]."""
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = HFTokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=180, special_tokens=specials, min_frequency=1)
    tok.train_from_iterator(CORPUS, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
    )
    tok.decoder = decoders.WordPiece()
    return tok


def bytelevel_tokenizer(specials: list[str], roberta: bool) -> HFTokenizer:
    """Byte-level BPE; with ``roberta`` the text becomes <s> text </s> (<s>=0, <pad>=1, </s>=2)."""
    tok = HFTokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=roberta)
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(CORPUS, trainer)
    tok.decoder = decoders.ByteLevel()
    if roberta:
        tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=True)
    return tok


ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]


def _bert_kwargs(vocab: int, **overrides: object) -> dict:
    kw = dict(
        vocab_size=vocab,
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=FFN,
        max_position_embeddings=POSITIONS,
        layer_norm_eps=EPS,
        initializer_range=0.2,
    )
    kw.update(overrides)
    return kw


def build(family: str, **overrides: object) -> tuple[torch.nn.Module, HFTokenizer]:
    """(transformers model in eval mode, its tokenizer) for a variant named ``family``."""
    wp = wordpiece_tokenizer
    if family in ("bert", "bert_mlm"):
        tok = wp()
        cfg = hf.BertConfig(**_bert_kwargs(tok.get_vocab_size(), **overrides))
        model = (hf.BertForMaskedLM if family == "bert_mlm" else hf.BertModel)(cfg)
    elif family in ("roberta_mlm", "xlm-roberta"):
        tok = bytelevel_tokenizer(ROBERTA_SPECIALS, roberta=True)
        kw = _bert_kwargs(tok.get_vocab_size(), max_position_embeddings=POSITIONS + 2, type_vocab_size=1)
        kw.update(pad_token_id=1, bos_token_id=0, eos_token_id=2, **overrides)
        if family == "xlm-roberta":
            model = hf.XLMRobertaModel(hf.XLMRobertaConfig(**kw))
        else:
            model = hf.RobertaForMaskedLM(hf.RobertaConfig(**kw))
    elif family == "electra":
        tok = wp()
        kw = _bert_kwargs(tok.get_vocab_size(), embedding_size=16, **overrides)
        model = hf.ElectraForPreTraining(hf.ElectraConfig(**kw))
    elif family in ("distilbert", "distilbert_mlm_sinusoidal"):
        tok = wp()
        kw = dict(
            vocab_size=tok.get_vocab_size(),
            dim=HIDDEN,
            n_layers=LAYERS,
            n_heads=HEADS,
            hidden_dim=FFN,
            max_position_embeddings=POSITIONS,
            initializer_range=0.2,
            sinusoidal_pos_embds=family.endswith("sinusoidal"),
        )
        kw.update(overrides)
        cls = hf.DistilBertForMaskedLM if "mlm" in family else hf.DistilBertModel
        model = cls(hf.DistilBertConfig(**kw))
    elif family == "gpt2":
        tok = bytelevel_tokenizer(["<|endoftext|>"], roberta=False)
        eos = tok.token_to_id("<|endoftext|>")
        kw = dict(
            vocab_size=tok.get_vocab_size(),
            n_embd=HIDDEN,
            n_layer=LAYERS,
            n_head=HEADS,
            n_positions=POSITIONS,
            layer_norm_epsilon=EPS,
            initializer_range=0.2,
            bos_token_id=eos,
            eos_token_id=eos,
        )
        kw.update(overrides)
        model = hf.GPT2LMHeadModel(hf.GPT2Config(**kw))
    else:
        raise ValueError(family)
    _perturb(model, family)
    return model.eval(), tok


@torch.no_grad()
def _perturb(model: torch.nn.Module, family: str) -> None:
    g = torch.Generator().manual_seed(sum(map(ord, family)))
    for name, p in model.named_parameters():
        if family == "distilbert_mlm_sinusoidal" and "position_embeddings" in name:
            continue  # the sinusoid table is fixed by the formula
        p.add_(0.1 * torch.randn(p.shape, generator=g))


def save(model: torch.nn.Module, tok: HFTokenizer, folder: Path, safe: bool = True) -> Path:
    model.save_pretrained(folder, safe_serialization=safe)
    tok.save(str(folder / "tokenizer.json"))
    return folder


FAMILY_VARIANTS = (
    "bert_mlm",
    "roberta_mlm",
    "xlm-roberta",
    "electra",
    "distilbert",
    "distilbert_mlm_sinusoidal",
    "gpt2",
)
# The base class transformers computes hidden states with, per variant.
BASE_CLASS = {
    "bert": hf.BertModel,
    "bert_mlm": hf.BertModel,
    "roberta_mlm": hf.RobertaModel,
    "xlm-roberta": hf.XLMRobertaModel,
    "electra": hf.ElectraModel,
    "distilbert": hf.DistilBertModel,
    "distilbert_mlm_sinusoidal": hf.DistilBertModel,
    "gpt2": hf.GPT2Model,
}

_ROOT: list[Path] = []
_FOLDERS: dict[str, Path] = {}


def session_root(tmp_path_factory) -> Path:
    """One folder for the whole session's models: each test file's session fixture calls this."""
    if not _ROOT:
        _ROOT.append(tmp_path_factory.mktemp("hf_models"))
    return _ROOT[0]


def folder_of(root: Path, variant: str) -> Path:
    """The saved folder of ``variant`` (built once per test session; tests must not edit it:
    copy it with shutil.copytree first)."""
    if variant not in _FOLDERS:
        torch.manual_seed(0)
        model, tok = build(variant)
        _FOLDERS[variant] = save(model, tok, root / variant)
    return _FOLDERS[variant]


def reference(folder: Path, variant: str) -> torch.nn.Module:
    """transformers' base model on ``folder``, eager attention (so it returns the weights)."""
    return BASE_CLASS[variant].from_pretrained(str(folder), attn_implementation="eager").eval()
