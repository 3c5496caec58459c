"""Every page, and every section of it, opened in Chinese: no English is left outside formulas,
code, names (MiniLM, softmax...) and the text's own tokens (`tests._i18n_check`)."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("streamlit")

from tformer.i18n import use_language
from tformer.resources import examples
from tformer.ui.lessons import lesson_by_id, lessons
from tformer.ui.registry import PAGES as SPECS
from tformer.ui.registry import page_for

from ._i18n_check import cut_labels, english_words, visible_strings
from .test_app_pages import ATTENTION, assert_clean, open_app, sections_of

ZH_TEXT = next(str(e["text"]) for e in examples() if e["lang"] == "zh")
CASES = [(p.script, None) for p in SPECS] + [(p.script, s) for p in SPECS for s in sections_of(p.script)[1:]]


def _tokens(at) -> list[str]:
    return []  # the Chinese example's tokens have no Latin letters; [CLS] and the like are KEPT


def english_left(at) -> list[str]:
    """The strings (deduplicated, cut to 120 characters) that still hold English words."""
    return sorted(set(english_words(visible_strings(at), _tokens(at)).values()))


@pytest.mark.parametrize(("page", "section"), CASES, ids=[f"{p}:{s or ''}" for p, s in CASES])
def test_page_in_chinese_has_no_english_left(page, section):
    params = {"lang": "zh"}
    if section is not None:
        params[f"{page_for(page).key}.section"] = section
    at = open_app(page, text=ZH_TEXT, **params)
    assert_clean(at)
    left = english_left(at)
    assert not left, f"English left on {page} {section or ''}: {left}"
    cut = cut_labels(at)
    assert not cut, f"labels cut short on {page} {section or ''}: {cut}"


@pytest.mark.parametrize(
    ("case", "params"),
    [
        ("from-scratch encoder", {"source": "scratch"}),
        ("invalid shape", {"source": "scratch", "n_heads": "5", "d_model": "64"}),
        ("hostile link", {"layer": "99999999999999999999", "nonsense": "1"}),
    ],
)
def test_sidebar_states_in_chinese_have_no_english_left(case, params):
    at = open_app(ATTENTION, text=ZH_TEXT, lang="zh", **params)
    assert not at.exception
    left = english_left(at)
    assert not left, f"English left with {case}: {left}"


def test_empty_text_in_chinese_has_no_english_left():
    at = open_app(ATTENTION, text="", lang="zh")
    assert not at.exception
    left = english_left(at)
    assert not left, f"English left with an empty text: {left}"


def test_language_switch_changes_the_interface_and_back():
    at = open_app(ATTENTION, text=ZH_TEXT)
    english = english_left(at)
    assert english  # the English interface has English in it (the check can fail)
    at.radio(key="lang").set_value("zh").run()
    assert_clean(at)
    assert not english_left(at)
    at.radio(key="lang").set_value("en").run()
    assert english_left(at) == english


def test_an_example_picked_in_english_leaves_no_english_after_the_switch():
    at = open_app(ATTENTION)
    zh = next(e for e in examples() if e["lang"] == "zh")
    at.selectbox(key="example").set_value(zh["label"]).run()
    assert at.text_area(key="text").value == zh["text"]
    assert at.selectbox(key="example").value is None  # back to "choose an example..."
    at.radio(key="lang").set_value("zh").run()
    assert_clean(at)
    assert not english_left(at)


def test_every_step_of_the_walk_in_chinese_has_no_english_left():
    """The step-by-step page shows one step's formula at a time: walk all of them."""
    at = open_app("pages/steps.py", text=ZH_TEXT, lang="zh")
    while not at.button(key="steps.prev").disabled:
        at.button(key="steps.prev").click().run()
    seen = []
    while True:
        assert_clean(at)
        header = at.subheader[0].value
        seen.append(header)
        left = english_left(at)
        assert not left, f"English left at {header}: {left}"
        # a formula of weights is math ($W_O$), not a literal underscore (√d_k: the app's spelling)
        assert "_" not in re.sub(r"\$[^$]*\$", "", header).replace("√d_k", ""), header
        if at.button(key="steps.next").disabled:
            break
        at.button(key="steps.next").click().run()
    assert len(seen) == 22, seen


def _grid_labels(at) -> dict:
    (grid,) = [n for n in at.main.get("bidi_component") if n.proto.component_name == "tformer_head_grid"]
    return json.loads(grid.proto.json)["labels"]


def test_the_heads_overview_speaks_the_sessions_language():
    at = open_app(ATTENTION, text=ZH_TEXT)
    english = _grid_labels(at)
    assert (english["x"], english["y"]) == ("head", "layer")
    assert english["cell"] == "layer {layer}, head {head}"  # the browser fills in the numbers
    at.radio(key="lang").set_value("zh").run()
    chinese = _grid_labels(at)
    assert (chinese["x"], chinese["y"]) == ("头", "层")
    assert "{layer}" in chinese["cell"]
    assert "{head}" in chinese["cell"]
    assert not english_words(v.format(layer=1, head=2) for v in chinese.values())


def _minilm_copy(folder, *, damaged: bool = False):
    import shutil

    from tformer.model.pretrained import minilm_path

    folder.mkdir()
    for name in ("config.json", "tokenizer.json", "vocab.txt", "model.safetensors"):
        if (minilm_path() / name).exists():
            shutil.copy(minilm_path() / name, folder / name)
    if damaged:
        (folder / "model.safetensors").write_bytes(b"\x00 not a safetensors file")
    return folder


