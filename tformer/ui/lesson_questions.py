"""A lesson step's question in the lesson bar: asked before the figure, graded by the live model.

`question_box` draws the question of the step shown (`tformer.questions`: computed now from the
view's text, model, layer and head), an answer widget for its kind, Check and Skip. Until the
learner answers right, answers wrong twice or skips, the step's page hides its figures
(`figure_hidden`: `tformer.ui.charts.chart` and the head overview read it); after, the
feedback says right or wrong, the model's value and why with this text's numbers, and the
attention heatmap that shows the answer outlines the query's row and the key (`marked`). The
first wrong try gets the hint and another go. Progress lives in the view state (`ViewState.quiz`,
`tformer.ui.progress`), so a share link keeps the step and the score; the lesson's last step
shows the score per concept with a reset. Every string shown is plain text (`guard.plain`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import streamlit as st

from ..figures.marks import outline_answer
from ..i18n import tr
from ..questions import CONCEPTS, AnswerError, Mark, NotAvailable, Question, QuestionContext, ask
from ..questions.answers import TokenAnswer
from ..training.recipe import Recipe
from ..training.tasks import TaskSpec
from . import room, room_questions
from .binding import view
from .caches import ModelChoice, get_capture, get_model
from .guard import plain
from .lessons import Lesson, Step, lesson_by_id, local
from .opening import chosen_head
from .progress import Record, encode_value, format_progress, parse_progress
from .state import TrainState, ViewState

__all__ = ["Gate", "figure_hidden", "marked", "question_box", "reset_gate", "summary"]

_GATE = "lq.gate"  # session state: what this run's question hides and marks
_MESSAGE = "lq.message"  # session state: why the last answer could not be read (one run)
_SHOWN = "lq.shown"  # session state: (lesson, step) -> (answer given, model's value) as shown
MAX_PILLS = 40  # more tokens than this: a select box instead of a row of pills
MESSAGE_CHARS = 300
_IN_WORD = re.compile(r"(?<=[^\W_])\\_(?=[^\W_])")

# What the reveal can outline: the attention heatmaps of one head.
HEATMAP_MARKS = ("pattern", "attn_scores")


@dataclass(frozen=True)
class Gate:
    """What the step's question does to this run's page: hide its figures, mark the answer."""

    hide: bool = False
    mark: Mark | None = None
    note: str = "Hidden until you answer the question above (or skip it)."  # what stands in (a template)


def _inert(text: str, max_chars: int) -> str:
    """``text`` as inert markdown (`guard.plain`), an underscore inside a word left as it is
    (``d_model``: it cannot start emphasis there, and the 中文 check reads it as a name)."""
    return _IN_WORD.sub("_", plain(text, max_chars))


def reset_gate() -> None:
    st.session_state[_GATE] = Gate()


def _gate() -> Gate:
    g = st.session_state.get(_GATE)
    return g if isinstance(g, Gate) else Gate()


def figure_hidden() -> bool:
    """Whether this page's figures wait for the lesson's question to be answered."""
    return _gate().hide


def hidden_note() -> str:
    """What stands in for a hidden figure, in the session's language."""
    return tr(_gate().note)


def marked(fig: Any, shows: tuple[int, int] | None) -> Any:
    """``fig`` with the revealed answer outlined, when ``fig`` is the attention heatmap of the
    head (layer, head) ``shows`` and the answer is marked on that head; else ``fig`` itself."""
    mark = _gate().mark
    if mark is None or shows is None or mark.figure not in HEATMAP_MARKS or (mark.layer, mark.head) != shows:
        return fig
    if mark.row is None and not mark.cols:
        return fig
    try:
        return outline_answer(fig, mark.row, mark.cols)
    except ValueError:  # the figure is not a token heatmap of this text: nothing to outline
        return fig


def progress() -> dict[int, Record]:
    try:
        return parse_progress(view().quiz)
    except ValueError:  # the view state checked it: cannot happen, but never fail a page on it
        return {}


def _save(records: dict[int, Record]) -> None:
    view().set("quiz", format_progress(records))


def _answer_key(index: int) -> str:
    return f"lq.{index}.answer"


# --- callbacks (on_click: before the rerun) ---------------------------------------------------


