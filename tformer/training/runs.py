"""Background training runs, shared by every browser session of one app process.

A `RunManager` runs each submitted function in its own daemon thread, at most ``max_running``
at once; later ones wait in a first-in, first-out queue of at most ``max_queued``. The function
gets a `RunHandle`: it reports progress through it and polls ``should_stop()`` between steps.
Python cannot kill a thread, so stopping is cooperative: ``should_stop()`` turns True when a
person pressed stop, when the app shuts down, when no session has called ``heartbeat()`` for
``idle_timeout_s`` (the browser tab was closed), or when the run has run for its
``time_limit_s`` (watched or not). A function that never polls cannot be stopped.

States, in order (the last three are final)::

    queued -> running -> stopping -> stopped
                      -> done | failed

Nothing here imports Streamlit or torch: the app keeps one manager per process
(`tformer.ui.singletons`, never a cache) and the tests drive it with plain functions.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import numpy as np

from ..i18n import tr
from ..timing import activity

__all__ = ["FINAL_STATES", "STATES", "Progress", "Run", "RunHandle", "RunManager", "RunState", "Snapshot"]

RunState = Literal["queued", "running", "stopping", "stopped", "done", "failed"]
STATES: tuple[RunState, ...] = ("queued", "running", "stopping", "stopped", "done", "failed")
FINAL_STATES: frozenset[str] = frozenset({"stopped", "done", "failed"})

_log = logging.getLogger(__name__)

RunFn = Callable[["RunHandle"], object]


# --- progress: written by the training thread, read by every session ---------------------------


class Snapshot(NamedTuple):
    """An array the trainer captured at one step (an attention pattern, a weight matrix)."""

    step: int
    array: np.ndarray  # a read-only copy: readers may share it, nobody can change it


def _plain(stats: Mapping[str, Any]) -> dict[str, Any]:
    """Own copy of a stats mapping; 0-d numpy/torch values become Python numbers."""
    out = {}
    for key, value in stats.items():
        if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
            value = value.item()  # a loss tensor would otherwise keep its autograd graph alive
        out[str(key)] = value
    return out


class Progress:
    """An append-only record of one run, safe to write from one thread and read from many.

    Entries are never changed once added, so readers get cheap copies of the lists taken under
    the lock; ``start`` lets a page fetch only what is new since its last poll. ``version``
    grows with every write: a page that saw the same version has nothing to redraw.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._steps: list[dict[str, Any]] = []
        self._evals: list[dict[str, Any]] = []
        self._snapshots: list[Snapshot] = []
        self._version = 0

    # writers (the training thread, through RunHandle)

    def add_step(self, stats: Mapping[str, Any]) -> None:
        entry = _plain(stats)
        with self._lock:
            self._steps.append(entry)
            self._version += 1

    def add_eval(self, stats: Mapping[str, Any]) -> None:
        entry = _plain(stats)
        with self._lock:
            self._evals.append(entry)
            self._version += 1

    def add_snapshot(self, step: int, array: Any) -> None:
        if hasattr(array, "detach"):  # a torch tensor: leave autograd and the device behind
            array = array.detach().cpu().numpy()
        copy = np.array(array, copy=True)
        copy.setflags(write=False)
        with self._lock:
            self._snapshots.append(Snapshot(int(step), copy))
            self._version += 1

    # readers (any session)

    @property
    def version(self) -> int:
        return self._version

    @property
    def n_steps(self) -> int:
        return len(self._steps)

    @property
    def n_evals(self) -> int:
        return len(self._evals)

    @property
    def n_snapshots(self) -> int:
        return len(self._snapshots)

    def steps(self, start: int = 0) -> list[dict[str, Any]]:
        """Copies of the step stats from index ``start`` on."""
        with self._lock:
            kept = self._steps[start:]
        return [dict(entry) for entry in kept]

    def evals(self, start: int = 0) -> list[dict[str, Any]]:
        """Copies of the evaluation stats from index ``start`` on."""
        with self._lock:
            kept = self._evals[start:]
        return [dict(entry) for entry in kept]

    def snapshots(self, start: int = 0) -> list[Snapshot]:
        """The snapshots from index ``start`` on (their arrays are read-only, hence shared)."""
        with self._lock:
            return self._snapshots[start:]

    def last_step(self) -> dict[str, Any] | None:
        with self._lock:
            last = self._steps[-1] if self._steps else None
        return None if last is None else dict(last)

    def last_eval(self) -> dict[str, Any] | None:
        with self._lock:
            last = self._evals[-1] if self._evals else None
        return None if last is None else dict(last)

    def history(self) -> dict[str, list[dict[str, Any]]]:
        """``{"steps": [...], "evals": [...]}``: the shape `tformer.training.checkpoints.save_run` takes."""
        return {"steps": self.steps(), "evals": self.evals()}


