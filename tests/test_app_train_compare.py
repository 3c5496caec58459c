"""The Train page's "Compare runs" section under AppTest, in English and Chinese: the runs table
(a hostile folder listed with its reason), the runs chosen overlaid and labelled by what differs,
a link that opens the same overlay, one click that trains a run again without clipping (saved,
added to the chart) or without warm-up (blown up: not saved, its curves kept), and a run trained
on the page saving its curves. Every widget of the section is driven as Streamlit drives it."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from tformer.training.compare import read_saved_run

from ._i18n_check import english_words, visible_strings
from ._saved_runs import RECIPE, train_and_save
from .test_app_pages import assert_clean
from .test_app_train import open_train, poll

pytestmark = pytest.mark.usefixtures("runs_dir")  # tests/conftest.py: a temporary runs folder

BASE, NO_CLIP = "r1", "r2"


@pytest.fixture(scope="module")
def templates(tmp_path_factory):
    """Two tiny runs saved as the Train page saves them, copied into each test's runs folder."""
    root = tmp_path_factory.mktemp("templates")
    train_and_save(root / BASE)
    train_and_save(root / NO_CLIP, recipe=dataclasses.replace(RECIPE, clip=0.0))
    return root


@pytest.fixture
def two_runs(runs_dir, templates):
    for name in (BASE, NO_CLIP):
        shutil.copytree(templates / name, runs_dir / name)
    return runs_dir


def open_compare(lang: str = "en", **params: str) -> AppTest:
    return open_train(lang=lang, **{"train.section": "compare", **params})


def overlay(at: AppTest) -> dict | None:
    for c in at.get("plotly_chart"):
        if "runs_overlay" in (c.proto.id or ""):
            return json.loads(c.proto.spec)
    return None


def legend(at: AppTest) -> list[str]:
    fig = overlay(at)
    assert fig is not None, "no overlay drawn"
    return [t["name"] for t in fig["data"] if t.get("showlegend")]


def ended(at: AppTest) -> bool:
    return bool(at.success) or bool(at.error)


def test_the_table_lists_every_run_and_a_hostile_folder_with_its_reason(two_runs):
    shutil.copytree(two_runs / BASE, two_runs / "broken")
    (two_runs / "broken" / "run.json").write_text('{"format": "tformer-run", "task": ' + "[" * 50_000)
    at = open_compare()
    table = at.dataframe[0].value
    assert sorted(table[table.columns[0]]) == [BASE, NO_CLIP]
    assert list(table["recipe: not the default"]) == [
        "warm-up 4, no clipping, batch 16",
        "warm-up 4, batch 16",
    ]
    assert set(table["updates"]) == {"8"}
    assert at.expander[0].label == "1 folder(s) in the runs folder could not be read"
    [reason] = [t.value for t in at.text]
    assert reason.startswith("broken: ")
    assert "not valid JSON" in reason
    assert overlay(at) is None
    assert "Choose two to four runs" in " ".join(i.value for i in at.info)


def test_chosen_runs_are_overlaid_labelled_by_what_differs_and_go_into_the_link(two_runs):
    at = open_compare()
    at.multiselect(key="train.runs").set_value([BASE, NO_CLIP]).run()
    assert_clean(at)
    assert legend(at) == ["clip 1", "no clipping"]
    fig = overlay(at)
    assert fig["layout"]["title"]["text"] == "What differs: clip 1 vs no clipping"
    assert fig["layout"]["meta"]["window"] == 10
    view = at.session_state["view"]
    assert view.to_query()["train.runs"] == f"{BASE},{NO_CLIP}"

    at.select_slider(key="train.smooth").set_value("1").run()
    assert overlay(at)["layout"]["meta"]["window"] == 1
    assert view.get("train.smooth") == "1"

    assert not at.button(key="train.without.clip").disabled  # r1 clips at 1
    assert at.button(key="train.without.label_smoothing").disabled  # off in both
    at.selectbox(key="train.base").set_value(NO_CLIP).run()
    assert view.get("train.base") == NO_CLIP
    assert at.button(key="train.without.clip").disabled  # r2 has no clipping to switch off
    assert not at.button(key="train.without.warmup").disabled


