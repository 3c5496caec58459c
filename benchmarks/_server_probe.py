"""Loaded into a benchmark's Streamlit server (benchmarks/page_cost.py starts it through a
sitecustomize): records each script run's CPU time in its own thread, and with
TFORMER_PROBE_PROFILE=wall (or =cpu) also a cProfile of it: "wall" times with the default
clock (cheap, but a busy machine's waits count), "cpu" with this thread's CPU clock (a system
call per event: several times slower, and it weighs call-heavy Python more); =sample samples
the script thread's stack every millisecond (when it can take the GIL) and charges it the
thread's CPU time since the previous sample, written as collapsed stacks ("a;b;c cpu_us" a
line, the flame-graph format) to "<log>.<seq>.stacks", and the event loop thread's (which
serialises and sends the run's messages) to "<log>.<seq>.loopstacks".

Every script run appends one JSON line to $TFORMER_PROBE_LOG:
  {"seq": n, "page": <page asked for>, "thread_cpu_ms": ..., "wall_ms": ..., "profile": path|null}
The app itself is not touched: only Streamlit's ScriptRunner._run_script is wrapped.
"""

from __future__ import annotations

import cProfile
import itertools
import json
import os
import sys
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
        prof, sampler, loop = None, None, None
        if _PROFILE == "sample":
            # The sampler reads stacks only when it holds the GIL: with the default 5 ms switch
            # interval it would mostly see the points where the script releases it (a socket
            # send, a torch op) and charge them the Python work before. 0.2 ms evens that out.
            sys.setswitchinterval(0.0002)
            sampler = _Sampler(threading.get_ident())
            loop = _Sampler(threading.main_thread().ident or 0)  # the event loop: sends the messages
            sampler.start()
            loop.start()
        elif _PROFILE == "cpu":
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
            if sampler is not None and loop is not None:
                sampler.done.set()
                sampler.join()
                time.sleep(0.1)  # the event loop is still sending the run's last messages
                loop.done.set()
                loop.join()
            cpu_ms = (time.thread_time() - t_cpu) * 1000
            wall_ms = (time.perf_counter() - t_wall) * 1000
            path = None
            if prof is not None and _LOG:
                path = f"{_LOG}.{seq}.prof"
                prof.dump_stats(path)
            if sampler is not None and loop is not None and _LOG:
                path = f"{_LOG}.{seq}.stacks"
                sampler.dump(path)
                loop.dump(f"{_LOG}.{seq}.loopstacks")
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


class _Sampler(threading.Thread):
    """CPU-time sampling of one thread: each sample reads the thread's CPU clock and its stack."""

    def __init__(self, ident: int, interval_s: float = 0.001) -> None:
        super().__init__(name="probe-sampler", daemon=True)
        self.target, self.interval_s = ident, interval_s
        self.clock = time.pthread_getcpuclockid(ident)
        self.stacks: dict[tuple[str, ...], float] = {}
        self.done = threading.Event()

    def run(self) -> None:
        last = time.clock_gettime(self.clock)
        while not self.done.wait(self.interval_s):
            frame = sys._current_frames().get(self.target)
            now = time.clock_gettime(self.clock)
            if frame is None:
                continue
            names = []
            while frame is not None:
                code = frame.f_code
                names.append(f"{code.co_filename}:{code.co_firstlineno}({code.co_name})")
                frame = frame.f_back
            key = tuple(reversed(names))
            self.stacks[key] = self.stacks.get(key, 0.0) + (now - last)
            last = now

    def dump(self, path: str) -> None:
        with Path(path).open("w") as f:
            for key, cpu_s in self.stacks.items():
                f.write(f"{';'.join(key)} {round(cpu_s * 1e6)}\n")


_install()
