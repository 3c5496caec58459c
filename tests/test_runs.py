"""Background runs: FIFO queue, cooperative stop, idle timeout, failures, progress, no leaked threads."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from tformer.training.runs import FINAL_STATES, STATES, RunHandle, RunManager

LIMIT_S = 10.0  # no fake run lives longer than this, whatever a test gets wrong


def looper(step_s: float = 0.01, snapshot_every: int = 0) -> Callable[[RunHandle], None]:
    """A fake trainer: one step every ``step_s`` until asked to stop."""

    def fn(handle: RunHandle) -> None:
        step = 0
        deadline = time.monotonic() + LIMIT_S
        while not handle.should_stop() and time.monotonic() < deadline:
            step += 1
            handle.report_step(step=step, loss=np.float32(1.0 / step))
            if snapshot_every and step % snapshot_every == 0:
                handle.report_snapshot(step, np.full((2, 3), step, dtype=np.float32))
            time.sleep(step_s)
        handle.set_result({"steps": step})

    return fn


def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    return condition()


def run_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("tformer-run-")]


@pytest.fixture
def make_manager() -> Iterator[Callable[..., RunManager]]:
    made: list[RunManager] = []

    def make(**kw) -> RunManager:
        made.append(RunManager(**kw))
        return made[-1]

    yield make
    for manager in made:
        assert manager.shutdown(timeout=5.0)
    assert run_threads() == []


def test_runs_beyond_max_running_wait_in_order_with_their_positions(make_manager) -> None:
    manager = make_manager(max_running=2, max_queued=8)
    runs = [manager.submit(f"run {i}", looper(), owner=f"session-{i % 2}") for i in range(5)]
    assert [r.state for r in runs] == ["running", "running", "queued", "queued", "queued"]
    assert [r.queue_position() for r in runs] == [None, None, 1, 2, 3]
    assert runs[2].message.startswith("queued: next to start")
    assert runs[3].message.startswith("queued: 1 run(s) ahead")
    assert manager.active_count() == 2
    assert manager.queued_count() == 3
    assert runs[0].started is not None
    assert runs[2].started is None

    runs[0].stop()
    assert runs[0].wait(1.0)
    assert wait_for(lambda: runs[2].state == "running")
    assert [r.queue_position() for r in runs[3:]] == [1, 2]
    assert manager.active_count() == 2

    runs[4].stop()  # a queued run ends at once, without ever starting
    assert runs[4].state == "stopped"
    assert runs[4].started is None
    assert runs[4].message == "stopped before it started"
    assert runs[3].queue_position() == 1

    assert [r.id for r in manager.runs()] == [r.id for r in runs]
    assert [r.label for r in manager.runs(owner="session-1")] == ["run 1", "run 3"]
    assert manager.get(runs[1].id) is runs[1]
    assert manager.get("nope") is None
    assert len({r.id for r in runs}) == 5


def test_stop_takes_effect_within_a_second(make_manager) -> None:
    manager = make_manager()
    run = manager.submit("long", looper(step_s=0.01), owner="s")
    assert wait_for(lambda: run.progress.n_steps >= 3)
    t0 = time.monotonic()
    run.stop()
    assert run.state in ("stopping", "stopped")
    assert run.wait(1.0), run.state
    assert time.monotonic() - t0 < 1.0
    assert run.state == "stopped"
    assert run.message == "stopped on request"
    assert run.result == {"steps": run.progress.n_steps}
    assert run.finished is not None
    assert run.started is not None
    assert run.finished >= run.started


def test_a_run_is_stopping_until_its_function_returns(make_manager) -> None:
    noticed, release = threading.Event(), threading.Event()

    def fn(handle: RunHandle) -> None:
        while not handle.should_stop():
            time.sleep(0.01)
        noticed.set()
        release.wait(LIMIT_S)  # e.g. saving a checkpoint before returning

    manager = make_manager()
    run = manager.submit("slow to stop", fn, owner="s")
    run.stop()
    assert noticed.wait(1.0)
    assert run.state == "stopping"
    assert not run.is_final
    assert manager.active_count() == 1
    release.set()
    assert run.wait(1.0)
    assert run.state == "stopped"
    assert manager.active_count() == 0


def test_nobody_watching_stops_a_run_but_a_heartbeat_keeps_it_going(make_manager) -> None:
    manager = make_manager(idle_timeout_s=0.3)
    watched = manager.submit("watched", looper(), owner="a")
    abandoned = manager.submit("abandoned", looper(), owner="b")
    beating = threading.Event()

    def watch() -> None:
        while not beating.is_set():
            watched.heartbeat()
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        assert abandoned.wait(2.0)
        assert abandoned.state == "stopped"
        assert abandoned.message == "stopped: nobody was watching for 0.3 s"
        time.sleep(0.6)  # twice the timeout: the watched run keeps training
        assert watched.state == "running"
    finally:
        beating.set()
        watcher.join()
    assert watched.wait(2.0)
    assert watched.message == "stopped: nobody was watching for 0.3 s"


def test_a_watched_run_stops_at_its_time_limit_counted_from_its_start(make_manager) -> None:
    manager = make_manager(max_running=1, idle_timeout_s=5.0)
    first = manager.submit("first", looper(), owner="a", time_limit_s=0.4)
    waiting = manager.submit("waiting", looper(), owner="a", time_limit_s=0.4)
    unlimited = manager.submit("unlimited", looper(), owner="a")
    beating = threading.Event()

    def watch() -> None:
        while not beating.is_set():
            for run in (first, waiting, unlimited):
                run.heartbeat()
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        assert first.wait(2.0)
        assert first.state == "stopped"
        assert first.message == "stopped: a run may train for at most 0.00666667 min on this server"
        assert waiting.wait(2.0)
        assert waiting.state == "stopped"  # its 0.4 s began when it started
        assert waiting.finished - waiting.started >= 0.4
        time.sleep(0.8)
        assert unlimited.state == "running"
    finally:
        beating.set()
        watcher.join()
        unlimited.stop()
    with pytest.raises(ValueError, match="time_limit_s=0"):
        manager.submit("bad", looper(), owner="a", time_limit_s=0)


def test_an_abandoned_queued_run_never_starts(make_manager) -> None:
    manager = make_manager(max_running=1, idle_timeout_s=0.3)
    first = manager.submit("first", looper(), owner="a")
    queued = manager.submit("queued", looper(), owner="b")
    deadline = time.monotonic() + 0.6
    while time.monotonic() < deadline:
        first.heartbeat()
        time.sleep(0.05)
    assert [r.state for r in manager.runs()] == ["running", "stopped"]
    assert queued.started is None
    assert queued.message.startswith("stopped: nobody was watching")
    assert manager.queued_count() == 0
    first.stop()
    assert first.wait(1.0)


def test_a_crashing_run_fails_and_the_queue_moves_on(make_manager) -> None:
    def crash(handle: RunHandle) -> None:
        handle.report_step(step=1, loss=2.0)
        raise ValueError("the batch has no labels")

    manager = make_manager(max_running=1)
    crashed = manager.submit("crash", crash, owner="s")
    after = manager.submit("after", lambda handle: handle.set_result(42), owner="s")
    assert crashed.wait(2.0)
    assert after.wait(2.0)
    assert crashed.state == "failed"
    assert crashed.message == "failed: ValueError: the batch has no labels"
    assert crashed.traceback is not None
    assert "the batch has no labels" in crashed.traceback
    assert crashed.progress.steps() == [{"step": 1, "loss": 2.0}]
    assert after.state == "done"
    assert after.message == "done"
    assert after.result == 42
    assert after.traceback is None


def test_a_run_can_fail_itself_with_a_message(make_manager) -> None:
    def fn(handle: RunHandle) -> None:
        handle.set_message("loading data")
        handle.fail("the dataset is empty")
        assert handle.should_stop()

    manager = make_manager()
    run = manager.submit("empty", fn, owner="s")
    assert run.wait(2.0)
    assert run.state == "failed"
    assert run.message == "the dataset is empty"


def test_a_run_that_returns_is_done_with_its_result(make_manager) -> None:
    def fn(handle: RunHandle) -> None:
        for step in range(1, 4):
            handle.report_step(step=step, loss=1.0 / step)
        handle.report_eval(step=3, accuracy=0.75)
        handle.set_message("evaluating")
        handle.set_result("model")

    manager = make_manager()
    run = manager.submit("short", fn, owner="s")
    assert run.wait(2.0)
    assert (run.state, run.message, run.result) == ("done", "evaluating", "model")  # its last word stays
    assert run.progress.history() == {
        "steps": [{"step": 1, "loss": 1.0}, {"step": 2, "loss": 0.5}, {"step": 3, "loss": 1 / 3}],
        "evals": [{"step": 3, "accuracy": 0.75}],
    }
    assert run.state in FINAL_STATES
    assert set(FINAL_STATES) <= set(STATES)


def test_too_many_queued_runs_are_refused(make_manager) -> None:
    manager = make_manager(max_running=1, max_queued=2)
    runs = [manager.submit(f"r{i}", looper(), owner="s") for i in range(3)]
    with pytest.raises(ValueError, match=r"1 runs are training and 2 are waiting \(at most 2\)"):
        manager.submit("one too many", looper(), owner="s")
    assert len(manager.runs()) == 3
    runs[1].stop()  # a freed queue slot takes a new run again
    manager.submit("fits now", looper(), owner="s")

    strict = make_manager(max_running=1, max_queued=0)
    strict.submit("only", looper(), owner="s")
    with pytest.raises(ValueError, match="at most 0"):
        strict.submit("no queue", looper(), owner="s")


def test_progress_is_readable_while_the_run_trains(make_manager) -> None:
    manager = make_manager()
    run = manager.submit("live", looper(step_s=0.002, snapshot_every=5), owner="s")
    seen = []
    for _ in range(20):
        steps = run.progress.steps()
        seen.append(len(steps))
        assert [s["step"] for s in steps] == list(range(1, len(steps) + 1))
        assert all(isinstance(s["loss"], float) for s in steps)  # numpy scalars became floats
        time.sleep(0.01)
    assert run.state == "running"
    assert seen == sorted(seen)
    assert seen[-1] > seen[0]

    first = run.progress.steps()
    first[0]["loss"] = -1.0  # a reader's copy: the record is untouched
    assert run.progress.steps(0)[0]["loss"] == 1.0
    n = len(first)
    later = run.progress.steps(n)
    assert not later or later[0]["step"] == n + 1

    snapshots = run.progress.snapshots()
    assert snapshots
    assert snapshots[0].step == 5
    assert snapshots[0].array.shape == (2, 3)
    assert not snapshots[0].array.flags.writeable
    version = run.progress.version
    assert wait_for(lambda: run.progress.version > version)
    run.stop()
    assert run.wait(1.0)
    assert run.progress.last_step() == run.progress.steps()[-1]


def test_shutdown_stops_everything_and_joins_every_thread(make_manager) -> None:
    manager = make_manager(max_running=2)
    runs = [manager.submit(f"r{i}", looper(), owner="s") for i in range(4)]
    assert len(run_threads()) == 2
    assert manager.shutdown(timeout=2.0)
    assert run_threads() == []
    assert [r.state for r in runs] == ["stopped"] * 4
    assert {r.message for r in runs} == {"stopped: the app shut down"}
    with pytest.raises(RuntimeError, match="shut down"):
        manager.submit("late", looper(), owner="s")


def test_finished_runs_are_forgotten_beyond_keep_finished(make_manager) -> None:
    manager = make_manager(keep_finished=2)
    for i in range(4):
        assert manager.submit(f"r{i}", lambda handle: None, owner="s").wait(2.0)
    assert wait_for(lambda: manager.active_count() == 0)
    assert [r.label for r in manager.runs()] == ["r2", "r3"]
    running = manager.submit("running", looper(), owner="s")
    assert not manager.forget(running.id)  # only final runs can be forgotten
    kept = manager.runs()[0]
    assert manager.forget(kept.id)
    assert manager.get(kept.id) is None
    assert [r.label for r in manager.runs()] == ["r3", "running"]


@pytest.mark.parametrize(
    "kw",
    [
        {"max_running": 0},
        {"max_queued": -1},
        {"idle_timeout_s": 0},
        {"max_running": 1.5},
        {"keep_finished": -1},
    ],
)
def test_bad_limits_are_refused(kw: dict) -> None:
    ((key, value),) = kw.items()
    with pytest.raises(ValueError, match=re.escape(f"{key}={value} must be")):
        RunManager(**kw)