def test_a_link_opens_the_same_overlay_and_names_a_run_this_server_lacks(two_runs):
    at = open_compare(**{"train.runs": f"{NO_CLIP},{BASE},ghost", "train.smooth": "25"})
    assert_clean(at)
    assert legend(at) == ["no clipping", "clip 1"]
    assert overlay(at)["layout"]["meta"]["window"] == 25
    assert "Not saved on this server: ghost" in [w.value for w in at.warning]


def test_a_run_that_cannot_be_drawn_says_why_with_its_files_text_inert(two_runs, monkeypatch):
    """A run read for the table but refused when its curves are read (its file changed in
    between): the reason may quote the file, and a markdown image in it is not fetched."""
    from tformer.training.compare import Refused
    from tformer.ui.views.train import compare as view

    reason = "task.length='![x](https://example.com/p.png)' is not of its type"
    monkeypatch.setattr(view, "read_curves", lambda name: Refused(name, reason))
    at = open_compare(**{"train.runs": f"{BASE},{NO_CLIP}"})
    assert not at.exception
    warnings = [w.value for w in at.warning if "cannot be drawn" in w.value]
    assert len(warnings) == 2
    assert all("![" not in w and "\\!\\[x\\]" in w for w in warnings), warnings
    assert overlay(at) is None


def test_one_click_trains_the_run_again_without_clipping_and_overlays_both(two_runs):
    at = open_compare(**{"train.runs": BASE})
    assert legend(at) == [BASE]  # one run: nothing differs yet
    at.button(key="train.without.clip").click().run()
    poll(at, ended)
    at.run()
    assert_clean(at)
    assert "without clipping" in at.success[0].value
    assert "saved as r1-no-clip" in at.success[0].value
    assert at.session_state["view"].get("train.runs") == [BASE, "r1-no-clip"]
    assert legend(at) == ["clip 1", "no clipping"]
    assert overlay(at)["layout"]["meta"]["recorded"][1] == ["accuracy", "grad_norm", "loss", "lr"]
    base, again = read_saved_run(two_runs / BASE), read_saved_run(two_runs / "r1-no-clip")
    assert again.recipe == dataclasses.replace(base.recipe, clip=0.0)
    assert again.cfg == base.cfg
    assert again.updates == base.updates == 8  # as many updates as the run it varies
    assert again.curves.loss[0] == pytest.approx(base.curves.loss[0], abs=1e-6)  # same weights, batch
    table = at.dataframe[0].value
    assert "r1-no-clip" in set(table[table.columns[0]])
    # its heads are scored at each snapshot as any run's, for "Heads of a saved run"
    roles = json.loads((two_runs / "r1-no-clip" / "run.json").read_text())["history"]["roles"]
    assert roles["steps"] == [0, RECIPE.snapshot_every, 8]  # the untrained heads, every 5th, the last
    assert (roles["layers"], roles["heads"]) == (base.cfg.n_layers, base.cfg.n_heads)
    from tformer.ui.views.train.jobs import MAX_RUN_SECONDS, manager

    [run] = [r for r in manager().runs() if r.label == "r1: without clipping"]
    assert run.time_limit_s == MAX_RUN_SECONDS  # the limits of any training run


def test_a_comparison_stops_on_request_and_keeps_what_it_trained(two_runs):
    meta = json.loads((two_runs / BASE / "run.json").read_text())
    meta["history"]["final"]["step"] = 20_000  # a long run: its comparison trains as long
    (two_runs / BASE / "run.json").write_text(json.dumps(meta))
    at = open_compare(**{"train.runs": BASE})
    at.button(key="train.without.clip").click().run()
    poll(
        at,
        lambda at: any(
            "update" in p.proto.text and "update 0" not in p.proto.text for p in at.get("progress")
        ),
    )
    at.button(key="train.compare.stop").click().run()
    poll(at, ended)
    at.run()
    assert "stopped on request" in at.success[0].value
    again = read_saved_run(two_runs / "r1-no-clip")
    assert 0 < again.updates < 20_000
    assert legend(at) == ["clip 1", "no clipping"]
    assert "train.compare.stop" not in [b.key for b in at.button]  # nothing left to stop


