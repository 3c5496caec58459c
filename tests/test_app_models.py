"""Your own model in the app: TFORMER_MODELS_DIR's tiny RoBERTa (with its MLM head) and tiny
GPT-2 (saved by transformers) on every page; the sidebar's list, the share link naming the
model, refused folders said in the sidebar; the Linear -> Softmax -> Output page against
transformers' own LM heads, in English and in Chinese."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("streamlit")
pytest.importorskip("transformers")
from streamlit.testing.v1 import AppTest

from tformer.ui.registry import PAGES as SPECS

from ._drive import Target, explore
from ._i18n_check import english_words, visible_strings
from ._models_dir import models_dir
from .test_app_callbacks import drew_something, open_at
from .test_app_pages import assert_clean, charts

TEXT = "The fox <mask> over the lazy dog."
ZH_TEXT = "注意力机制让每个位置都能看到其他所有位置"


@pytest.fixture(scope="session")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return models_dir(tmp_path_factory)


@pytest.fixture
def env(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TFORMER_MODELS_DIR", str(folder))
    return folder


def sidebar_text(at: AppTest) -> str:
    parts = [*at.sidebar.info, *at.sidebar.error, *at.sidebar.warning, *at.sidebar.caption]
    return " ".join(e.value for e in parts)


# --- every page with each model ------------------------------------------------------------------


@pytest.mark.parametrize("model", ["roberta_mlm", "gpt2"])
def test_every_registered_page_opens_with_each_local_model(env: Path, model: str) -> None:
    at = open_at("app.py", source="folder", model=model, text=TEXT)
    assert_clean(at)
    for spec in SPECS:
        at.switch_page(spec.script).run()
        assert_clean(at)
        assert at.radio(key="source").value == "folder", spec.script
        assert at.selectbox(key="model").value == model, spec.script
        if spec.needs_text:
            assert drew_something(at), f"{spec.script} drew nothing with {model}"


def test_the_sidebar_lists_each_model_with_family_and_parameters(env: Path) -> None:
    at = open_at(source="folder")
    assert_clean(at)
    box = at.selectbox(key="model")
    assert box.value == "gpt2"  # the first by name
    assert [o.split(" · ")[:2] for o in box.options] == [["gpt2", "GPT-2"], ["roberta_mlm", "RoBERTa"]]
    caption = sidebar_text(at)
    assert "GPT-2: 2 x 4 x 32 (layers x heads x d_model)" in caption
    assert "parameters" in caption
    assert charts(at)


def test_the_share_link_names_the_model_and_a_pick_changes_it(env: Path) -> None:
    at = open_at(source="folder", model="roberta_mlm")
    assert_clean(at)
    assert at.query_params["source"] == "folder"
    assert at.query_params["model"] == "roberta_mlm"
    at.selectbox(key="model").set_value("gpt2").run()
    assert_clean(at)
    assert at.query_params["model"] == "gpt2"
    # the masks page then says the causal mask is GPT-2's own
    at.switch_page("pages/masks.py").run()
    assert_clean(at)
    assert any("is causal: its own mask" in i.value for i in at.info)
    assert any("This is the model's own mask" in c.value for c in at.caption)


def test_a_link_to_a_model_that_is_not_there_says_so_and_shows_the_first(env: Path) -> None:
    at = open_at("app.py", source="folder", model="no-such-model")
    assert_clean(at)
    assert "The model no\\-such\\-model is not in this server's TFORMER_MODELS_DIR" in sidebar_text(at)
    at.switch_page("pages/attention.py").run()
    assert_clean(at)
    assert at.selectbox(key="model").value == "gpt2"
    assert charts(at)


def test_a_link_to_a_local_model_on_a_server_without_a_models_folder(monkeypatch) -> None:
    monkeypatch.delenv("TFORMER_MODELS_DIR", raising=False)
    at = open_at("app.py", source="folder", model="gpt2")
    assert_clean(at)
    assert "names no models folder (TFORMER_MODELS_DIR)" in sidebar_text(at)
    at.switch_page("pages/attention.py").run()
    assert at.radio(key="source").value != "folder"
    assert charts(at)


def test_refused_folders_show_their_reason_in_the_sidebar_and_nothing_breaks(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "bad"
    for name, config in {
        "broken": "{not json",
        "t5": json.dumps({"model_type": "t5", "d_model": 8}),
        "huge": json.dumps(
            {
                "model_type": "gpt2",
                "vocab_size": 50257,
                "n_positions": 1024,
                "n_embd": 65536,
                "n_layer": 1000,
                "n_head": 64,
            }
        ),
        "**bold**": json.dumps({"model_type": "t5"}),  # markdown in a folder name stays text
    }.items():
        (bad / name).mkdir(parents=True)
        (bad / name / "config.json").write_text(config)
    monkeypatch.setenv("TFORMER_MODELS_DIR", f"{folder}:{bad}")  # two models folders
    at = open_at(source="folder", model="roberta_mlm")
    assert_clean(at)
    assert at.selectbox(key="model").value == "roberta_mlm"
    assert charts(at)
    said = sidebar_text(at)
    (box,) = [e for e in at.sidebar.expander if e.label == "Not loaded from TFORMER_MODELS_DIR: 4"]
    assert not box.proto.expanded  # a model loads: the reasons wait in a closed box
    assert "broken: " in said
    assert "is not valid JSON" in said
    assert "model\\_type='t5'" in said
    assert "is not supported" in said
    assert "n\\_embd=65536 must be an integer from 1 to" in said
    assert "\\*\\*bold\\*\\*: " in said  # escaped: shown as typed, not as bold
    # only refused folders: the sidebar says so, the page asks to fix the settings
    monkeypatch.setenv("TFORMER_MODELS_DIR", str(bad))
    at = open_at(source="folder")
    assert not at.exception
    assert not at.error
    assert "No folder in TFORMER_MODELS_DIR holds a model this app can load" in sidebar_text(at)
    assert at.sidebar.expander[0].proto.expanded  # nothing loads: the reasons are open
    assert any("Fix the model settings" in i.value for i in at.info)


def test_a_folder_the_full_check_refuses_is_said_in_the_sidebar(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """config.json alone looks fine (the list offers it); loading finds its tokenizer larger than
    its vocabulary: the sidebar says why, the page shows no model."""
    wrong = tmp_path / "models" / "small-vocab"
    shutil.copytree(folder / "gpt2", wrong)
    config = json.loads((wrong / "config.json").read_text())
    (wrong / "config.json").write_text(json.dumps({**config, "vocab_size": 100}))
    monkeypatch.setenv("TFORMER_MODELS_DIR", str(wrong.parent))
    at = open_at(source="folder")
    assert not at.exception
    errors = [e.value for e in at.sidebar.error]
    assert len(errors) == 1
    assert "small\\-vocab cannot be loaded" in errors[0]
    assert "vocab\\_size=100" in errors[0]
    assert "tokenizer" in errors[0]
    assert any("Fix the model settings" in i.value for i in at.info)
    # beside a model that loads: picking the refused one says why and stays on the one shown
    both = tmp_path / "both"
    shutil.copytree(wrong, both / "small-vocab")
    shutil.copytree(folder / "gpt2", both / "gpt2")
    monkeypatch.setenv("TFORMER_MODELS_DIR", str(both))
    at = open_at(source="folder", model="gpt2")
    assert_clean(at)
    at.selectbox(key="model").set_value("small-vocab").run()
    assert not at.exception
    (error,) = [e.value for e in at.sidebar.error]
    assert "small\\-vocab cannot be loaded" in error
    assert "gpt2 is still shown" in error
    assert at.selectbox(key="model").value == "gpt2"
    assert at.query_params["model"] == "gpt2"
    assert charts(at)
    assert not at.main.error
    at.run()  # the next rerun: the model it stayed on, and nothing more to say
    assert_clean(at)
    assert at.selectbox(key="model").value == "gpt2"
    assert charts(at)


# --- Linear -> Softmax -> Output ----------------------------------------------------------------


def bars(at: AppTest) -> dict:
    return next(c for c in charts(at) if c["layout"].get("meta", {}).get("k"))


def reference_probs(folder: Path, variant: str, text: str, position: int, t: float) -> np.ndarray:
    """transformers' own LM head on the folder: softmax(logits / T) at ``position``."""
    import torch
    import transformers as hf
    from tokenizers import Tokenizer

    cls = hf.GPT2LMHeadModel if variant == "gpt2" else hf.RobertaForMaskedLM
    model = cls.from_pretrained(str(folder / variant)).eval()
    ids = Tokenizer.from_file(str(folder / variant / "tokenizer.json")).encode(text).ids
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, position].double()
    return torch.softmax(logits / t, -1).numpy()