def _check(lesson_id: str, index: int, question: Question) -> None:
    if view().lesson != lesson_id:
        return
    records = progress()
    before = records.get(index)
    tries = before.tries if before is not None and before.status == "p" else 0
    raw = st.session_state.get(_answer_key(index))
    try:
        grade = question.grade(raw, wrong_tries=tries)
    except AnswerError as err:
        st.session_state[_MESSAGE] = str(err)
        return
    again = room_questions.send(lesson_id, index, question, grade)  # a live class's student
    if again is not None:
        st.session_state[_MESSAGE] = again
        return
    value = encode_value(grade.value)
    if grade.correct:
        records[index] = Record("r", tries, value)
    else:
        tries += 1
        records[index] = Record("p" if tries < 2 else "w", tries, value)
    _save(records)
    shown = st.session_state.setdefault(_SHOWN, {})
    shown[(lesson_id, index)] = (grade.given, grade.expected)


def _skip(lesson_id: str, index: int, expected: str) -> None:
    if view().lesson != lesson_id:
        return
    records = progress()
    before = records.get(index)
    records[index] = Record("s", before.tries if before else 0, before.value if before else None)
    _save(records)
    st.session_state.setdefault(_SHOWN, {})[(lesson_id, index)] = (None, expected)


def _again(lesson_id: str, index: int | None) -> None:
    """Forget the answer of step ``index`` (None: of every step) so it is asked afresh."""
    if view().lesson != lesson_id:
        return
    records = progress()
    for i in [index] if index is not None else list(records):
        records.pop(i, None)
        st.session_state.pop(_answer_key(i), None)
        st.session_state.get(_SHOWN, {}).pop((lesson_id, i), None)
    _save(records)


def _restore(lesson_id: str, index: int) -> None:
    from .lesson_mode import apply_step  # lesson_mode draws this module's box

    lesson = lesson_by_id(lesson_id)
    if lesson is not None and index < len(lesson.steps):
        apply_step(lesson, index)


# --- asking ------------------------------------------------------------------------------------


def ask_step(step: Step, choice: ModelChoice, *, own: bool = False) -> Question:
    """The step's question computed now on the view (`NotAvailable` when it cannot be); with
    ``own``, on the step's own layer, head and query where its settings set them (the summary
    asks every step's question on the current text)."""
    spec = step.question
    assert spec is not None
    v = view()
    if own:
        mine, _ = ViewState.from_query(step.settings)
        v = replace(
            v,
            layer=mine.layer if "layer" in step.settings else v.layer,
            head=mine.head if "head" in step.settings else v.head,
            query=mine.query if "query" in step.settings else v.query,
        )
    model, _ = get_model(choice)
    try:
        capture = get_capture(choice, v.text, spec.needs)
    except (ValueError, MemoryError, RuntimeError) as err:
        raise NotAvailable(tr("this text cannot be captured here: {err}", err=err), "activation") from None
    layer, head = chosen_head(choice, v.text, capture.n_layers, capture.n_heads)
    recipe, task = training_of(v.page(TrainState)) if spec.info.concept == "training" else (None, None)
    ctx = QuestionContext(
        capture,
        # the view's own layer and head, unclamped: a question on a layer this model lacks says so
        layer=v.layer if v.layer is not None else layer,
        head=v.head if v.head is not None else head,
        query=v.query,
        model=model if spec.info.runs_model else None,
        recipe=recipe,
        task=task,
    )
    return ask(spec, ctx)


def training_of(t: TrainState) -> tuple[Recipe | None, TaskSpec | None]:
    """The Train page's recipe and task as its settings stand (None where they do not make one:
    the page says why), so a training question asks about the numbers the page shows."""
    try:
        recipe = Recipe(
            optimizer=t.optimizer, lr=float(t.lr), betas=(float(t.beta1), float(t.beta2)), eps=float(t.eps),
            weight_decay=float(t.weight_decay), schedule=t.schedule, warmup=t.warmup, clip=float(t.clip),
            label_smoothing=float(t.label_smoothing), dropout=float(t.dropout), batch=t.batch, accum=t.accum,
            steps=t.steps, snapshot_every=t.snapshot_every,
        )  # fmt: skip
    except ValueError:
        recipe = None
    try:
        task = TaskSpec(t.task, t.length, t.vocab, min(t.shift, t.length - 1), float(t.held_out))
    except ValueError:
        task = None
    return recipe, task


def _token_widget(question: Question, key: str) -> None:
    answer = question.answer
    assert isinstance(answer, TokenAnswer)
    labels = answer.labels
    counts: dict[str, int] = {}
    for p in answer.candidates:
        counts[labels[p]] = counts.get(labels[p], 0) + 1

    def shown(p: int) -> str:  # a repeated token says which one
        return labels[p] if counts[labels[p]] == 1 else f"{labels[p]} #{p}"

    options = list(answer.candidates)
    if len(options) <= MAX_PILLS:
        st.pills(tr("Pick a token"), options, format_func=shown, key=key)
    else:
        st.selectbox(tr("Pick a token"), options, index=None, format_func=shown, key=key,
                     placeholder=tr("pick a token"))  # fmt: skip