@pytest.mark.parametrize(
    "damaged",
    [False, True],
    ids=["local folder", "damaged local folder"],
)
def test_a_local_model_folder_in_chinese_has_no_english_left(tmp_path, monkeypatch, damaged):
    monkeypatch.setenv("TFORMER_MODEL_DIR", str(_minilm_copy(tmp_path / "bert", damaged=damaged)))
    at = open_app(ATTENTION, text=ZH_TEXT, lang="zh", source="local")
    assert not at.exception
    assert bool(at.error) == damaged
    left = english_left(at)
    assert not left, f"English left with a {'damaged ' if damaged else ''}local folder: {left}"


def test_a_saved_run_in_chinese_has_no_english_left(runs_dir):
    from .test_checkpoints import save

    saved = save("zh-run")
    at = open_app(ATTENTION, text=ZH_TEXT, lang="zh", source="run", run=saved.name)
    assert not at.exception
    assert at.radio(key="source").value == "run"
    left = english_words(visible_strings(at), saved.name.split("-"))  # the run's name is a name
    assert not left, f"English left with a saved run: {left}"


@pytest.mark.parametrize("lesson_id", [lesson.id for lesson in lessons()])
def test_every_lesson_walked_in_chinese_has_no_english_left(lesson_id):
    """A lesson started on the start page and walked with Next, as a teacher does: its bar, each
    page it opens and the text it sets. The words of that text stay (a lesson may study an
    English sentence, and its Chinese notes quote them)."""
    lesson = lesson_by_id(lesson_id)
    assert lesson is not None
    at = open_app("app.py", lang="zh")
    at.button(key=f"start_{lesson_id}").click().run()
    for index in range(len(lesson.steps)):
        assert_clean(at)
        assert at.query_params.get("lesson_step", "0") == str(index)
        words = re.findall(r"[A-Za-z]+", at.text_area(key="text").value)
        left = english_words(visible_strings(at), words)
        assert not left, f"English left on {lesson_id} step {index}: {left}"
        assert not cut_labels(at)
        if index + 1 < len(lesson.steps):
            # AppTest reads the widgets back in this thread, through their format_func: in
            # Chinese here too (the script's own thread speaks the session's language)
            with use_language("zh"):
                at.button(key="lesson_next").click().run()


def _room_words(*codes: str) -> list[str]:
    """The letters of a join code as shown (random, a name, not English): words that may stay."""
    from tformer.rooms import format_code

    return [w for c in codes for w in re.findall(r"[A-Za-z]+", format_code(c))]


@pytest.mark.slow
def test_the_live_class_views_in_chinese_have_no_english_left(monkeypatch):
    """The teacher's room panel and lesson bar (the live tally before and after the reveal, the
    lesson's answers table), a student's join form with a refusal, their following and exploring
    badge, the revealed answer and their panel; a dead store: all in Chinese."""
    from tformer.ui import room

    from ._classroom import CLASSROOM, code_of, goto, on_page, student, teacher
    from .redis_server import free_port
    from .test_app_lesson_questions import BASICS, IT

    def left(at, *extra: str) -> dict[str, str]:
        assert not at.exception, [e.message for e in at.exception]
        words = re.findall(r"[A-Za-z]+", at.text_area(key="text").value) if at.text_area else []
        return english_words(visible_strings(at), [*words, *extra])

    t = teacher(lang="zh")
    code = code_of(t)
    assert not left(t, *_room_words(code)), "the teacher's panel"
    refused = on_page(open_app(CLASSROOM, lang="zh"))
    refused.text_input(key="room.code").input("ABCD-23")
    refused.button(key="room.join").click().run()
    assert refused.error
    assert not left(refused, "ABCD"), "a refused join"
    invited = open_app("pages/attention.py", lang="zh", room="K7QM2XPA")  # a join link to another page
    assert invited.main.get("page_link")
    assert not left(invited), "a join link's pointer to the Live class page"

    t = teacher("pages/attention.py", lang="zh", lesson=BASICS, lesson_step=str(IT))
    code = code_of(t)
    s = student(code, "小红", lang="zh")
    assert not left(s, *_room_words(code)), "a following student asked the question"
    s.button_group(key=f"lq.{IT}.answer").set_value(2).run()
    s.button(key="lq.check").click().run()
    t.run()
    assert t.get("plotly_chart"), "the live tally"
    assert not left(t, *_room_words(code)), "the teacher's tally before the reveal"
    t.button(key="room.reveal").click().run()
    assert not left(t, *_room_words(code)), "the teacher's tally after the reveal"
    late = student(code, "小刚", lang="zh")
    assert "老师公布了答案" in " ".join(i.value for i in late.info)
    assert not left(late, *_room_words(code)), "a student who sees the reveal"
    late.selectbox(key="head").set_value(5).run()
    assert "正在自行探索" in " ".join(m.value for m in late.markdown)
    assert not left(late, *_room_words(code)), "an exploring student"
    goto(late, CLASSROOM)
    assert not left(late, *_room_words(code)), "a student's panel"
    goto(t, CLASSROOM)
    assert t.dataframe, "the lesson's answers table"
    assert not left(t, *_room_words(code)), "the teacher's panel with the lesson's answers"

    room.forget_failure()
    monkeypatch.setenv("TFORMER_REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")
    dead = open_app(CLASSROOM, lang="zh")
    assert dead.warning
    reason = re.findall(r"[A-Za-z]+", dead.warning[0].value.split("（", 1)[1])  # Redis's own words
    assert not left(dead, *reason), "a dead store"
