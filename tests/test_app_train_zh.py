"""The Train page in Chinese while a run trains and after it ends: its progress line, the status
messages written by the training thread (worded when the page reads them), the curves, the
attention snapshot, the heads race and a divergence message hold no English."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from ._i18n_check import english_words, saved_run_words, visible_strings
from .test_app_pages import assert_clean
from .test_app_train import open_train, poll

pytestmark = pytest.mark.usefixtures("runs_dir")  # tests/conftest.py: a temporary runs folder


def open_train_zh(**params: str) -> AppTest:
    return open_train(lang="zh", **params)


def english_left(at: AppTest) -> dict[str, str]:
    return english_words(visible_strings(at), saved_run_words())  # a saved run's name is data


def ended(at: AppTest) -> bool:
    return bool(at.success) or bool(at.error)


def test_a_run_in_chinese_shows_no_english_while_training_and_after(runs_dir):
    at = open_train_zh(**{"train.task": "copy", "train.steps": "5000", "train.stop_at_99": "0"})
    assert not english_left(at)
    at.button(key="train.start").click().run()
    poll(at, lambda at: any(p.proto.text and "第 0 次" not in p.proto.text for p in at.get("progress")))
    assert not english_left(at), english_left(at)  # the progress line, the live curves
    at.button(key="train.stop").click().run()
    poll(at, ended, timeout=30)
    at.run()  # the run's end asks for one more full rerun
    assert_clean(at)
    assert at.success
    assert "已保存为" in at.success[0].value
    assert "已按要求停止" in at.success[0].value
    assert {"curves", "snapshot"} <= {
        key for c in at.get("plotly_chart") for key in ("curves", "snapshot") if key in (c.proto.id or "")
    }
    assert not english_left(at), english_left(at)


def test_the_heads_race_in_chinese_shows_no_english(runs_dir):
    at = open_train_zh(**{"train.section": "heads", "train.task": "copy", "train.steps": "20"})
    at.button(key="train.start").click().run()
    poll(at, ended, timeout=90)
    at.run()
    assert at.success, [e.value for e in at.error]
    assert not english_left(at), english_left(at)


def test_a_diverging_run_in_chinese_names_the_setting_in_chinese(runs_dir):
    at = open_train_zh(
        **{
            "train.task": "sort",
            "train.lr": "1",
            "train.clip": "0",
            "train.warmup": "0",
            "train.schedule": "constant",
        }
    )
    at.button(key="train.start").click().run()
    poll(at, ended, timeout=60)
    at.run()
    assert at.error, [e.value for e in at.error]
    assert "学习率" in at.error[0].value, [e.value for e in at.error]
    assert not english_left(at), english_left(at)


def test_a_runs_messages_are_worded_when_read_not_when_written():
    from tformer.i18n import use_language
    from tformer.training.runs import RunManager

    runs = RunManager(max_running=1)

    def job(handle) -> None:  # a training thread: no reader's language here
        handle.set_message("1, 2, 4 and 8 heads trained")

    run = runs.submit("race", job, owner="test")
    try:
        assert run.wait(5.0)
        assert run.message == "1, 2, 4 and 8 heads trained"
        with use_language("zh"):
            zh = run.message
        assert zh != run.message
        assert not english_words([zh])
    finally:
        assert runs.shutdown()
