"""Training runs in the background: one process-wide `RunManager` (a few runs at once, the rest
queued), the jobs it runs (train one model and save it; race 1, 2, 4 and 8 heads), and this
session's runs. A run outlives page switches (its id is in the session); it stops by itself
when no page has polled it for `IDLE_TIMEOUT_S` (the browser was closed).

A job runs in a thread without a reader's language: it hands its messages over as English
templates and values (`RunHandle.set_message`, `RunHandle.fail`), worded when a page reads them."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from typing import Any

import streamlit as st

from ....i18n import tr
from ....model.config import EncoderConfig
from ....timing import open_watch, timing_of, watch
from ....training.checkpoints import sanitize_run_name, save_run
from ....training.compare import saved_history
from ....training.recipe import Recipe
from ....training.runs import Run, RunHandle, RunManager
from ....training.tasks import TaskSpec, example_texts, task_tokenizer
from ....training.trainer import Trainer, training_memory_bytes
from ...caches import device
from ...singletons import shared
from .roles import role_recorder

MAX_RUNNING_ENV = "TFORMER_MAX_TRAINING"  # runs training at once on this server (default 2)
IDLE_TIMEOUT_S = 30.0
MAX_STEPS = 20_000  # one run's step limit
MAX_TRAIN_PARAMS = 4_000_000  # one run's model size limit (weights)
# One run's memory limit, activations included (`training.trainer.training_memory_bytes`), checked
# before it starts: with TFORMER_MAX_TRAINING=2 runs at once, training holds at most 3 GiB.
MAX_TRAIN_BYTES = 1536 * 2**20
MAX_RUN_SECONDS = 10 * 60  # one run's wall-clock limit, watched or not
HEAD_COUNTS = (1, 2, 4, 8)
MAX_SNAPSHOTS = 100  # per run: the slider's frames
MAX_SNAPSHOT_BYTES = 64 * 2**20  # per run: what its attention snapshots may hold in memory
RACE_WARMUP_UPDATES = 5  # the race's first updates pay for allocation and kernel choice: not timed


def snapshot_stride(recipe: Recipe, snapshot_nbytes: int) -> int:
    """Updates between two snapshots: the recipe's, widened so that one run keeps at most
    MAX_SNAPSHOTS of them and at most MAX_SNAPSHOT_BYTES."""
    frames = max(1, min(MAX_SNAPSHOTS, MAX_SNAPSHOT_BYTES // max(1, snapshot_nbytes)))
    return max(recipe.snapshot_every, -(-recipe.steps // frames))


_RUN_KEY = "_train_run"  # session_state: this session's current run id
_RACE_KEY = "_train_race"


def max_running() -> int:
    raw = os.environ.get(MAX_RUNNING_ENV, "").strip()
    return int(raw) if raw.isdigit() and int(raw) >= 1 else 2


def manager() -> RunManager:
    """One manager per server process, shared by every session. A process singleton, not a
    cache: a cache clear would replace it with an empty one that knows none of the runs still
    training (see `tformer.ui.singletons`)."""
    return shared(
        "training.manager",
        lambda: RunManager(max_running=max_running(), max_queued=8, idle_timeout_s=IDLE_TIMEOUT_S),
    )


def session_id() -> str:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else "no-session"


def memory_needed(cfg: EncoderConfig, recipe: Recipe, kind: str = "train") -> int:
    """Bytes a run of ``kind`` needs at its peak: the heads race trains one head count after
    another, so its largest model counts."""
    if kind == "train":
        return training_memory_bytes(cfg, recipe)
    counts = [h for h in HEAD_COUNTS if cfg.d_model % h == 0] or [cfg.n_heads]
    return max(training_memory_bytes(dataclasses.replace(cfg, n_heads=h), recipe) for h in counts)


def over_budget(cfg: EncoderConfig, recipe: Recipe, kind: str = "train") -> str | None:
    """Why a run of ``kind`` may not start here (its memory estimate passes MAX_TRAIN_BYTES),
    in the reader's language; None when it may."""
    needed = memory_needed(cfg, recipe, kind)
    if needed <= MAX_TRAIN_BYTES:
        return None
    return tr(
        "This run would need about {needed:,.0f} MB of memory while training (weights, optimizer and "
        "the activations of batch × length × layers{heads}); the limit for one run here is {limit:,.0f} MB. "
        "Lower the batch, the length, d_model, d_ff or the layers{dropout}.",
        needed=needed / 2**20,
        limit=MAX_TRAIN_BYTES / 2**20,
        heads=tr(" × heads × length, with dropout") if recipe.dropout > 0 else "",
        dropout=tr(", or set dropout to 0") if recipe.dropout > 0 else "",
    )


