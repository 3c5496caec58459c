"""Model folders on disk for the tests: a tiny saved run (as the Train page saves one) and a
tiny local BERT folder (as TFORMER_MODEL_DIR names one), both made in well under a second and
without transformers."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import save_file

from tformer.model.encoder import Encoder
from tformer.model.tokenizer import scratch_tokenizer
from tformer.training.checkpoints import save_run
from tformer.training.recipe import model_config
from tformer.training.tasks import TaskSpec, example_texts, task_tokenizer

SCRATCH_JSON = Path(__file__).resolve().parent.parent / "tformer" / "data" / "scratch_tokenizer.json"
RUN_TASK = TaskSpec("copy", length=8, vocab=6)


def tiny_run(root: Path, name: str = "tiny-copy", spec: TaskSpec = RUN_TASK) -> Path:
    """A saved run of a 1-layer, 2-head encoder on ``spec`` (random weights: the app shows
    any run the same way), with the task's held-out inputs as its examples."""
    cfg = model_config(spec, n_layers=1, n_heads=2, d_model=16)
    return save_run(
        root / name,
        Encoder(cfg).eval(),
        task_tokenizer(spec),
        task=dataclasses.asdict(spec),
        recipe={"steps": 1},  # a run of one update: the runs table reads only valid recipes
        history={"final": {"accuracy": 0.5, "step": 0}},
        examples=example_texts(spec, 3),
    )


def bert_config(**overrides: object) -> dict:
    """A BERT config.json for a 2-layer, 2-head, d_model 16 encoder over the scratch vocabulary."""
    hf = {
        "model_type": "bert",
        "architectures": ["BertModel"],
        "vocab_size": scratch_tokenizer().vocab_size,
        "hidden_size": 16,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 32,
        "max_position_embeddings": 64,
        "type_vocab_size": 2,
        "hidden_act": "gelu",
        "layer_norm_eps": 1e-12,
    }
    hf.update(overrides)
    return hf


def bert_shapes(hf: dict) -> dict[str, tuple[int, ...]]:
    """The tensors of a BertModel checkpoint of config ``hf``, by their names in the file."""
    d, f = hf["hidden_size"], hf["intermediate_size"]
    shapes: dict[str, tuple[int, ...]] = {
        "embeddings.word_embeddings.weight": (hf["vocab_size"], d),
        "embeddings.position_embeddings.weight": (hf["max_position_embeddings"], d),
        "embeddings.token_type_embeddings.weight": (hf["type_vocab_size"], d),
        "embeddings.LayerNorm.weight": (d,),
        "embeddings.LayerNorm.bias": (d,),
    }
    for i in range(hf["num_hidden_layers"]):
        layer = {
            "attention.self.query": (d, d),
            "attention.self.key": (d, d),
            "attention.self.value": (d, d),
            "attention.output.dense": (d, d),
            "attention.output.LayerNorm": (d,),
            "intermediate.dense": (f, d),
            "output.dense": (d, f),
            "output.LayerNorm": (d,),
        }
        for name, shape in layer.items():
            shapes[f"encoder.layer.{i}.{name}.weight"] = shape
            shapes[f"encoder.layer.{i}.{name}.bias"] = shape[:1]
    return shapes


def tiny_bert_folder(path: Path, **overrides: object) -> Path:
    """A local BERT folder: config.json, model.safetensors under BERT's tensor names (random
    values of the right shapes) and the scratch tokenizer.json."""
    hf = bert_config(**overrides)
    g = torch.Generator().manual_seed(5)
    tensors = {name: 0.1 * torch.randn(shape, generator=g) for name, shape in bert_shapes(hf).items()}
    path.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps(hf))
    shutil.copy(SCRATCH_JSON, path / "tokenizer.json")
    return path