@pytest.mark.parametrize("variant", ["gpt2", "roberta_mlm"])
def test_the_top_tokens_are_transformers_own_predictions(env: Path, variant: str) -> None:
    params = {"predictions.temperature": "0.5"}
    at = open_at("pages/predictions.py", source="folder", model=variant, text=TEXT, **params)
    assert_clean(at)
    box = at.selectbox(key="predictions.position")
    position = box.value
    if variant == "roberta_mlm":  # opens on the <mask>
        assert "<mask>" in box.options[position]
    else:  # opens on the last token: what follows the text
        assert position == len(box.options) - 1
    fig = bars(at)
    from .test_app_pages import decode

    shown = decode(fig["data"][0]["x"])
    want = np.sort(reference_probs(env, variant, TEXT, position, 0.5))[::-1][: fig["layout"]["meta"]["k"]]
    np.testing.assert_allclose(shown, want, atol=1e-5)
    assert fig["layout"]["meta"]["k"] == 10
    assert at.latex
    assert "T" in at.latex[0].value  # the formula of the softmax at a temperature


def test_gpt2_generates_greedily_as_transformers_does(env: Path) -> None:
    import torch
    import transformers as hf
    from tokenizers import Tokenizer

    at = open_at("pages/predictions.py", source="folder", model="gpt2", text="the quick brown")
    assert_clean(at)
    ids = Tokenizer.from_file(str(env / "gpt2" / "tokenizer.json")).encode("the quick brown").ids
    model = hf.GPT2LMHeadModel.from_pretrained(str(env / "gpt2")).eval()
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), max_new_tokens=5, do_sample=False, pad_token_id=0)
    tok = Tokenizer.from_file(str(env / "gpt2" / "tokenizer.json"))
    want = tok.decode(out[0, len(ids) :].tolist(), skip_special_tokens=False)
    assert any(t.value == f"the text continued: {want}" for t in at.text)
    heat = next(c for c in charts(at) if c["layout"].get("meta", {}).get("rows") == 5)
    assert heat["layout"]["meta"]["cols"] == len(ids) + 5
    at.number_input(key="predictions.n_new").set_value(2).run()
    assert_clean(at)
    assert next(c for c in charts(at) if c["layout"].get("meta", {}).get("rows") == 2)


