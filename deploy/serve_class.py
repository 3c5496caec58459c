#!/usr/bin/env python3
"""Serve a class from one machine: N replicas of the app behind nginx, rooms shared in Redis.

    .venv/bin/python deploy/serve_class.py --replicas 2 --host 0.0.0.0 --port 8080

starts one `redis-server` (loopback only, a random password, nothing written to disk), N app
replicas (`streamlit run serve.py`: each warms itself up as it starts; on 127.0.0.1, ports
--app-port, --app-port + 1, ...; each with TFORMER_REDIS_URL pointing at that Redis), and
Debian's nginx on --host:--port in front of them
(deploy/nginx.conf.in: sticky sessions by cookie, the websocket upgrade, passive health checks).
No root needed: nginx runs with its own prefix, config, pid and logs under --run-dir. It waits
until every replica answers /_stcore/health and nginx does too, prints the address, restarts a
replica whose process dies (at most --max-restarts times each), and stops everything on Ctrl+C
or SIGTERM (and, on Linux, when this script itself is killed).

With --redis-url, an existing Redis is used instead of starting one (several machines behind
one balancer share it). --print-nginx-conf prints the rendered configuration and exits.
Standard library only: runs with any Python 3.10+ that can run the app.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TEMPLATE = HERE / "nginx.conf.in"
MAX_REPLICAS = 16
NGINX = os.environ.get("TFORMER_NGINX", "/usr/sbin/nginx")
REDIS_SERVER = os.environ.get("TFORMER_REDIS_SERVER", "/usr/bin/redis-server")


class Stop(Exception):
    """Ctrl+C or SIGTERM: stop everything and exit."""


def log(msg: str) -> None:
    print(f"[serve_class] {msg}", flush=True)


# --- configuration ------------------------------------------------------------------------------


def render_nginx_conf(
    *, listen: str, app_ports: list[int], run_dir: Path, workers: str = "auto", template: Path = TEMPLATE
) -> str:
    """The nginx configuration for these replicas (every @NAME@ field filled)."""
    if not 1 <= len(app_ports) <= MAX_REPLICAS:
        raise ValueError(f"1 to {MAX_REPLICAS} replicas, not {len(app_ports)}")
    upstreams = "\n".join(f"        server 127.0.0.1:{p} max_fails=2 fail_timeout=10s;" for p in app_ports)
    text = template.read_text(encoding="utf-8")
    for name, value in (
        ("@UPSTREAMS@", upstreams),
        ("@LISTEN@", listen),
        ("@RUN_DIR@", str(run_dir)),
        ("@WORKERS@", workers),
    ):
        text = text.replace(name, value)
    if "@" in "".join(line.split("#")[0] for line in text.splitlines()):
        raise ValueError("the nginx template has a field this script does not fill")
    return text


def redis_conf(port: int, password: str, data_dir: Path) -> str:
    """A Redis that keeps rooms in memory only: loopback, a password, no snapshots, bounded."""
    return "\n".join(
        [
            "bind 127.0.0.1",
            f"port {port}",
            "protected-mode yes",
            f"requirepass {password}",
            'save ""',
            "appendonly no",
            f"dir {data_dir}",
            # rooms are bounded (tformer.rooms.RoomLimits); this is a last fence, refusing writes
            "maxmemory 1gb",
            "maxmemory-policy noeviction",
            "daemonize no",
            "",
        ]
    )


def port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _die_with_parent() -> None:
    """In the child, before exec: get SIGTERM when this script dies (Linux), so a killed
    serve_class.py leaves no replica, Redis or nginx behind."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


# --- processes ----------------------------------------------------------------------------------


@dataclass
class Child:
    name: str
    cmd: list[str]
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path = REPO
    proc: subprocess.Popen[bytes] | None = None
    restarts: int = 0

    def start(self) -> None:
        with open(self.log_path, "ab") as out:
            out.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(self.cmd)}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(
                self.cmd,
                cwd=self.cwd,
                env=self.env or None,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl+C reaches this script only; it stops them in order
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
            )

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def send(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 10.0) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=timeout_s)
        except ProcessLookupError:
            pass

    def log_tail(self, n: int = 1500) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""