# --- one run -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    """A message as an English template and its values, worded when it is read: a run speaks
    from its own thread, which has no reader and so no language (`tformer.i18n`); the page that
    shows it reads it in its session's language. A value may itself be a Message."""

    template: str
    values: Mapping[str, Any] = field(default_factory=dict)

    def text(self) -> str:
        values = {k: v.text() if isinstance(v, Message) else v for k, v in self.values.items()}
        return tr(self.template, **values)

    def __str__(self) -> str:
        return self.text()


def _msg(template: str, **values: Any) -> Message:
    return Message(template, values)


class Run:
    """One submitted function: its state, its progress and, when it set one, its result.

    Made by `RunManager.submit`. Every attribute may be read from any thread.
    """

    def __init__(
        self,
        manager: RunManager,
        run_id: str,
        label: str,
        owner: str,
        fn: RunFn,
        time_limit_s: float | None = None,
    ) -> None:
        self.id = run_id
        self.label = label
        self.owner = owner  # the session id of whoever submitted it
        self.time_limit_s = time_limit_s  # wall-clock seconds it may run (None: no limit)
        self.created = time.time()
        self.started: float | None = None
        self._started_at: float | None = None  # time.monotonic() when it started
        self.finished: float | None = None
        self.progress = Progress()
        self._manager = manager
        self._fn: RunFn | None = fn  # dropped once the run ends, with whatever it holds
        self._state: RunState = "queued"
        self._message = _msg("")
        self._note: Message | None = (
            None  # the function's own last word (set_message), kept into the final message
        )
        self._stop_reason: Message | None = None  # the final message, once a stop was asked for
        self._failure: Message | None = None  # set by RunHandle.fail
        self._result: Any = None
        self._traceback: str | None = None
        self._last_seen = time.monotonic()
        self._ended = threading.Event()

    @property
    def state(self) -> RunState:
        return self._state

    @property
    def is_final(self) -> bool:
        """True once the run is stopped, done or failed (its function has returned)."""
        return self._state in FINAL_STATES

    @property
    def message(self) -> str:
        """What a page can show next to the state: a queue position, an error, a stop reason;
        worded in the reader's language."""
        return self.message_template.text()

    @property
    def message_template(self) -> Message:
        """`message` before it is worded: its English template and values."""
        if self._state == "queued":
            position = self.queue_position()
            if position is not None:
                most = self._manager.max_running
                if position == 1:
                    return _msg("queued: next to start (at most {most} train at once)", most=most)
                return _msg(
                    "queued: {n} run(s) ahead of it (at most {most} train at once)", n=position - 1, most=most
                )
        return self._message

    @property
    def result(self) -> Any:
        """Whatever the function passed to `RunHandle.set_result` (None until it did)."""
        return self._result

    @property
    def traceback(self) -> str | None:
        """The formatted traceback of a run that raised, for a details box; None otherwise."""
        return self._traceback

    def queue_position(self) -> int | None:
        """1 for the next run to start, 2 for the one after it...; None when not queued."""
        return self._manager._position(self)

    def stop(self) -> None:
        """Ask the run to stop. A queued run ends at once; a running one is "stopping" until
        its function notices (`RunHandle.should_stop`) and returns."""
        self._manager._stop(self, _msg("stopped on request"))

    def heartbeat(self) -> None:
        """Someone is still watching: every session that shows this run calls it on each poll."""
        self._last_seen = time.monotonic()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the run reaches a final state; False if ``timeout`` passed first."""
        return self._ended.wait(timeout)

    def __repr__(self) -> str:
        return f"Run(id={self.id!r}, label={self.label!r}, owner={self.owner!r}, state={self._state!r})"


class RunHandle:
    """What the training function gets: report progress, poll for a stop, hand back a result."""

    def __init__(self, run: Run) -> None:
        self._run = run

    @property
    def run_id(self) -> str:
        return self._run.id

    @property
    def progress(self) -> Progress:
        """What the run has recorded so far (what a page reads too)."""
        return self._run.progress

    def should_stop(self) -> bool:
        """True once a stop was asked for, `fail` was called, or nobody watched for
        ``idle_timeout_s``. Poll it between steps and return soon after it turns True."""
        return self._run._manager._should_stop(self._run)

    def report_step(self, **stats: Any) -> None:
        """Record one training step, e.g. ``report_step(step=10, loss=0.7, lr=1e-3)``."""
        self._run.progress.add_step(stats)

    def report_eval(self, **stats: Any) -> None:
        """Record one evaluation, e.g. ``report_eval(step=100, accuracy=0.92)``."""
        self._run.progress.add_eval(stats)

    def report_snapshot(self, step: int, array: Any) -> None:
        """Record a copy of ``array`` (numpy or torch) as it was at ``step``."""
        self._run.progress.add_snapshot(step, array)

    def set_result(self, obj: Any) -> None:
        """Hand back what the run produced (e.g. the trained model); readable as `Run.result`."""
        self._run._result = obj

    def set_message(self, template: str, **values: Any) -> None:
        """Replace the message shown while the run trains (``"epoch {i} of {n}"``, i=2, n=5):
        an English template and its values, worded when a page reads it."""
        self._run._manager._set_message(self._run, Message(str(template), values))

    def fail(self, template: str, **values: Any) -> None:
        """Mark the run failed with this message (a template and its values, as
        `set_message`); it ends "failed" when the function returns."""
        self._run._manager._fail(self._run, Message(str(template), values))


# --- the manager -------------------------------------------------------------------------------


class RunManager:
    """Runs training functions in background threads: at most ``max_running`` at once, then a
    FIFO queue of at most ``max_queued``; runs nobody watched for ``idle_timeout_s`` stop.

    Keeps the ``keep_finished`` most recent final runs (with their results) for
    `get`/`runs`; older ones are forgotten.
    """

    def __init__(
        self,
        max_running: int = 2,
        max_queued: int = 8,
        idle_timeout_s: float = 60.0,
        keep_finished: int = 32,
    ) -> None:
        for name, value, least in (
            ("max_running", max_running, 1),
            ("max_queued", max_queued, 0),
            ("keep_finished", keep_finished, 0),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ValueError(f"{name}={value!r} must be an integer >= {least}")
        if not float(idle_timeout_s) > 0:
            raise ValueError(f"idle_timeout_s={idle_timeout_s!r} must be > 0")
        self.max_running = max_running
        self.max_queued = max_queued
        self.idle_timeout_s = float(idle_timeout_s)
        self.keep_finished = keep_finished
        # One lock for every run's state: transitions touch the queue and the running list too.
        self._lock = threading.RLock()
        self._runs: dict[str, Run] = {}  # in submission order
        self._queue: deque[Run] = deque()
        self._running: list[Run] = []  # running or stopping: their function has not returned
        self._threads: list[threading.Thread] = []
        self._closed = False

    # --- public --------------------------------------------------------------------------------

    def submit(self, label: str, fn: RunFn, *, owner: str, time_limit_s: float | None = None) -> Run:
        """Start ``fn(handle)`` in a daemon thread now, or queue it when ``max_running`` run.

        ``time_limit_s``: once it has run this long (from its start, not its submission),
        ``should_stop()`` turns True, watched or not. Raises ValueError when ``max_queued``
        runs already wait, RuntimeError after `shutdown`.
        """
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}")
        if time_limit_s is not None and not float(time_limit_s) > 0:
            raise ValueError(f"time_limit_s={time_limit_s!r} must be > 0")
        with self._lock:
            if self._closed:
                raise RuntimeError("this RunManager was shut down; it starts no more runs")
            self._reap_idle_queued()
            start_now = len(self._running) < self.max_running and not self._queue
            if not start_now and len(self._queue) >= self.max_queued:
                raise ValueError(  # raised in the page's script run: worded in its reader's language
                    tr(
                        "{running} runs are training and {waiting} are waiting (at most {most}): try again when one finishes",
                        running=len(self._running),
                        waiting=len(self._queue),
                        most=self.max_queued,
                    )
                )
            run = Run(self, self._new_id(), str(label), str(owner), fn, time_limit_s)
            self._runs[run.id] = run
            if start_now:
                self._start(run)
            else:
                self._queue.append(run)
            self._prune_finished()
            return run

    def get(self, run_id: str) -> Run | None:
        with self._lock:
            return self._runs.get(run_id)

    def runs(self, owner: str | None = None) -> list[Run]:
        """Known runs in submission order (all, or those of one ``owner``)."""
        with self._lock:
            self._reap_idle_queued()
            return [r for r in self._runs.values() if owner is None or r.owner == owner]

    def active_count(self) -> int:
        """Runs whose function is executing (state "running" or "stopping")."""
        with self._lock:
            return len(self._running)

    def queued_count(self) -> int:
        with self._lock:
            return len(self._queue)

    def forget(self, run_id: str) -> bool:
        """Drop a final run (and its result); False if unknown or still queued or running."""
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or not run.is_final:
                return False
            del self._runs[run_id]
            return True

    def shutdown(self, timeout: float = 5.0) -> bool:
        """Stop everything, start nothing more, and join the threads (for tests and exit).

        True when every thread ended within ``timeout`` seconds.
        """
        with self._lock:
            self._closed = True
            while self._queue:
                self._end_unstarted(self._queue.popleft(), _msg("stopped: the app shut down"))
            for run in self._running:
                self._request_stop(run, _msg("stopped: the app shut down"))
            threads = list(self._threads)
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in threads if t.is_alive()]
        if alive:
            _log.warning("runs still executing after shutdown(timeout=%s): %s", timeout, alive)
        return not alive

    # --- used by Run and RunHandle ---------------------------------------------------------------

    def _position(self, run: Run) -> int | None:
        with self._lock:
            try:
                return self._queue.index(run) + 1
            except ValueError:
                return None

    def _stop(self, run: Run, reason: Message) -> None:
        with self._lock:
            if run._state == "queued":
                self._queue.remove(run)
                self._end_unstarted(run, _msg("stopped before it started"))
            elif run._state == "running":
                self._request_stop(run, reason)

    def _should_stop(self, run: Run) -> bool:
        with self._lock:
            if run._stop_reason is None and run._state == "running" and self._idle(run):
                self._request_stop(
                    run, _msg("stopped: nobody was watching for {seconds:g} s", seconds=self.idle_timeout_s)
                )
            if run._stop_reason is None and run._state == "running" and self._overtime(run):
                self._request_stop(
                    run,
                    _msg(
                        "stopped: a run may train for at most {minutes:g} min on this server",
                        minutes=(run.time_limit_s or 0) / 60,
                    ),
                )
            return run._stop_reason is not None or run._failure is not None

    def _set_message(self, run: Run, text: Message) -> None:
        with self._lock:
            if run._state in ("running", "stopping"):
                run._note = text
                if run._state == "running":
                    run._message = text

    def _fail(self, run: Run, message: Message) -> None:
        with self._lock:
            if run._failure is None and not run.is_final:
                run._failure = message
                run._message = message

    # --- internals (call with the lock held) -----------------------------------------------------

    def _new_id(self) -> str:
        while True:
            run_id = secrets.token_hex(4)
            if run_id not in self._runs:
                return run_id

    def _idle(self, run: Run) -> bool:
        return time.monotonic() - run._last_seen > self.idle_timeout_s

    def _overtime(self, run: Run) -> bool:
        limit, since = run.time_limit_s, run._started_at
        return limit is not None and since is not None and time.monotonic() - since > limit

    def _request_stop(self, run: Run, reason: Message) -> None:
        if run._stop_reason is None:
            run._stop_reason = reason
        run._state = "stopping"
        run._message = _msg("stopping: waiting for the current step to end")

    def _start(self, run: Run) -> None:
        run._state = "running"
        run._message = _msg("running")
        run.started = time.time()
        run._started_at = time.monotonic()
        thread = threading.Thread(target=self._work, args=(run,), name=f"tformer-run-{run.id}", daemon=True)
        self._running.append(run)
        self._threads = [t for t in self._threads if t.is_alive()]
        try:
            thread.start()
        except RuntimeError as exc:  # "can't start new thread": fail this run, keep the queue going
            self._running.remove(run)
            run._state = "failed"
            run._message = _msg("failed: could not start a thread ({error})", error=str(exc))
            run.finished = time.time()
            run._fn = None
            run._ended.set()
            return
        self._threads.append(thread)

    def _end_unstarted(self, run: Run, message: Message) -> None:
        run._state = "stopped"
        run._message = message
        run.finished = time.time()
        run._fn = None
        run._ended.set()

    def _reap_idle_queued(self) -> None:
        """Queued runs whose session went away will never be watched: drop them now."""
        for run in [r for r in self._queue if self._idle(r)]:
            self._queue.remove(run)
            self._end_unstarted(
                run, _msg("stopped: nobody was watching for {seconds:g} s", seconds=self.idle_timeout_s)
            )

    def _pump(self) -> None:
        """Start queued runs while there is room."""
        self._reap_idle_queued()
        while self._queue and len(self._running) < self.max_running and not self._closed:
            self._start(self._queue.popleft())

    def _prune_finished(self) -> None:
        final = [r for r in self._runs.values() if r.is_final]
        for run in sorted(final, key=lambda r: r.finished or 0.0)[: max(0, len(final) - self.keep_finished)]:
            del self._runs[run.id]

    # --- the thread ------------------------------------------------------------------------------

    def _work(self, run: Run) -> None:
        error: Message | None = None
        trace: str | None = None
        try:
            fn = run._fn
            if fn is not None:
                with activity("training run"):  # timings taken meanwhile name it as other work
                    fn(RunHandle(run))
        except BaseException as exc:  # a crashed run must end "failed", never take the queue down
            error = _msg("failed: {kind}: {error}", kind=type(exc).__name__, error=str(exc))
            trace = traceback.format_exc()
            _log.warning(
                "run %s (%s) failed: %s: %s", run.id, run.label, type(exc).__name__, exc, exc_info=True
            )
        finally:
            self._finish(run, error, trace)

    def _finish(self, run: Run, error: Message | None, trace: str | None) -> None:
        with self._lock:
            try:
                if error is not None:
                    run._state, run._message = "failed", error
                elif run._failure is not None:
                    run._state, run._message = "failed", run._failure
                elif run._stop_reason is not None:
                    reason = run._stop_reason
                    if run._note is not None and run._note.template:
                        reason = _msg("{reason}: {note}", reason=reason, note=run._note)
                    run._state, run._message = "stopped", reason
                else:
                    run._state, run._message = "done", run._note or _msg("done")
                run._traceback = trace
                run.finished = time.time()
                run._fn = None
                if run in self._running:
                    self._running.remove(run)
                run._ended.set()
                self._prune_finished()
            finally:
                self._pump()