def saved_name(run: Run | None) -> str | None:
    """The run name a finished training run was saved as, if it was."""
    result = run.result if run is not None and run.is_final else None
    name = result.get("saved") if isinstance(result, dict) else None
    return name if isinstance(name, str) else None


def current_run(kind: str = "train") -> Run | None:
    """This session's latest run of ``kind`` ("train" or "race"), if the manager still has it."""
    run_id = st.session_state.get(_RUN_KEY if kind == "train" else _RACE_KEY)
    return manager().get(run_id) if isinstance(run_id, str) else None


def _train(
    cfg: EncoderConfig, spec: TaskSpec, recipe: Recipe, stop_at: float | None, previous: Run | None
) -> Callable[[RunHandle], None]:
    dev = str(device()[0])

    def job(handle: RunHandle) -> None:
        old = previous.result if previous is not None and isinstance(previous.result, dict) else None
        trainer: Trainer = old["trainer"] if old else Trainer(cfg, spec, recipe, device=dev)
        roles, snapshot = role_recorder(handle, old, trainer)  # every snapshot, its heads' roles too
        if previous is not None and old:  # continue: the curves go on from where they stopped
            for s in previous.progress.steps():
                handle.report_step(**s)
            for e in previous.progress.evals():
                handle.report_eval(**e)
            for snap in previous.progress.snapshots():
                snapshot(snap.step, snap.array)
        else:
            snapshot(0, trainer.snapshot())
            handle.report_eval(step=0, accuracy=trainer.evaluate())
        stride = snapshot_stride(recipe, trainer.snapshot().nbytes)
        last = trainer.step_count + recipe.steps
        handle.set_result({"trainer": trainer, "last": last, "roles": roles})
        reached = False
        # the steps last recorded: a run that stops right after a periodic evaluation or
        # snapshot must not record that step twice (the curves need increasing steps)
        evals = snaps = trainer.step_count  # both were recorded at the start (or carried over)
        watching = open_watch()  # what else ran while it trained (saved with its times)
        while trainer.step_count < last and not handle.should_stop():
            stats = trainer.step()
            handle.report_step(
                step=stats.step,
                loss=stats.loss,
                lr=stats.lr,
                grad_norm=stats.grad_norm,
                seconds=stats.seconds,
            )
            problem = trainer.divergence(stats)
            if problem is not None:
                handle.fail(problem[0], **problem[1])
                return
            if stats.step % recipe.eval_every == 0:
                acc = trainer.evaluate()
                handle.report_eval(step=stats.step, accuracy=acc)
                evals = stats.step
                reached = stop_at is not None and acc >= stop_at
            if stats.step % stride == 0:
                snapshot(stats.step, trainer.snapshot())
                snaps = stats.step
            if reached:
                break
        if trainer.step_count == 0:
            return
        if snaps != trainer.step_count:
            snapshot(trainer.step_count, trainer.snapshot())
        acc = trainer.evaluate()
        if evals != trainer.step_count:
            handle.report_eval(step=trainer.step_count, accuracy=acc)
        name = sanitize_run_name(
            f"{spec.name}-{cfg.n_layers}L{cfg.n_heads}H{cfg.d_model}-s{trainer.step_count}-{time.strftime('%m%d-%H%M%S')}"
        )
        trainer.model.eval()
        save_run(
            name,
            trainer.model,
            task_tokenizer(spec),
            task=dataclasses.asdict(spec),
            recipe=dataclasses.asdict(recipe),
            history={  # the curves and what the run took (compare), the heads' roles (roles)
                **saved_history(
                    handle.progress.steps(),
                    handle.progress.evals(),
                    accuracy=acc,
                    step=trainer.step_count,
                    load=watching.close(),
                ),
                "roles": roles.timeline().to_json(),
            },
            examples=example_texts(spec, 6),
        )
        trainer.model.train()
        handle.set_result({"trainer": trainer, "last": last, "saved": name, "roles": roles})
        if reached:
            template = "reached {accuracy:.1%} held-out accuracy after {n} updates; saved as {name}"
        else:
            template = "ended at {accuracy:.1%} held-out accuracy after {n} updates; saved as {name}"
        handle.set_message(template, accuracy=acc, n=trainer.step_count, name=name)

    return job