def http_ok(url: str, timeout_s: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as r:
            return r.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False


def redis_ping(port: int, password: str, timeout_s: float = 1.0) -> bool:
    """AUTH and PING over the Redis protocol (no client library needed)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
            s.sendall(f"*2\r\n$4\r\nAUTH\r\n${len(password)}\r\n{password}\r\n*1\r\n$4\r\nPING\r\n".encode())
            got = b""
            while got.count(b"\r\n") < 2:
                chunk = s.recv(256)
                if not chunk:
                    break
                got += chunk
            return got.startswith(b"+OK\r\n+PONG")
    except OSError:
        return False


class ClassServer:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.run_dir: Path = args.run_dir.resolve()
        self.logs = self.run_dir / "logs"
        self.app_ports = [args.app_port + i for i in range(args.replicas)]
        self.redis: Child | None = None
        self.replicas: list[Child] = []
        self.nginx: Child | None = None
        self.redis_url = args.redis_url or ""

    # --- start ----------------------------------------------------------------------------------

    def check(self) -> None:
        a = self.args
        for exe, pkg in ((NGINX, "nginx"), *(() if a.redis_url else ((REDIS_SERVER, "redis-server"),))):
            if not (os.access(exe, os.X_OK) or shutil.which(exe)):
                raise SystemExit(f"{exe} not found: sudo apt-get install {pkg}")
        if not (Path(a.app_dir) / "app.py").is_file():
            raise SystemExit(f"no app.py in {a.app_dir}")
        wanted = [(a.host, a.port, "--port")] + [("127.0.0.1", p, "--app-port") for p in self.app_ports]
        if not a.redis_url:
            wanted.append(("127.0.0.1", a.redis_port, "--redis-port"))
        for host, port, flag in wanted:
            if not port_free(host, port):
                raise SystemExit(f"port {port} on {host} is in use: choose another with {flag}")

    def start(self) -> None:
        self.check()
        for d in (self.logs, self.run_dir / "tmp", self.run_dir / "redis"):
            d.mkdir(parents=True, exist_ok=True)
        if not self.redis_url:
            self._start_redis()
        env = dict(os.environ)
        env["TFORMER_REDIS_URL"] = self.redis_url
        # One cookie secret for all replicas (in the environment, not on a command line that
        # `ps` shows): Streamlit signs its XSRF cookie with it, so a browser moved to another
        # replica (its own went down) still has a valid one.
        env.setdefault("STREAMLIT_SERVER_COOKIE_SECRET", secrets.token_urlsafe(32))
        # the replicas share the cores: torch in each gets its share, unless told otherwise
        env.setdefault("TFORMER_THREADS", str(max(1, (os.cpu_count() or 2) // len(self.app_ports))))
        for i, port in enumerate(self.app_ports):
            cmd = [
                sys.executable, "-m", "streamlit", "run", "serve.py",
                "--server.port", str(port), "--server.address", "127.0.0.1",
                "--server.headless", "true", "--browser.gatherUsageStats", "false",
                "--server.fileWatcherType", "none",
            ]  # fmt: skip
            child = Child(
                f"replica {i} (:{port})", cmd, self.logs / f"replica-{i}.log", env, Path(self.args.app_dir)
            )
            child.start()
            self.replicas.append(child)
        self._write_pids()
        self._wait_replicas()
        self._start_nginx()

    def _write_pids(self) -> None:
        """replica-N.pid in the run folder: which process serves which port, for the operator."""
        for i, child in enumerate(self.replicas):
            if child.proc is not None:
                (self.run_dir / f"replica-{i}.pid").write_text(f"{child.proc.pid}\n")

    def _start_redis(self) -> None:
        password = secrets.token_urlsafe(24)
        conf = self.run_dir / "redis.conf"
        conf.write_text(redis_conf(self.args.redis_port, password, self.run_dir / "redis"))
        conf.chmod(0o600)
        self.redis_url = f"redis://:{password}@127.0.0.1:{self.args.redis_port}/0"
        url_file = self.run_dir / "redis.url"  # for the operator's tools; only they can read it
        url_file.write_text(self.redis_url + "\n")
        url_file.chmod(0o600)
        self.redis = Child("redis", [REDIS_SERVER, str(conf)], self.logs / "redis.log")
        self.redis.start()
        deadline = time.monotonic() + 20
        while not redis_ping(self.args.redis_port, password):
            if not self.redis.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start; its log:\n{self.redis.log_tail()}")
            time.sleep(0.05)
        log(f"redis on 127.0.0.1:{self.args.redis_port} (its URL, with the password: {url_file})")

    def _wait_replicas(self) -> None:
        deadline = time.monotonic() + self.args.ready_timeout
        waiting = {
            c.name: (c, f"http://127.0.0.1:{p}/_stcore/health")
            for c, p in zip(self.replicas, self.app_ports, strict=True)
        }
        while waiting:
            for name, (child, url) in list(waiting.items()):
                if not child.alive():
                    raise RuntimeError(f"{name} exited while starting; its log:\n{child.log_tail()}")
                if http_ok(url, 1.0):
                    log(f"{name} is healthy")
                    del waiting[name]
            if waiting and time.monotonic() > deadline:
                raise RuntimeError(f"not healthy after {self.args.ready_timeout:.0f} s: {', '.join(waiting)}")
            time.sleep(0.2)

    def _start_nginx(self) -> None:
        conf = self.run_dir / "nginx.conf"
        conf.write_text(
            render_nginx_conf(
                listen=f"{self.args.host}:{self.args.port}",
                app_ports=self.app_ports,
                run_dir=self.run_dir,
                workers=self.args.workers,
            )
        )
        for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (self.run_dir / "tmp" / sub).mkdir(parents=True, exist_ok=True)
        base = [NGINX, "-p", str(self.run_dir), "-c", str(conf), "-e", str(self.logs / "nginx-error.log")]
        test = subprocess.run([*base, "-t"], capture_output=True, text=True)
        if test.returncode != 0:
            raise RuntimeError(f"nginx refused {conf}:\n{test.stderr}")
        self.nginx = Child("nginx", [*base, "-g", "daemon off;"], self.logs / "nginx.log")
        self.nginx.start()
        health = f"http://127.0.0.1:{self.args.port}/_stcore/health"
        deadline = time.monotonic() + 20
        while not http_ok(health, 1.0):
            if not self.nginx.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"nginx did not answer; its log:\n{self.nginx.log_tail()}")
            time.sleep(0.05)

    # --- run ------------------------------------------------------------------------------------

    def url(self) -> str:
        host = self.args.host
        shown = socket.gethostname() if host in ("0.0.0.0", "::", "[::]") else host
        return f"http://{shown}:{self.args.port}/"

    def supervise(self) -> None:
        """Until stopped: restart a replica whose process died; give up when nginx or Redis die."""
        while True:
            time.sleep(1.0)
            for core in (self.nginx, self.redis):
                if core is not None and not core.alive():
                    raise RuntimeError(f"{core.name} exited; its log:\n{core.log_tail()}")
            for child in self.replicas:
                if child.proc is None or child.alive():
                    continue
                code = child.proc.returncode
                if child.restarts >= self.args.max_restarts:
                    log(f"{child.name} exited ({code}) and was restarted {child.restarts} times: left down")
                    child.proc = None
                    continue
                child.restarts += 1
                log(f"{child.name} exited ({code}): restarting ({child.restarts}/{self.args.max_restarts})")
                child.start()
                self._write_pids()

    def stop(self) -> None:
        # nginx first (no new requests), fast shutdown: a graceful one would wait for every
        # websocket to close; then the replicas; Redis last (its data is not kept).
        if self.nginx is not None:
            self.nginx.stop(signal.SIGTERM)
        for child in self.replicas:  # all at once: each takes a moment to close its sessions
            child.send(signal.SIGTERM)
        for child in self.replicas:
            child.stop()
        if self.redis is not None:
            self.redis.stop()
        log("stopped")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--replicas", type=int, default=2, help=f"app processes (1..{MAX_REPLICAS}); about one per core"
    )
    ap.add_argument(
        "--host", default="127.0.0.1", help="nginx's address: 0.0.0.0 to let the room's devices in"
    )
    ap.add_argument("--port", type=int, default=8080, help="nginx's port (above 1024: no root needed)")
    ap.add_argument(
        "--app-port", type=int, default=8501, help="the first replica's port; the next ones follow"
    )
    ap.add_argument("--redis-port", type=int, default=6390, help="the Redis started here (loopback only)")
    ap.add_argument("--redis-url", default=None, help="use this Redis instead of starting one")
    ap.add_argument("--run-dir", type=Path, default=REPO / "run" / "class", help="config, pid files and logs")
    ap.add_argument("--app-dir", type=Path, default=REPO, help="folder holding app.py")
    ap.add_argument("--workers", default="auto", help="nginx worker processes")
    ap.add_argument("--ready-timeout", type=float, default=120.0, help="seconds to wait for every replica")
    ap.add_argument("--max-restarts", type=int, default=3, help="restarts of a replica that died")
    ap.add_argument("--print-nginx-conf", action="store_true", help="print the nginx configuration and exit")
    args = ap.parse_args(argv)
    if not 1 <= args.replicas <= MAX_REPLICAS:
        ap.error(f"--replicas must be 1..{MAX_REPLICAS}")
    for flag in ("port", "app_port", "redis_port"):
        if not 1024 < getattr(args, flag) < 65536 - MAX_REPLICAS:
            ap.error(f"--{flag.replace('_', '-')} must be a port above 1024")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    server = ClassServer(args)
    if args.print_nginx_conf:
        print(
            render_nginx_conf(
                listen=f"{args.host}:{args.port}",
                app_ports=server.app_ports,
                run_dir=server.run_dir.resolve(),
            )
        )
        return 0

    def on_signal(signum: int, _frame: object) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Stop(signal.Signals(signum).name)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    status = 0
    try:
        server.start()
        ports = ", ".join(str(p) for p in server.app_ports)
        log(f"{args.replicas} replica(s) on 127.0.0.1 ports {ports}, behind nginx; logs in {server.logs}")
        log(f"Serving a class at {server.url()}  (Ctrl+C stops everything)")
        print(f"READY http://127.0.0.1:{args.port}/", flush=True)
        server.supervise()
    except Stop as sig:
        log(f"{sig}: stopping")
    except (RuntimeError, OSError) as err:
        log(f"error: {err}")
        status = 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        server.stop()
    return status


if __name__ == "__main__":
    sys.exit(main())