def test_a_comparison_over_the_memory_limit_is_refused_with_the_figures(two_runs):
    meta = json.loads((two_runs / BASE / "run.json").read_text())
    meta["recipe"]["batch"] = 1_000_000  # edited by hand: the run reads, its retraining cannot fit
    (two_runs / BASE / "run.json").write_text(json.dumps(meta))
    at = open_compare(**{"train.runs": BASE})
    at.button(key="train.without.clip").click().run()
    assert not at.exception
    refusal = " ".join(w.value for w in at.warning)
    assert "MB of memory while training" in refusal
    assert "the limit for one run here is 1,536 MB" in refusal
    from tformer.ui.views.train.jobs import manager

    assert manager().runs() == []  # nothing started


def test_a_comparison_that_blows_up_is_not_saved_and_its_curves_stay(two_runs, monkeypatch):
    from tformer.training.trainer import Trainer

    def blows_up(self, stats):
        return ("the loss became {loss} at step {step}: lower lr (now {lr:g})", {"loss": 9.0, "step": 3, "lr": 1.0}) if stats.step >= 3 else None  # fmt: skip

    monkeypatch.setattr(Trainer, "divergence", blows_up)
    at = open_compare(**{"train.runs": BASE})
    at.button(key="train.without.warmup").click().run()
    poll(at, ended)
    at.run()
    assert "The comparison stopped: the loss became 9.0 at step 3" in at.error[0].value
    assert legend(at) == ["warm-up 4", "no warm-up"]  # drawn from what it reported
    assert overlay(at)["layout"]["meta"]["n_steps"] == [8, 3]
    assert sorted(p.name for p in two_runs.iterdir()) == [BASE, NO_CLIP]  # nothing saved
    assert any("is not saved" in c.value for c in at.caption)


def test_a_run_trained_on_the_page_saves_its_curves_for_the_table(runs_dir):
    small = {"train.task": "reverse", "train.length": "6", "train.vocab": "5", "train.n_layers": "1",
             "train.d_model": "16", "train.steps": "30", "train.stop_at_99": "0"}  # fmt: skip
    at = open_train(**small)
    at.button(key="train.start").click().run()
    poll(at, ended)
    [name] = [p.name for p in runs_dir.iterdir() if not p.name.startswith(".")]
    at.session_state["view"].set("train.section", "compare")
    at.session_state["view"].set("train.runs", [name])
    at.run()
    assert_clean(at)
    row = at.dataframe[0].value.iloc[0]
    assert row["updates"] == "30"
    assert re.fullmatch(r"[0-9.]+", row["final loss"])
    assert re.fullmatch(r"[0-9.]+( \*)?", row["time (s)"])  # *: other work ran meanwhile
    assert re.fullmatch(r"[0-9.,]+ \([0-9.,]+–[0-9.,]+\)( \*)?", row["ms per update (quartiles)"])
    assert overlay(at)["layout"]["meta"]["recorded"] == [["accuracy", "grad_norm", "loss", "lr"]]
    assert overlay(at)["layout"]["meta"]["n_steps"] == [30]


def test_the_section_in_chinese_shows_no_english_before_and_after_a_comparison(two_runs):
    names = [BASE, NO_CLIP, "r1-no-clip", "r1", "no", "clip"]  # run names are names
    at = open_compare("zh", **{"train.runs": f"{BASE},{NO_CLIP}"})
    assert legend(at) == ["裁剪 1", "不裁剪"]
    left = english_words(visible_strings(at), names)
    assert not left, left
    at.selectbox(key="train.base").set_value(BASE).run()
    at.button(key="train.without.clip").click().run()
    poll(at, ended)
    at.run()
    assert_clean(at)
    assert "已保存为 r1-no-clip" in at.success[0].value
    left = english_words(visible_strings(at), names)
    assert not left, left


def test_the_runs_in_a_link_are_bounded_to_four_run_names():
    from tformer.ui.state import ViewState

    view, notices = ViewState.from_query({"train.runs": "a,b,c,d"})
    assert view.get("train.runs") == ["a", "b", "c", "d"]
    assert not notices
    assert ViewState().max_items("train.runs") == 4
    for bad in ("a,b,c,d,e", "a,../etc", "a,b c"):
        view, notices = ViewState.from_query({"train.runs": bad})
        assert view.get("train.runs") is None, bad
        assert len(notices) == 1, bad
    view, notices = ViewState.from_query({"train.base": "x/y"})
    assert view.get("train.base") is None
    assert notices