def start_training(
    cfg: EncoderConfig, spec: TaskSpec, recipe: Recipe, stop_at: float | None, *, resume: bool = False
) -> Run:
    """Queue a run training ``cfg`` on ``spec`` (or continuing this session's last one).

    Raises ValueError (worded for the reader) when its memory estimate is over the limit."""
    problem = over_budget(cfg, recipe)
    if problem:
        raise ValueError(problem)
    previous = current_run() if resume else None
    label = f"{spec.name}: {cfg.n_layers} layers × {cfg.n_heads} heads, d_model {cfg.d_model}"
    job = _train(cfg, spec, recipe, stop_at, previous)
    run = manager().submit(label, job, owner=session_id(), time_limit_s=MAX_RUN_SECONDS)
    st.session_state[_RUN_KEY] = run.id
    return run


def _race(
    cfg: EncoderConfig, spec: TaskSpec, recipe: Recipe, stop_at: float | None
) -> Callable[[RunHandle], None]:
    dev = str(device()[0])

    def job(handle: RunHandle) -> None:
        for heads in HEAD_COUNTS:
            if cfg.d_model % heads:
                handle.report_eval(heads=heads, step=0, accuracy=float("nan"), skipped=1)
                continue
            trainer = Trainer(dataclasses.replace(cfg, n_heads=heads), spec, recipe, device=dev)
            times: list[float] = []  # each update's own time (evaluations not counted)
            with watch() as w:
                while trainer.step_count < recipe.steps and not handle.should_stop():
                    stats = trainer.step()
                    times.append(stats.seconds)
                    if stats.step % recipe.eval_every == 0:
                        acc = trainer.evaluate()
                        t, load = timing_of(times[RACE_WARMUP_UPDATES:] or times), w.so_far()
                        handle.report_eval(
                            heads=heads,
                            step=stats.step,
                            accuracy=acc,
                            seconds_per_step=t.median,
                            seconds_q1=t.q1,
                            seconds_q3=t.q3,
                            timed_updates=t.n,
                            seconds_watched=load.seconds,
                            other_cpu=load.other_cpu,
                            other_work="|".join(f"{i}:{kind}" for i, kind in load.work),
                        )
                        if stop_at is not None and acc >= stop_at:
                            break
            if handle.should_stop():
                return
        handle.set_message("1, 2, 4 and 8 heads trained")

    return job


def start_race(cfg: EncoderConfig, spec: TaskSpec, recipe: Recipe, stop_at: float | None) -> Run:
    """Queue the heads race; ValueError (worded for the reader) when it needs too much memory."""
    problem = over_budget(cfg, recipe, "race")
    if problem:
        raise ValueError(problem)
    run = manager().submit(
        f"how many heads: {spec.name}, d_model {cfg.d_model}",
        _race(cfg, spec, recipe, stop_at),
        owner=session_id(),
        time_limit_s=MAX_RUN_SECONDS,
    )
    st.session_state[_RACE_KEY] = run.id
    return run


def describe_queue(run: Run) -> str:
    """Where ``run`` waits, in the reader's language."""
    pos = run.queue_position()
    if pos is None:
        return run.message
    if pos == 1:
        return tr(
            "Waiting: 1 run ahead of this one (at most {most} train at once on this server).",
            most=max_running(),
        )
    return tr(
        "Waiting: {n} runs ahead of this one (at most {most} train at once on this server).",
        n=pos,
        most=max_running(),
    )


def last_summary(run: Run) -> dict[str, Any]:
    """The latest numbers of a run, for the page's progress line."""
    last = run.progress.last_step() or {}
    ev = run.progress.last_eval() or {}
    return {"step": int(last.get("step", 0)), "loss": last.get("loss"), "accuracy": ev.get("accuracy")}
