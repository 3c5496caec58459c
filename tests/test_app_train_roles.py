"""The Train page's heads named as they form, under AppTest: a preset fills every setting and says
what the class should see (and says when the settings no longer are the preset's, with a button
that restores them); a run of the shift task names its previous-token head in the timeline under
its loss and accuracy, the role picker and the snapshot slider change what the timeline shows;
the saved run shows the same timeline again, and a saved run with a hostile timeline gets a
message. In Chinese, none of it is left in English."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from tformer.training.presets import PRESETS

from ._i18n_check import english_words, saved_run_words, visible_strings
from .test_app_pages import assert_clean
from .test_app_train import open_train, poll, status_text

pytestmark = pytest.mark.usefixtures("runs_dir")  # tests/conftest.py: a temporary runs folder

# The shift task on a one-head model, fast enough for a test: its only head has to read the
# previous token (tests/test_role_timeline.py trains the same run without the app).
SHIFT_RUN = {
    "train.task": "shift",
    "train.length": "8",
    "train.vocab": "8",
    "train.n_layers": "1",
    "train.n_heads": "1",
    "train.d_model": "32",
    "train.lr": "1e-2",
    "train.warmup": "20",
    "train.steps": "150",
    "train.snapshot_every": "10",
    "train.stop_at_99": "0",
}


def charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def timelines(at: AppTest) -> list[dict]:
    return [c for c in charts(at) if "panels" in c["layout"]["meta"]]


def finish(at: AppTest) -> None:
    at.button(key="train.start").click().run()
    poll(at, lambda at: bool(at.success) or bool(at.error), timeout=120)
    at.run()  # the run's end asks for one more full rerun
    assert_clean(at)
    assert at.success, status_text(at)


# --- presets -------------------------------------------------------------------------------------


def test_a_preset_fills_the_settings_and_says_what_the_class_should_see():
    at = open_train()
    assert not [i.value for i in at.info if "What the class should see" in i.value]
    at.selectbox(key="train.preset").set_value("reverse").run()  # its callback, as Streamlit calls it
    assert_clean(at)
    preset = PRESETS["reverse"]
    assert at.selectbox(key="train.task").value == "reverse"
    assert at.number_input(key="train.n_heads").value == preset.model["n_heads"]
    assert at.select_slider(key="train.lr").value == "1e-4"
    assert at.number_input(key="train.warmup").value == preset.recipe.warmup
    assert at.number_input(key="train.steps").value == preset.recipe.steps
    assert at.number_input(key="train.snapshot_every").value == preset.recipe.snapshot_every
    assert at.checkbox(key="train.stop_at_99").value is False
    [said] = [i.value for i in at.info if "What the class should see" in i.value]
    assert f"Around update {preset.claim.around:,}" in said
    assert "anti-diagonal" in said
    assert not at.warning
    first, whole = preset.cpu_seconds
    [when] = [c.value for c in at.caption if "This preset trains" in c.value]
    assert (
        f"the first head forms after about {first:.0f} s and the run ends after about {whole:.0f} s" in when
    )

    at.number_input(key="train.n_heads").set_value(4).run()  # no longer the preset
    assert not [i.value for i in at.info if "What the class should see" in i.value]
    [warning] = [w.value for w in at.warning]
    assert "“heads”" in warning
    at.button(key="train.preset_restore").click().run()
    assert at.number_input(key="train.n_heads").value == preset.model["n_heads"]
    assert [i.value for i in at.info if "What the class should see" in i.value]
    assert not at.warning

    at.selectbox(key="train.preset").set_value("").run()  # own settings: nothing changes
    assert at.selectbox(key="train.task").value == "reverse"
    assert not [i.value for i in at.info if "What the class should see" in i.value]


def tiny_shift_preset(monkeypatch):
    """A preset as small as SHIFT_RUN standing in for "shift" on the Train page (the real one
    trains for minutes); returns it."""
    from types import MappingProxyType

    from tformer.training.presets import Claim, Preset
    from tformer.training.recipe import Recipe
    from tformer.training.tasks import TaskSpec
    from tformer.ui.views.train import roles

    tiny = Preset(
        key="shift",
        title=PRESETS["shift"].title,
        task=TaskSpec("shift", length=8, vocab=8, shift=1),
        model={"n_layers": 1, "n_heads": 1, "d_model": 32},
        recipe=Recipe(lr=1e-2, warmup=20, steps=150, snapshot_every=10, eval_every=20),
        claim=Claim(role="previous", layer=0, window=(10, 150), around=50, low=(20, 0.5), high=(150, 0.6)),
        shows=PRESETS["shift"].shows,
        cpu_seconds=(1.0, 2.0),
    )
    monkeypatch.setattr(roles, "PRESETS", MappingProxyType({"shift": tiny}))
    return tiny


def test_a_presets_run_says_whether_its_claim_held_and_how_long_its_first_head_took(monkeypatch):
    """The page's whole preset flow on a tiny preset: chosen, trained, its claim checked at the
    end and the time to its first head said."""
    import dataclasses
    from types import MappingProxyType

    from tformer.ui.views.train import roles

    tiny = tiny_shift_preset(monkeypatch)
    at = open_train()
    at.selectbox(key="train.preset").set_value("shift").run()
    assert at.number_input(key="train.steps").value == 150
    finish(at)
    [held] = [s.value for s in at.success if "did what the preset says" in s.value]
    [formed] = timelines(at)[0]["layout"]["meta"]["formed"]
    [took] = [c.value for c in at.caption if "took the role at update" in c.value]
    assert f"the first head of layer 0 took the role at update {formed:,}, after" in took
    assert held

    late = dataclasses.replace(tiny.claim, window=(formed + 10, formed + 10), around=formed + 10)
    monkeypatch.setattr(roles, "PRESETS", MappingProxyType({"shift": dataclasses.replace(tiny, claim=late)}))
    at.run()  # the same finished run, held against a claim it misses
    assert_clean(at)
    assert not [s.value for s in at.success if "did what the preset says" in s.value]
    [missed] = [w.value for w in at.warning if "did not do all the preset says" in w.value]
    assert f"took the role at update {formed:,}, outside {formed + 10:,}..{formed + 10:,}" in missed


def test_a_presets_finished_run_in_chinese_shows_no_english(monkeypatch):
    tiny_shift_preset(monkeypatch)
    at = open_train(lang="zh")
    at.selectbox(key="train.preset").set_value("shift").run()
    finish(at)
    assert [s.value for s in at.success if "这次训练做到了预设所说的" in s.value]
    [formed] = timelines(at)[0]["layout"]["meta"]["formed"]
    assert [
        c.value for c in at.caption if f"第 0 层的第一个头在第 {formed:,} 次更新时承担了这个角色" in c.value
    ]
    left = english_words(visible_strings(at), saved_run_words())  # a saved run's name is data
    assert not left, left


# --- a run's timeline, live and saved ------------------------------------------------------------


def test_a_run_names_its_previous_token_head_and_its_saved_run_shows_it_again(runs_dir):
    at = open_train(**SHIFT_RUN)
    finish(at)
    [live] = timelines(at)
    meta = live["layout"]["meta"]
    assert meta["panels"] == ["loss", "accuracy", "heads"]
    assert meta["role"] == "previous-token"  # "auto": the strongest role at the end
    assert meta["n_heads"] == [1, 1]
    [formed] = meta["formed"]
    assert 0 < formed < 150
    heat = next(t for t in live["data"] if t["type"] == "heatmap")
    assert heat["zmin"] == 0
    assert heat["zmax"] == 1
    said = " ".join(m.value for m in at.markdown)
    assert f"layer 0 head 0 became a previous-token head at update {formed:,}" in said
    assert meta["current"] == 150  # the slider's default: the newest snapshot

    at.selectbox(key="train.role").set_value("antidiagonal").run()  # its callback, as Streamlit calls it
    [live] = timelines(at)
    assert live["layout"]["meta"]["role"] == "anti-diagonal"
    assert live["layout"]["meta"]["formed"] == []  # no head reverses on the shift task
    assert at.session_state["view"].to_query()["train.role"] == "antidiagonal"  # in the share link
    at.slider(key="train.snap_slider").set_value(3).run()  # the fourth snapshot: update 30
    [live] = timelines(at)
    assert live["layout"]["meta"]["current"] == 30

    [saved] = [p for p in runs_dir.iterdir() if p.is_dir()]
    history = json.loads((saved / "run.json").read_text())["history"]
    assert history["roles"]["format"] == "permille"
    assert history["roles"]["steps"][0] == 0
    assert history["roles"]["steps"][-1] == 150
    assert len(history["steps"]) == 150
    assert history["evals"][-1]["step"] == 150

    box = at.selectbox(key="train.roles_run")
    assert saved.name in box.options
    box.set_value(saved.name).run()  # bound to the view state: a link opens it too
    assert_clean(at)
    shown = timelines(at)
    assert len(shown) == 2
    again = shown[1]["layout"]["meta"]
    assert again["panels"] == ["loss", "accuracy", "heads"]
    assert again["formed"] == [formed]
    assert again["current"] is None
    assert again["role"] == "previous-token"  # its own picker: "auto" until chosen
    assert at.code
    assert at.code[-1].value == history["roles"]["text"]

    at.selectbox(key="train.saved_role").set_value("self").run()
    assert timelines(at)[1]["layout"]["meta"]["role"] == "self"
    assert timelines(at)[0]["layout"]["meta"]["role"] == "anti-diagonal"  # the live one keeps its own
    query = at.session_state["view"].to_query()
    assert (query["train.saved_role"], query["train.roles_run"]) == ("self", saved.name)


def test_a_saved_run_without_or_with_a_hostile_timeline_gets_a_message(runs_dir):
    from ._folders import tiny_run

    plain = tiny_run(runs_dir, "no-timeline")
    hostile = tiny_run(runs_dir, "hostile-timeline")
    run = json.loads((hostile / "run.json").read_text())
    run["history"]["roles"] = {"format": "permille", "layers": 10_000, "heads": 10_000, "steps": [0]}
    (hostile / "run.json").write_text(json.dumps(run))
    at = open_train(**{"train.roles_run": plain.name})
    assert_clean(at)
    assert any("saved without a role timeline" in i.value for i in at.info)
    at.selectbox(key="train.roles_run").set_value(hostile.name).run()
    assert not at.exception
    [error] = [e.value for e in at.error]
    assert "cannot be read" in error
    assert "heads in all" in error
    assert not timelines(at)


def test_a_link_opens_a_saved_timeline_on_the_role_it_names(runs_dir):
    """The role pickers are view-state fields: a share link restores the role, and a role the
    picker does not offer falls back to "auto"."""
    from ._folders import tiny_run

    folder = tiny_run(runs_dir, "linked-role")
    _with_timeline(folder)
    at = open_train(**{"train.roles_run": folder.name, "train.saved_role": "antidiagonal"})
    assert at.selectbox(key="train.saved_role").value == "antidiagonal"
    [shown] = timelines(at)
    assert shown["layout"]["meta"]["role"] == "anti-diagonal"
    assert shown["layout"]["meta"]["formed"] == []  # its head reads the previous token
    at.selectbox(key="train.saved_role").set_value("previous").run()
    assert timelines(at)[0]["layout"]["meta"]["formed"] == [20]

    bad = open_train(clean=False, **{"train.roles_run": folder.name, "train.saved_role": "<b>x</b>"})
    assert not bad.exception
    assert bad.selectbox(key="train.saved_role").value == "auto"
    assert timelines(bad)[0]["layout"]["meta"]["role"] == "previous-token"  # the strongest at the end


def _with_timeline(folder, **history) -> None:
    """Give the saved run in ``folder`` a role timeline (its one head forms at update 20) and
    the ``history`` entries given."""
    from types import MappingProxyType

    import numpy as np

    from tformer.analysis.head_roles import ROLES
    from tformer.training.role_timeline import RoleTimeline

    scores = {role: np.full((4, 1, 2), 0.05) for role in ROLES}
    scores["previous"][2:, 0, 1] = 0.9
    timeline = RoleTimeline((0, 10, 20, 30), MappingProxyType(scores), "1 2 3", (1, 2))
    run = json.loads((folder / "run.json").read_text())
    run["history"] |= {"roles": timeline.to_json(), **history}
    (folder / "run.json").write_text(json.dumps(run))


def test_a_saved_runs_hostile_curves_leave_its_timeline_drawn_with_a_note(runs_dir):
    """A loss too large for a float (JSON allows any number of digits) once crashed the view."""
    from ._folders import tiny_run

    folder = tiny_run(runs_dir, "huge-loss")
    steps = [{"step": 1, "loss": 10**400}, {"step": 2, "loss": 1.0}]
    _with_timeline(folder, steps=steps, evals=[{"step": 0, "accuracy": 0.25}])
    at = open_train(**{"train.roles_run": folder.name})
    assert_clean(at)
    [shown] = timelines(at)
    assert shown["layout"]["meta"]["panels"] == ["heads"]  # the curves are left out, not guessed
    assert shown["layout"]["meta"]["formed"] == [20]
    [note] = [c.value for c in at.caption if "not drawn" in c.value]
    assert "history.steps[0].loss is too large for a number" in note.replace("\\", "")
    zh = open_train(lang="zh", **{"train.roles_run": folder.name})
    [note] = [c.value for c in zh.caption if "未画出它的损失和准确率" in c.value]
    assert "太大" in note  # the reason too, in Chinese (the entry's path stays as written)


def test_a_saved_timeline_is_parsed_once_per_state_of_its_file(runs_dir, monkeypatch):
    """A rerun of the page (any widget) reads nothing again; an edited run.json is read anew."""
    from tformer.training.role_timeline import RoleTimeline

    from ._folders import tiny_run

    folder = tiny_run(runs_dir, "parsed-once")
    _with_timeline(folder)
    parsed = []
    real = RoleTimeline.from_json.__func__

    def counting(cls, data):
        parsed.append(1)
        return real(cls, data)

    monkeypatch.setattr(RoleTimeline, "from_json", classmethod(counting))
    at = open_train(**{"train.roles_run": folder.name})
    at.run()
    at.run()
    assert len(parsed) == 1
    assert timelines(at)[0]["layout"]["meta"]["formed"] == [20]
    run = json.loads((folder / "run.json").read_text())
    run["history"]["roles"]["scores"]["previous"] = ["900 900"] * 4  # both heads from update 0
    (folder / "run.json").write_text(json.dumps(run))
    at.run()
    assert len(parsed) == 2
    assert timelines(at)[0]["layout"]["meta"]["formed"] == [0, 0]


def test_a_saved_runs_file_text_in_a_message_is_shown_inert(runs_dir):
    """A message that quotes the file escapes its markdown: an image link in run.json is not
    fetched by the reader's browser."""
    from ._folders import tiny_run

    folder = tiny_run(runs_dir, "markdown-score")
    _with_timeline(folder)
    run = json.loads((folder / "run.json").read_text())
    run["history"]["roles"]["scores"]["self"][0] = "![](//a) 5"  # two heads: two scores
    (folder / "run.json").write_text(json.dumps(run))
    at = open_train(clean=False, **{"train.roles_run": folder.name})
    assert not at.exception
    [error] = [e.value for e in at.error]
    assert "cannot be read" in error
    assert "![" not in error
    assert "\\!\\[\\]\\(//a\\)" in error  # the file's text, every markdown sign escaped
    assert not timelines(at)


