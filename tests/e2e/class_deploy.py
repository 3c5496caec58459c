"""Run deploy/serve_class.py as an operator would, from tests and benchmarks.

`ClassDeployment` starts the script in its own process group on free loopback ports, waits for
its READY line, and stops it with SIGTERM (the way Ctrl+C or a service manager would), so what
is tested is the script itself. It also reads nginx's access log, which names the replica
(``upstream=``) and the affinity key (``route=``) of every request.
"""

from __future__ import annotations

import os
import random
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "deploy" / "serve_class.py"


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(n: int) -> int:
    """The first of ``n`` consecutive loopback ports that were free a moment ago."""
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(20_000, 60_000)
        if all(_free(base + i) for i in range(n)):
            return base
    raise RuntimeError(f"no {n} consecutive free ports found")


@dataclass
class Hit:
    path: str
    status: int
    upstream: str
    route: str


@dataclass
class ClassDeployment:
    run_dir: Path
    replicas: int = 2
    ready_timeout_s: float = 120.0
    extra_args: list[str] = field(default_factory=list)
    port: int = 0
    app_port: int = 0
    redis_port: int = 0
    proc: subprocess.Popen[str] | None = None
    output: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/_stcore/stream"

    @property
    def app_ports(self) -> list[int]:
        return [self.app_port + i for i in range(self.replicas)]

    def start(self) -> ClassDeployment:
        self.port = free_ports(1)
        self.app_port = free_ports(self.replicas)
        self.redis_port = free_ports(1)
        cmd = [
            sys.executable, str(SCRIPT), "--replicas", str(self.replicas), "--port", str(self.port),
            "--app-port", str(self.app_port), "--redis-port", str(self.redis_port),
            "--run-dir", str(self.run_dir), "--workers", "1", *self.extra_args,
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            cmd,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        ready = threading.Event()
        threading.Thread(target=self._read, args=(ready,), daemon=True).start()
        deadline = time.monotonic() + self.ready_timeout_s
        while not ready.wait(0.2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                out = "".join(self.output)
                self.stop()
                raise RuntimeError(f"serve_class.py did not get ready; its output:\n{out[-4000:]}")
        return self

    def _read(self, ready: threading.Event) -> None:
        assert self.proc is not None
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line)
            if line.startswith("READY "):
                ready.set()

    def wait_output(self, pattern: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for line in list(self.output):
                if re.search(pattern, line):
                    return line
            time.sleep(0.1)
        raise TimeoutError(f"no line matching {pattern!r}; output:\n{''.join(self.output)[-3000:]}")

    def redis_url(self) -> str:
        return (self.run_dir / "redis.url").read_text().strip()

    def replica_pid(self, i: int) -> int:
        return int((self.run_dir / f"replica-{i}.pid").read_text())

    def get(
        self, path: str, cookie: str | None = None, timeout_s: float = 10.0
    ) -> tuple[int, dict[str, str], str]:
        req = urllib.request.Request(self.url + path, headers={"Cookie": cookie} if cookie else {})
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            headers = {k.lower(): v for k, v in r.headers.items() if k.lower() != "set-cookie"}
            cookies = r.headers.get_all("Set-Cookie") or []
            headers["set-cookie"] = "\n".join(cookies)
            return r.status, headers, r.read().decode("utf-8", "replace")

    def hits(self) -> list[Hit]:
        """Every request nginx logged so far: path, status, which replica, which route key."""
        path = self.run_dir / "logs" / "nginx-access.log"
        out = []
        pattern = r'"[A-Z]+ (\S+) [^"]*" (\d+) \d+ upstream=(\S+) route=(\S+)'
        for line in path.read_text().splitlines() if path.exists() else []:
            m = re.search(pattern, line)
            if m:
                out.append(Hit(m.group(1), int(m.group(2)), m.group(3), m.group(4)))
        return out

    def cookie_for_each_replica(self, tries: int = 40) -> dict[str, str]:
        """An affinity cookie value that nginx routes to each replica (found by asking it):
        {"127.0.0.1:PORT": route}."""
        found: dict[str, str] = {}
        for _ in range(tries):
            route = secrets.token_hex(16)
            self.get("/_stcore/health", cookie=f"tformer_route={route}")
            time.sleep(0.02)  # nginx writes its access log line after the response
            for hit in self.hits():
                if hit.route == route:
                    found.setdefault(hit.upstream, route)
            if len(found) == self.replicas:
                return found
        raise RuntimeError(f"no cookie found for every replica in {tries} tries: {found}")

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """SIGTERM, as a service manager sends; the exit code (None if it had to be killed)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                return proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
                return None
        return proc.returncode

    def __enter__(self) -> ClassDeployment:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
