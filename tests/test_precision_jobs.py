"""The precision page's worker (`tformer.ui.views.precision.jobs`): a key runs once, the newest asks
run first, the queue is bounded, a failure is kept as the result, a page run may compute a key
itself, and shutting down stops the thread."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("streamlit")

from tformer.ui.views.precision import jobs as pj


@pytest.fixture
def jobs():
    j = pj.PrecisionJobs()
    yield j
    j.shutdown()


def _blocker(jobs):
    """Occupy the worker until the returned event is set."""
    started, release = threading.Event(), threading.Event()

    def block():
        started.set()
        release.wait(10)
        return "blocked"

    jobs.submit([("block", block)])
    assert started.wait(5)
    return release


def test_newest_asks_run_first_and_a_key_runs_once(jobs):
    release = _blocker(jobs)
    order, calls = [], []

    def job(name):
        def run():
            calls.append(name)
            order.append(name)
            return name.upper()

        return run

    jobs.submit([("a", job("a")), ("b", job("b"))])
    jobs.submit([("c", job("c")), ("a", job("a"))])  # "a" is queued already: not again
    assert jobs.waiting("a")
    assert jobs.get("a") is None
    release.set()
    assert jobs.idle(10)
    assert order == ["c", "a", "b"]  # the newest ask first, each ask in its own order
    assert calls.count("a") == 1
    assert (jobs.get("a"), jobs.get("b"), jobs.get("c")) == ("A", "B", "C")
    jobs.submit([("a", job("a"))])  # done: not run again
    assert jobs.idle(10)
    assert calls.count("a") == 1


def test_the_queue_is_bounded_and_drops_the_oldest_ask(jobs):
    release = _blocker(jobs)
    jobs.submit([(i, lambda i=i: i) for i in range(pj.MAX_QUEUE + 3)])
    assert not jobs.waiting(pj.MAX_QUEUE + 2)  # dropped: the oldest of the ask is last
    assert jobs.waiting(0)
    release.set()
    assert jobs.idle(10)
    assert jobs.get(pj.MAX_QUEUE + 2) is None
    assert jobs.get(0) == 0


def test_a_failing_job_keeps_its_error_and_run_here_computes_in_the_caller(jobs):
    def boom():
        raise RuntimeError("no kernel for this dtype\nmore detail")

    jobs.submit([("bad", boom)])
    assert jobs.wait(["bad"], 10)
    got = jobs.get("bad")
    assert isinstance(got, pj.Failed)
    assert got.message == "RuntimeError: no kernel for this dtype"
    me = []
    assert jobs.run_here("here", lambda: me.append(threading.get_ident()) or 5) == 5
    assert me == [threading.get_ident()]
    assert jobs.get("here") == 5
    assert jobs.run_here("here", lambda: 6) == 5  # done: kept


def test_run_here_takes_a_queued_key_out_of_the_queue(jobs):
    release = _blocker(jobs)
    ran = []
    jobs.submit([("k", lambda: ran.append("worker") or "w")])
    assert jobs.run_here("k", lambda: ran.append("page") or "p") == "p"
    release.set()
    assert jobs.idle(10)
    assert ran == ["page"]
    assert jobs.get("k") == "p"


def test_results_are_bounded(jobs, monkeypatch):
    monkeypatch.setattr(pj, "MAX_RESULTS", 3)
    for i in range(5):
        jobs.run_here(i, lambda i=i: i)
    assert [jobs.get(i) for i in range(5)] == [None, None, 2, 3, 4]


def test_shutdown_stops_the_thread():
    j = pj.PrecisionJobs()
    j.shutdown()
    assert not j._thread.is_alive()


def test_forget_drops_a_result_so_the_key_runs_again_but_not_a_queued_one(jobs):
    calls = []
    jobs.run_here("k", lambda: calls.append(1) or len(calls))
    jobs.forget("k")
    assert jobs.get("k") is None
    jobs.submit([("k", lambda: calls.append(1) or len(calls))])
    assert jobs.wait(["k"], 10)
    assert jobs.get("k") == 2
    release = _blocker(jobs)
    jobs.submit([("q", lambda: "queued")])
    jobs.forget("q")  # queued, not done: left alone
    assert jobs.waiting("q")
    release.set()
    assert jobs.idle(10)
    assert jobs.get("q") == "queued"
