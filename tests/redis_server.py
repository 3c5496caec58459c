"""A throwaway `redis-server` for tests: a free loopback port, a temp dir, no persistence."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

REDIS_SERVER = os.environ.get("TFORMER_REDIS_SERVER", "/usr/bin/redis-server")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(executable: str, package: str) -> str:
    """The executable's path; outside CI a missing one skips the test, in CI it fails it
    (.ci/run installs it, so missing there is a broken set-up)."""
    path = (
        executable
        if os.path.isabs(executable) and os.access(executable, os.X_OK)
        else shutil.which(executable)
    )
    if path:
        return path
    what = f"{executable} not found (apt-get install {package})"
    if in_ci():
        pytest.fail(f"{what} (CI=true: these tests must run)")
    pytest.skip(what)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """``redis-server`` on 127.0.0.1:port with a password, nothing written to disk."""

    def __init__(self, folder: Path, password: str = "test-secret-pw") -> None:
        self.folder = folder
        self.password = password
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = 20.0) -> RedisServer:
        exe = require(REDIS_SERVER, "redis-server")
        self.folder.mkdir(parents=True, exist_ok=True)
        for _ in range(3):
            self.port = free_port()
            with open(self.folder / "redis.log", "ab") as log:  # the server keeps its own copy
                self.proc = subprocess.Popen(
                    [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                     "--dir", str(self.folder), "--requirepass", self.password, "--protected-mode", "yes"],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                )  # fmt: skip
            if self._wait(timeout_s):
                return self
            self.stop()
        raise RuntimeError(
            f"redis-server did not start; log:\n{(self.folder / 'redis.log').read_text()[-2000:]}"
        )

    def _wait(self, timeout_s: float) -> bool:
        import redis

        deadline = time.monotonic() + timeout_s
        client = redis.Redis.from_url(self.url, socket_connect_timeout=1)
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                return False
            try:
                if client.ping():
                    return True
            except redis.RedisError:
                time.sleep(0.05)
        return False

    def client(self):  # -> redis.Redis
        import redis

        return redis.Redis.from_url(self.url, decode_responses=True)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