def _answer_widget(question: Question, key: str) -> None:
    kind = question.kind
    if kind == "token":
        _token_widget(question, key)
    elif kind == "number":
        st.text_input(
            tr("Your answer (a number)"),
            key=key,
            max_chars=60,
            help=tr(
                "Counted right {tolerance}. Write 0.7, 70%, 1,536 or 1.5k.", tolerance=question.tolerance
            ),
        )
    else:  # choice, direction
        labels = dict(question.options)
        st.radio(
            tr("Your answer"),
            list(labels),
            index=None,
            format_func=lambda k: labels[k],
            key=key,
            horizontal=kind == "direction",
        )


def _feedback(question: Question, record: Record, given: str | None) -> None:
    """The verdict on a finished question, the model's value and why."""
    if record.status == "s":
        st.info(
            _inert(tr("Skipped. The model's value is {expected}.", expected=question.expected), MESSAGE_CHARS)
        )
    else:
        verdict = None
        if record.value is not None:
            try:
                verdict = question.grade(_stored(question, record.value), wrong_tries=1).verdict
            except AnswerError:  # the text changed since: the answer no longer fits it
                verdict = None
        if verdict is None:
            verdict = tr(
                "You answered {given}; on the current text the model's value is {expected}.",
                given=given or record.value or "?",
                expected=question.expected,
            )
        show = st.success if record.right else st.warning
        show(_inert(verdict, MESSAGE_CHARS), icon="✅" if record.right else "✖️")
    st.markdown(_inert(question.explanation, 2000))


def _stored(question: Question, value: str) -> int | float | str:
    """A record's value as the question's parser takes it."""
    return int(value) if question.kind == "token" and value.isdigit() else value


def question_box(lesson: Lesson, index: int, step: Step, choice: ModelChoice | None, page_key: str) -> None:
    """The step's question inside the lesson bar, and this run's `Gate` for the page."""
    reset_gate()
    if step.question is None:
        return
    on_page = step.page == page_key
    records = progress()
    record = records.get(index)
    if record is None or not record.done:
        st.markdown(tr("**Predict first.** Answer before you look: the step's figure waits for your answer."))
    if choice is None:
        st.info(tr("Fix the model settings in the sidebar to see this step's question."))
        return
    try:
        question = ask_step(step, choice)
    except NotAvailable as why:
        st.warning(_inert(tr("This question cannot be asked here: {why}", why=why.message), MESSAGE_CHARS))
        st.button(
            tr("Restore this step's settings"),
            key="lq.restore",
            on_click=_restore,
            args=(lesson.id, index),
        )
        return
    st.markdown("❓ " + _inert(question.prompt, 600))
    if room.teaching():
        _class_question(lesson, index, question, on_page)
        return
    key = _answer_key(index)
    if (record is None or not record.done) and room_questions.revealed_to_me(lesson.id, index):
        st.info(
            _inert(
                tr("Your teacher revealed the answer: {expected}.", expected=question.expected), MESSAGE_CHARS
            ),
            icon="🎓",
        )
        _revealed(question, on_page)
        return
    if record is None or not record.done:
        if on_page:
            st.session_state[_GATE] = Gate(hide=True)
        _answer_widget(question, key)
        message = st.session_state.pop(_MESSAGE, None)
        if isinstance(message, str):
            st.error(_inert(message, MESSAGE_CHARS), icon="⚠️")
        if record is not None and record.status == "p":
            given = st.session_state.get(_SHOWN, {}).get((lesson.id, index), (None, None))[0]
            if given is None and record.value is not None:  # from a link: worded on this text
                try:
                    given = question.grade(_stored(question, record.value)).given
                except AnswerError:
                    given = None
            st.warning(
                _inert(
                    tr("Not quite: you said {given}. Try once more.", given=given or record.value or "?"),
                    MESSAGE_CHARS,
                ),
                icon="✖️",
            )
            st.info(_inert(tr("Hint: {hint}", hint=question.hint), MESSAGE_CHARS), icon="💡")
        row = st.container(horizontal=True, gap="small")
        row.button(
            tr("Check my answer"),
            key="lq.check",
            type="primary",
            on_click=_check,
            args=(lesson.id, index, question),
        )
        row.button(
            tr("Skip: show me"),
            key="lq.skip",
            type="tertiary",
            on_click=_skip,
            args=(lesson.id, index, question.expected),
        )
        return
    given = st.session_state.get(_SHOWN, {}).get((lesson.id, index), (None, None))[0]
    _feedback(question, record, given)
    _marked_below(question, on_page)
    st.button(tr("Try again"), key="lq.again", on_click=_again, args=(lesson.id, index))


