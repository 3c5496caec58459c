"""Loaded into a benchmark's Streamlit server (benchmarks/page_cost.py starts it through a
sitecustomize): records each script run's CPU time in its own thread, and with
TFORMER_PROBE_PROFILE=wall (or =cpu) also a cProfile of it: "wall" times with the default
clock (cheap, but a busy machine's waits count), "cpu" with this thread's CPU clock (a system
call per event: several times slower, and it weighs call-heavy Python more).

Every script run appends one JSON line to $TFORMER_PROBE_LOG:
  {"seq": n, "page": <page asked for>, "thread_cpu_ms": ..., "wall_ms": ..., "profile": path|null}
The app itself is not touched: only Streamlit's ScriptRunner._run_script is wrapped.
"""

from __future__ import annotations

import cProfile
import itertools
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

_LOG = os.environ.get("TFORMER_PROBE_LOG")
_PROFILE = os.environ.get("TFORMER_PROBE_PROFILE", "")
_SEQ = itertools.count()
_LOCK = threading.Lock()


def _install() -> None:
    from streamlit.runtime.scriptrunner import script_runner

    original = script_runner.ScriptRunner._run_script

    def run_script(self: Any, rerun_data: Any) -> None:
        seq = next(_SEQ)
        prof = None
        if _PROFILE == "cpu":
            prof = cProfile.Profile(time.thread_time)
        elif _PROFILE == "wall":
            prof = cProfile.Profile()
        t_cpu, t_wall = time.thread_time(), time.perf_counter()
        if prof is not None:
            prof.enable()
        try:
            original(self, rerun_data)
        finally:
            if prof is not None:
                prof.disable()
            cpu_ms = (time.thread_time() - t_cpu) * 1000
            wall_ms = (time.perf_counter() - t_wall) * 1000
            path = None
            if prof is not None and _LOG:
                path = f"{_LOG}.{seq}.prof"
                prof.dump_stats(path)
            if _LOG:
                line = {
                    "seq": seq,
                    "page": rerun_data.page_name or rerun_data.page_script_hash,
                    "thread_cpu_ms": cpu_ms,
                    "wall_ms": wall_ms,
                    "profile": path,
                }
                with _LOCK, Path(_LOG).open("a") as f:
                    f.write(json.dumps(line) + "\n")

    script_runner.ScriptRunner._run_script = run_script  # type: ignore[method-assign]


_install()
