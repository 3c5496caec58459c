"""Results of the Train page's experiments, kept once per server for every visitor: a `Board`
holds each settings' result and the id of the background run (in the training manager,
`tformer.ui.views.train.jobs.manager`) that computes it; `experiment` draws an experiment's
start button and its live part, which polls while the run computes.

A process singleton (`tformer.ui.singletons`), not a cache: a run writes into it from its
thread as it goes, and a cache emptied meanwhile would lose both the partial result and the
run's id. The settings key it (frozen dataclasses with the device in them), so a class sees one
measurement per device and settings; the `keep` most recent settings stay."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

import streamlit as st

from ....i18n import tr
from ....training.runs import Run, RunHandle
from .jobs import MAX_RUN_SECONDS, manager, session_id

__all__ = ["Board", "experiment"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Board(Generic[K, V]):
    """Results by settings, and the run that computes each. Thread-safe."""

    def __init__(self, keep: int = 8) -> None:
        self.keep = keep
        self._results: OrderedDict[K, V] = OrderedDict()
        self._runs: dict[K, str] = {}
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            return self._results.get(key)

    def update(self, key: K, change: Callable[[V | None], V]) -> None:
        """Replace the result of ``key`` by ``change(old)`` (old: None when there is none) at
        once for every reader; the oldest settings go past `keep`."""
        with self._lock:
            self._results[key] = change(self._results.get(key))
            self._results.move_to_end(key)
            while len(self._results) > self.keep:
                gone, _ = self._results.popitem(last=False)
                self._runs.pop(gone, None)

    def run(self, key: K) -> Run | None:
        """The run that computes (or computed) ``key``'s result, if the manager still knows it."""
        with self._lock:
            run_id = self._runs.get(key)
        return manager().get(run_id) if run_id is not None else None

    def start(self, key: K, label: str, job: Callable[[RunHandle], None]) -> Run:
        """``key``'s run now: the one still going if there is one, else ``job`` submitted to the
        training manager for this session (at most `MAX_RUN_SECONDS`). ValueError (worded for
        the reader) when the manager's queue is full."""
        with self._lock:
            run_id = self._runs.get(key)
            running = manager().get(run_id) if run_id is not None else None
            if running is not None and not running.is_final:
                return running
            run = manager().submit(label, job, owner=session_id(), time_limit_s=MAX_RUN_SECONDS)
            self._runs[key] = run.id
            return run


def experiment(
    board: Board[K, V],
    key: K,
    *,
    label: str,
    button: str,
    finished: bool,
    refused: bool,
    start: Callable[[], Run],
    status: Callable[[Run], object],
    draw: Callable[[V | None, Run | None], None],
) -> None:
    """An experiment computed in the background: the start button (``label``, key ``button``;
    off while its run computes, once ``finished`` or when ``refused``) and a stop button (key
    ``button`` + ".stop", for the session that started the run), then a fragment that
    polls every second while the run computes: the run's failure or ``status(run)``, then
    ``draw(result so far, run)``. A start refused by the manager's full queue says so; when the
    run ends, the page reruns once so that the button follows."""
    run = board.run(key)
    active = run is not None and not run.is_final
    c1, c2 = st.columns([3, 1])
    if c1.button(label, key=button, type="primary", disabled=active or finished or refused, width="stretch"):
        try:
            start()
        except ValueError as err:
            st.warning(str(err))  # worded in the reader's language where it was raised
        else:
            st.rerun()
    mine = run is not None and run.owner == session_id()  # a visitor stops only what they started
    if c2.button(tr("■ Stop"), key=f"{button}.stop", disabled=not (active and mine), width="stretch"):
        assert run is not None
        run.stop()

    @st.fragment(run_every=1.0 if active else None)
    def live() -> None:
        run = board.run(key)
        if run is not None:
            run.heartbeat()
            if run.state == "failed":
                st.warning(run.message)
            elif not run.is_final:
                status(run)
        draw(board.get(key), run)
        flag = f"_{button}_was_active"
        if run is not None and run.is_final and st.session_state.get(flag):
            st.session_state[flag] = False
            st.rerun()  # the button follows the run's end
        st.session_state[flag] = run is not None and not run.is_final

    live()
