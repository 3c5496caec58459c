"""Shared fixtures: every test starts from a seeded torch, empty Streamlit caches, no app
singletons (the training manager) and no class rooms."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
import torch
from hypothesis import settings

from .redis_server import RedisServer

# Property tests check values, not speed (timings live in benchmarks/): no per-example deadline,
# which a busy 2-core machine can pass by a factor of two without anything being wrong.
settings.register_profile("tformer", deadline=None)
settings.load_profile("tformer")


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA (run on a GPU machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _fresh_state():
    torch.manual_seed(0)
    yield
    st = sys.modules.get("streamlit")
    if st is not None:  # only tests that imported streamlit have caches to clear
        st.cache_data.clear()
        st.cache_resource.clear()
    rooms = sys.modules.get("tformer.rooms.factory")
    if rooms is not None:  # the rooms of the process's store, and a remembered dead Redis
        rooms.forget_room_stores()
    room = sys.modules.get("tformer.ui.room")
    if room is not None:
        room.forget_failure()
    singletons = sys.modules.get("tformer.ui.singletons")
    if singletons is not None:  # no cache clear reaches these: drop them, stopping their threads
        for obj in singletons.reset().values():
            shutdown = getattr(obj, "shutdown", None)
            if callable(shutdown):
                shutdown()


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A redis-server of the module's own (tests/redis_server.py), stopped after its last test."""
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def runs_dir(tmp_path, monkeypatch):
    """The Train page saves into a temporary folder, and no training run outlives its test."""
    from tformer.ui.views.train.jobs import manager

    monkeypatch.setenv("TFORMER_RUNS_DIR", str(tmp_path))
    runs = manager()  # the one the page will use (singletons are dropped only after the test)
    yield tmp_path
    runs.shutdown()


@pytest.fixture
def one_thread():
    """Tiny models train fastest on one thread, and two threads crawl when other processes
    share the cores (OpenMP workers wait on each other). Restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