def test_a_model_without_an_output_head_says_so(env: Path) -> None:
    at = open_at("pages/predictions.py", source="scratch")
    assert_clean(at)
    assert any("has no output head" in i.value for i in at.info)
    (only,) = charts(at)  # where the model ends, not made-up predictions
    assert "last hidden state" in only["layout"]["title"]["text"]
    assert not only["layout"]["meta"].get("k")


def check(at: AppTest, target: Target, option: str | None) -> None:
    assert not at.exception, (target.key, option, [e.message for e in at.exception])
    assert not at.error, (target.key, option, [e.value for e in at.error])


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("variant", ["gpt2", "roberta_mlm"])
def test_every_widget_of_the_predictions_page_is_driven(env: Path, lang: str, variant: str) -> None:
    text = ZH_TEXT + " <mask>" if variant == "roberta_mlm" else ZH_TEXT
    at = open_at("pages/predictions.py", source="folder", model=variant, text=text, lang=lang)
    assert_clean(at)
    driven = explore(at, check, keep=lambda t: not t.sidebar)
    want = {"predictions.position", "predictions.temperature", "predictions.k"}
    if variant == "gpt2":
        want |= {"predictions.n_new", "layer", "head"}
    assert want <= {k for k, v in driven.items() if v}, driven
    if lang == "zh":
        # token text may stay as it is: the predicted tokens, the generated ones (text and table)
        continued = [t.value.split("：", 1)[1] for t in at.text if "：" in t.value]  # after 续写的文本：
        shown = [*bars(at)["layout"]["meta"]["labels"], *continued]
        for table in at.dataframe:
            shown += [str(v) for v in table.value.to_numpy().ravel()]
        tokens = [w for s in shown for w in re.findall(r"[A-Za-z][A-Za-z0-9_'’]*", str(s))]
        left = english_words(visible_strings(at), tokens)
        assert not left, f"English left on the predictions page: {left}"


@pytest.mark.parametrize(("model", "said"), [("gpt2", True), ("roberta_mlm", False)])
def test_the_head_finder_says_a_causal_model_has_no_next_token_heads(
    env: Path, model: str, said: bool
) -> None:
    at = open_at("pages/finder.py", source="folder", model=model, **{"finder.role": "next"})
    assert_clean(at)
    assert any("no head can attend to the next token" in i.value for i in at.info) == said


@pytest.mark.parametrize(
    ("page", "params"),
    [
        ("pages/masks.py", {"masks.kind": "causal"}),
        ("pages/masks.py", {"masks.kind": "padding"}),
        ("pages/finder.py", {"finder.role": "next"}),
    ],
)
def test_what_the_pages_say_about_gpt2_is_in_chinese(env: Path, page: str, params: dict[str, str]) -> None:
    at = open_at(page, source="folder", model="gpt2", text=ZH_TEXT, lang="zh", **params)
    assert_clean(at)
    assert at.info  # the causal mask is its own / padding does not apply / no next-token heads
    left = english_words(visible_strings(at), ["gpt2"])
    assert not left, f"English left on {page}: {left}"