# --- in Chinese ----------------------------------------------------------------------------------


def test_presets_and_a_runs_timeline_in_chinese_show_no_english(runs_dir):
    at = open_train(lang="zh", **SHIFT_RUN)
    finish(at)
    assert timelines(at)
    assert "成为前一词元头" in " ".join(m.value for m in at.markdown)
    name = next(p.name for p in runs_dir.iterdir() if p.is_dir())
    at.selectbox(key="train.roles_run").set_value(name).run()
    assert len(timelines(at)) == 2
    left = english_words(visible_strings(at), saved_run_words())  # a saved run's name is data
    assert not left, left
    at.selectbox(key="train.preset").set_value("shift").run()
    assert [i.value for i in at.info if "课堂上应看到" in i.value]
    at.number_input(key="train.n_heads").set_value(4).run()
    assert at.warning
    left = english_words(visible_strings(at), saved_run_words())  # a saved run's name is data
    assert not left, left


def test_a_saved_history_is_bounded_and_keeps_the_last_update():
    import numpy as np

    from tformer.training.compare import MAX_SAVED_STEPS, saved_history
    from tformer.training.role_timeline import RoleRecorder

    rec = RoleRecorder(np.arange(4))
    rec.add(0, np.full((1, 2, 4, 4), 0.25))
    steps = [{"step": i, "loss": 1.0 / i, "lr": 1e-3, "grad_norm": 1.0} for i in range(1, 5001)]
    evals = [{"step": i, "accuracy": 0.5} for i in range(0, 5001, 20)]
    saved = {**saved_history(steps, evals, accuracy=0.5, step=5000), "roles": rec.timeline().to_json()}
    kept = [s["step"] for s in saved["steps"]]
    assert len(kept) <= MAX_SAVED_STEPS
    assert kept[0] == 1
    assert kept[-1] == 5000
    assert kept == sorted(kept)
    assert saved["evals"] == evals
    assert saved["roles"]["steps"] == [0]
    assert len(json.dumps(saved)) < 200_000  # what it adds to run.json
