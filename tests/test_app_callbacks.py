"""Every path a reader can take: every page under every model source (MiniLM, from-scratch, a
trained run, a local BERT folder), every widget with a callback driven the way a browser
drives it (`tests/_drive.py` finds them from Streamlit's own widget metadata), and the trained
run's sidebar defects (picking a run crashed; a run by link showed MiniLM's English example
as [UNK]; an unlisted or broken run gave a blank page or the generic error box)."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from tformer.i18n import catalog
from tformer.training.tasks import TaskSpec
from tformer.ui.registry import PAGES as SPECS
from tformer.ui.registry import page_states
from tformer.ui.state import ViewState

from ._drive import Target, explore
from ._folders import tiny_bert_folder, tiny_run
from ._models_dir import models_dir
from .test_app_pages import APP, TIMEOUT, assert_clean, charts
from .test_app_why import train_here

GENERIC = (
    "Something went wrong while drawing this page",
    catalog("zh")["Something went wrong while drawing this page ({kind}): {err}"].split("（")[0],
)


@dataclasses.dataclass(frozen=True)
class Folders:
    runs: Path
    bert: Path
    examples: dict[str, list[str]]  # run name -> its task inputs
    models: Path  # TFORMER_MODELS_DIR: a tiny GPT-2 and a tiny RoBERTa with its MLM head


@pytest.fixture(scope="session")
def folders(tmp_path_factory: pytest.TempPathFactory) -> Folders:
    """Two saved runs of different tasks (the reverse one newer) and a local BERT folder."""
    runs = tmp_path_factory.mktemp("runs")
    tiny_run(runs, "tiny-copy")
    time.sleep(0.01)  # distinct creation times: newest first is reverse
    tiny_run(runs, "tiny-reverse", TaskSpec("reverse", length=6, vocab=5))
    examples = {
        p.name: json.loads((p / "run.json").read_text())["examples"] for p in runs.iterdir() if p.is_dir()
    }
    bert = tiny_bert_folder(tmp_path_factory.mktemp("models") / "bert")
    return Folders(runs, bert, examples, models_dir(tmp_path_factory))


@pytest.fixture
def env(folders: Folders, monkeypatch: pytest.MonkeyPatch) -> Folders:
    monkeypatch.setenv("TFORMER_RUNS_DIR", str(folders.runs))
    monkeypatch.setenv("TFORMER_MODEL_DIR", str(folders.bert))
    monkeypatch.setenv("TFORMER_MODELS_DIR", str(folders.models))
    return folders


def open_at(page: str = "pages/attention.py", **params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    if page != "app.py":
        at.switch_page(page).run()
    return at


def sidebar_text(at: AppTest) -> str:
    return " ".join(e.value for e in [*at.sidebar.info, *at.sidebar.error, *at.sidebar.warning])


def no_unknown_warning(at: AppTest) -> bool:
    return not any("unknown to this model's vocabulary" in w.value for w in at.warning)


# --- the trained run in the sidebar ----------------------------------------------------------------


def test_choosing_trained_runs_picks_the_newest_then_each_pick_shows_its_task_input(env: Folders) -> None:
    at = open_at()
    at.radio(key="source").set_value("run").run()
    assert_clean(at)
    assert at.selectbox(key="run").value == "tiny-reverse"  # the newest, not an empty box
    assert not any("Fix the model settings" in i.value for i in at.info)
    assert at.text_area(key="text").value == env.examples["tiny-reverse"][0]
    assert charts(at)
    assert no_unknown_warning(at)
    at.selectbox(key="run").set_value("tiny-copy").run()  # crashed: on_change took no args
    assert_clean(at)
    assert at.text_area(key="text").value == env.examples["tiny-copy"][0]
    at.run()  # the next rerun was blank
    assert_clean(at)
    assert charts(at)
    assert at.selectbox(key="run").value == "tiny-copy"
    at.text_area(key="text").input("a b a").run()  # a text typed afterwards stays
    at.run()
    assert at.text_area(key="text").value == "a b a"


def test_a_run_opened_by_link_shows_its_own_task_input(env: Folders) -> None:
    at = open_at(source="run", run="tiny-copy")
    assert_clean(at)
    assert at.selectbox(key="run").value == "tiny-copy"
    assert at.text_area(key="text").value == env.examples["tiny-copy"][0]
    ticks = [t.strip() for t in charts(at)[0]["layout"]["xaxis"]["ticktext"]]
    assert ticks == env.examples["tiny-copy"][0].split()
    assert "[UNK]" not in ticks
    assert no_unknown_warning(at)  # no banner about MiniLM and Chinese
    # a link that brings its own text for the run keeps it
    at = open_at(source="run", run="tiny-copy", text="c a b")
    assert at.text_area(key="text").value == "c a b"


def test_a_link_to_an_unlisted_run_says_so_and_shows_the_newest(env: Folders) -> None:
    at = open_at("app.py", source="run", run="no-such-run")  # AppTest's first run: the start page
    assert_clean(at)
    assert "no\\-such\\-run is not among the runs saved on this server" in sidebar_text(at)
    at.switch_page("pages/attention.py").run()
    assert_clean(at)
    assert at.selectbox(key="run").value == "tiny-reverse"
    assert charts(at)


def test_a_link_to_a_run_on_a_server_without_runs_says_so(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TFORMER_RUNS_DIR", str(tmp_path / "empty"))
    at = open_at("app.py", source="run", run="tiny-copy")
    assert_clean(at)
    assert "No trained run is saved on this server" in sidebar_text(at)
    at.switch_page("pages/attention.py").run()
    assert_clean(at)
    assert at.radio(key="source").value == "minilm"
    assert charts(at)


def test_a_broken_run_is_refused_by_file_and_field_and_the_refusal_is_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TFORMER_RUNS_DIR", str(tmp_path))
    run = tiny_run(tmp_path, "broken")
    config = run / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "max_len": 2**31}))
    for _ in range(2):  # a second visitor gets the same answer, from the remembered refusal
        start = time.perf_counter()
        at = open_at(source="run", run="broken")
        assert not at.exception
        refusal = " ".join(e.value for e in at.error)
        assert "Could not run trained run broken" in refusal
        assert str(config) in refusal
        assert "max_len=2147483648 must be an integer from 1 to 16384" in refusal
        assert time.perf_counter() - start < 20
    assert at.selectbox(key="run").value == "broken"  # the sidebar still offers the runs


def test_the_server_removes_stale_temporary_folders_when_it_starts(tmp_path: Path, monkeypatch) -> None:
    import os

    monkeypatch.setenv("TFORMER_RUNS_DIR", str(tmp_path))
    stale, fresh = tmp_path / ".tmp-gone-00000001", tmp_path / ".tmp-saving-00000002"
    for folder in (stale, fresh):
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(b"x" * 4096)
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    at = open_at("app.py")
    assert_clean(at)
    assert not stale.exists()
    assert fresh.is_dir()  # a save in progress is left alone


def test_an_error_before_the_page_body_is_a_short_message_not_the_generic_box(
    env: Folders, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tformer.ui.context as context

    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("a capture that went wrong")

    monkeypatch.setattr(context, "get_capture", broken)
    at = open_at()
    assert not at.exception  # raised inside page_context before its yield: the generic box
    assert any(GENERIC[0] in e.value and "KeyError" in e.value for e in at.error)
    assert at.sidebar.text_area(key="text")  # the frame is there: the reader can change course


# --- every source on every page --------------------------------------------------------------------

SOURCES = ["minilm", "scratch", "run", "local", "folder"]


def drew_something(at: AppTest) -> bool:
    return bool(at.get("plotly_chart") or at.get("arrow_data_frame") or at.metric or at.get("bidi_component"))


@pytest.mark.parametrize("source", SOURCES)
def test_every_page_opens_under_every_model_source(env: Folders, source: str) -> None:
    at = open_at("app.py", source=source, text="Birds sing at dawn.")
    for spec in SPECS:
        at.switch_page(spec.script).run()
        assert_clean(at)
        assert at.radio(key="source").value == source, spec.script
        if spec.needs_text:
            assert drew_something(at), f"{spec.script} drew nothing under {source}"
        if source == "run" and spec.needs_text:
            assert at.text_area(key="text").value == env.examples["tiny-reverse"][0]
            assert no_unknown_warning(at), spec.script


# --- every widget with a callback ------------------------------------------------------------------


def check(at: AppTest, target: Target, option: str | None) -> None:
    where = f"after {target.key} -> {option or 'changed'}"
    assert not at.exception, (where, [e.message for e in at.exception])
    generic = [e.value for e in at.error if e.value.startswith(GENERIC)]
    assert not generic, (where, generic)
    assert at.header, f"blank page {where}"


# View-state values that no widget with a callback sets: the lesson and its step (set by the
# lesson bar's plain buttons), the lesson's progress (set by its question's Check / Skip / Try
# again, driven in tests/test_app_lesson_questions.py) and train.snapshot (no widget binds it:
# the live view's slider keeps its position in its own widget state).
SET_BY_CODE = {"lesson", "lesson_step", "quiz", "train.snapshot"}
# Widgets that show only once a run with a role timeline exists (trained in this session, or
# saved with one): tests/test_app_train_roles.py trains such runs and drives both pickers'
# callbacks there, as Streamlit calls them, with the share link they write.
DRIVEN_WITH_A_TRAINED_RUN = {"train.role", "train.saved_role"}


def view_keys() -> set[str]:
    keys = {f.name for f in dataclasses.fields(ViewState) if f.name != "pages"}
    for page, cls in page_states().items():
        keys |= {f"{page}.{f.name}" for f in dataclasses.fields(cls)}
    return keys


def test_every_widget_with_a_callback_is_driven_on_every_page(
    env: Folders, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sidebar through every model source (each source's own widgets), then every page's
    own widgets: every option of a short choice (a page's sections), once for the rest."""
    from tformer.ui.views.why import compute as why_data

    monkeypatch.setattr(why_data, "RECALL_SECONDS", 0.5)  # the recall models each train 0.5 s
    driven: dict[str, set[str]] = {}
    at = open_at("pages/attention.py", text="Birds sing at dawn.")
    explore(at, check, keep=lambda t: t.sidebar and t.key != "lang", driven=driven)
    assert driven["source"] >= {"A model trained on the Train page", "Local BERT folder (TFORMER_MODEL_DIR)"}
    for spec in SPECS:
        at = open_at(spec.script, source="scratch", text="The cat sat on the mat because it was tired.")
        explore(at, check, keep=lambda t: not t.sidebar, driven=driven)
    long = " ".join(["the cat sat on the mat"] * 20)  # the layers page's zoom window
    at = open_at("pages/layers.py", source="scratch", text=long)
    explore(at, check, keep=lambda t: not t.sidebar, driven=driven)
    # a step wider than the 16-column window (the layer's input, d_model 64): its first dimension
    at = open_at("pages/steps.py", source="scratch", **{"steps.step": "input", "steps.zoom": "window"})
    explore(at, check, keep=lambda t: t.key == "steps.dim", driven=driven)
    # the recall's look-back picker shows once its models are trained
    at = open_at("pages/why.py", **{"why.section": "recall"})
    train_here(at)
    explore(at, check, keep=lambda t: t.key == "why.distance", driven=driven)
    for model in ("gpt2", "roberta_mlm"):  # the output head's page: GPT-2's generation, an MLM's mask
        at = open_at("pages/predictions.py", source="folder", model=model, text="The fox <mask> the dog.")
        explore(at, check, keep=lambda t: not t.sidebar and t.key.startswith("predictions."), driven=driven)
    # the comparisons' base run is a choice once two saved runs are on the overlay
    at = open_at("pages/train.py", **{"train.section": "compare", "train.runs": "tiny-copy,tiny-reverse"})
    driven.pop("train.base", None)  # seen above with one run, which no click can change
    explore(at, check, keep=lambda t: t.key == "train.base", driven=driven)
    at = open_at()
    explore(at, check, keep=lambda t: t.key == "lang", driven=driven)  # last: the page in 中文
    assert driven["lang"] == {"中文", "英文"}  # to Chinese, and back (its label then in Chinese)
    missing = (view_keys() - SET_BY_CODE - DRIVEN_WITH_A_TRAINED_RUN) - set(driven)
    assert not missing, f"no test drove these view-state widgets: {sorted(missing)}"
    assert {"example", "overview", "steps.prev", "steps.next", "flash.prev", "flash.next"} <= set(driven)
    assert {"why.prev", "why.next", "why.distance"} <= set(driven)
    unchanged = sorted(k for k, options in driven.items() if not options)
    assert not unchanged, f"found but could not change: {unchanged}"