def _marked_below(question: Question, on_page: bool) -> None:
    """After the answer: the page's figures show, the answer outlined on its heatmap."""
    if not on_page:
        return
    st.session_state[_GATE] = Gate(mark=question.mark)
    mark = question.mark
    if mark.figure in HEATMAP_MARKS and mark.row is not None:
        st.caption(
            tr(
                "On the heatmap of layer {layer}, head {head} below, the query's row is outlined "
                "with a dashed line and the answer's key in red.",
                layer=mark.layer,
                head=mark.head,
            )
            if mark.cols
            else tr(
                "On the heatmap of layer {layer}, head {head} below, the query's row is outlined "
                "with a dashed line.",
                layer=mark.layer,
                head=mark.head,
            )
        )


def _revealed(question: Question, on_page: bool) -> None:
    """The answer as the teacher revealed it: why, and the figure with the answer outlined."""
    st.markdown(_inert(question.explanation, 2000))
    _marked_below(question, on_page)


def _class_question(lesson: Lesson, index: int, question: Question, on_page: bool) -> None:
    """The teacher of a live class: the class's answers instead of an answer box; the figure
    waits for the reveal, which shows the answer here and on every student's screen."""
    shown = room_questions.teacher_revealed(room_questions.step_id(lesson.id, index))
    room_questions.class_tally(lesson.id, index, question, revealed=shown)
    if not shown:
        if on_page:
            st.session_state[_GATE] = Gate(hide=True, note="Hidden until you reveal the answer to the class.")
        return
    st.success(
        _inert(tr("The model's value is {expected}.", expected=question.expected), MESSAGE_CHARS), icon="🎓"
    )
    _revealed(question, on_page)


def _described(step: Step, choice: ModelChoice | None, value: str | None) -> tuple[str | None, str | None]:
    """The answer ``value`` as its question words it, and the model's value, on the current text
    (None for what cannot be said: the question is not available here, the answer no longer fits)."""
    if choice is None:
        return None, None
    try:
        question = ask_step(step, choice, own=True)
    except NotAvailable:
        return None, None
    given = None
    if value is not None:
        try:
            given = question.grade(_stored(question, value)).given
        except AnswerError:
            given = None
    return given, question.expected


def summary(lesson: Lesson, choice: ModelChoice | None) -> None:
    """The lesson's score, per concept and per question (on its last step): the answer given and
    the model's value, as shown when answered in this session, else asked now on this text."""
    asked = [(i, s) for i, s in enumerate(lesson.steps) if s.question is not None]
    if not asked:
        return
    records = progress()
    shown = st.session_state.get(_SHOWN, {})
    done = [i for i, _ in asked if i in records and records[i].done]
    right = [i for i in done if records[i].right]
    with st.expander(
        tr("Your answers: {right} of {n} right", right=len(right), n=len(asked)),
        expanded=len(done) == len(asked),
    ):
        per: dict[str, list[int]] = {}
        for i, s in asked:
            assert s.question is not None
            per.setdefault(s.question.info.concept, []).append(i)
        st.markdown(
            "\n".join(
                "- "
                + tr(
                    "{concept}: {right} of {n} right",
                    concept=tr(CONCEPTS[c]),
                    right=sum(1 for i in steps if i in records and records[i].right),
                    n=len(steps),
                )
                for c, steps in per.items()
            )
        )
        lines = []
        for i, s in asked:
            r = records.get(i)
            given, expected = (
                shown.get((lesson.id, i), (None, None)) if r is not None and r.done else (None, None)
            )
            if r is not None and r.done and expected is None:
                given, expected = _described(s, choice, r.value)
            if r is None or not r.done:
                state = tr("not answered yet")
            elif r.status == "s":
                state = tr("skipped")
            elif r.right:
                state = tr("right") if r.tries == 0 else tr("right after {n} wrong try", n=r.tries)
            else:
                state = tr("wrong")
            parts = [tr("step {i}, {title}: {state}", i=i + 1, title=local(s.title), state=state)]
            if given is not None:
                parts.append(tr("you said {given}", given=given))
            if expected is not None:
                parts.append(tr("the model's value {expected}", expected=expected))
            lines.append("- " + _inert("; ".join(parts), 400))
        st.markdown("\n".join(lines))
        st.button(
            tr("Try the whole lesson again"), key="lq.again_all", on_click=_again, args=(lesson.id, None)
        )
