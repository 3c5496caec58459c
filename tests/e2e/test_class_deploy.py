"""deploy/serve_class.py: two replicas behind nginx with one Redis, as an operator starts them.

Checked through nginx: health, the affinity cookie (same cookie, same replica; no cookie, both
replicas), a page run over the websocket on each replica, a real browser page, one room seen
from two processes through the deployment's Redis (the replicas got its URL), a teacher's browser
on one replica and a student's on the other following it, a replica killed (nginx skips it, the
script restarts it), and SIGTERM stopping everything.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..redis_server import require
from .class_deploy import REPO, ClassDeployment
from .class_room import badge, eventually, go, join, open_room, path_of
from .streamlit_driver import (
    FIRST_RUN_TIMEOUT_MS,
    charts,
    exception_boxes,
    install,
    open_page,
    screenshot,
    selectbox_value,
    set_widget,
)
from .ws_client import StreamlitWsSession, run_load, run_sync


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClassDeployment]:
    require("/usr/sbin/nginx", "nginx")
    require("/usr/bin/redis-server", "redis-server")
    d = ClassDeployment(tmp_path_factory.mktemp("class")).start()
    try:
        yield d
    finally:
        d.stop()


def _nginx_logs(d: ClassDeployment, lines: int = 40) -> str:
    """The tail of nginx's error log and its access log's failed requests."""
    logs = d.run_dir / "logs"
    err = (logs / "nginx-error.log").read_text(errors="replace").splitlines()[-lines:]
    access = (logs / "nginx-access.log").read_text(errors="replace").splitlines()
    failed = [line for line in access if '" 2' not in line and '" 3' not in line and '" 101' not in line]
    return "\n".join(["nginx error log:", *err, "access log, failed:", *failed[-lines:]])


def _refused(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_health_and_sticky_sessions_through_nginx(deployment: ClassDeployment):
    status, headers, body = deployment.get("/_stcore/health")
    assert (status, body) == (200, "ok")
    cookie = next(c for c in headers["set-cookie"].split("\n") if c.startswith("tformer_route="))
    assert "HttpOnly" in cookie
    assert "SameSite=Lax" in cookie
    route = cookie.split(";")[0].split("=", 1)[1]
    for _ in range(6):
        status, headers, _ = deployment.get("/_stcore/health", cookie=f"tformer_route={route}")
        assert status == 200
        assert "tformer_route" not in headers["set-cookie"]  # set once
    time.sleep(0.2)
    mine = {h.upstream for h in deployment.hits() if h.route == route}
    assert len(mine) == 1, mine
    # without a cookie (a first visit) requests spread over the replicas
    for _ in range(30):
        deployment.get("/_stcore/health")
    time.sleep(0.2)
    used = {h.upstream for h in deployment.hits()}
    assert used == {f"127.0.0.1:{p}" for p in deployment.app_ports}


def test_a_page_runs_over_the_websocket_on_each_replica(deployment: ClassDeployment):
    cookies = deployment.cookie_for_each_replica()

    async def run(route: str) -> Any:
        headers = {"Cookie": f"tformer_route={route}"}
        async with StreamlitWsSession(deployment.ws_url, "attention", headers=headers) as s:
            first = await s.run(timeout=FIRST_RUN_TIMEOUT_MS / 1000)
            edit = await s.run({"text": "the river bridge at night"}, timeout=60)
            return first, edit

    for upstream, route in cookies.items():
        first, edit = run_sync(lambda route=route: run(route))
        assert first.status == "ok", upstream
        assert first.exceptions == [], upstream
        assert first.charts, upstream
        assert edit.status == "ok", upstream
        assert "bridge" in edit.ticktext(), upstream
    time.sleep(0.2)
    streams = {
        h.upstream for h in deployment.hits() if h.path.startswith("/_stcore/stream") and h.status == 101
    }
    assert streams == set(cookies)


@pytest.mark.parametrize("page", ["heads", "steps"])
def test_a_class_editing_at_once_spreads_over_the_replicas(deployment: ClassDeployment, page: str):
    """benchmarks/load.py --replicas 2 (class_load.py's edit mode), small: sessions without a
    cookie land on both replicas, and every edit comes back with the session's own words."""
    since = len(deployment.hits())
    rep = run_load(deployment.ws_url, sessions=6, edits=2, url_path=page, max_seconds=180)
    assert rep.errors == []
    assert len(rep.edit_latencies_s) == 12
    time.sleep(0.2)
    streams = Counter(
        h.upstream
        for h in deployment.hits()[since:]
        if h.path.startswith("/_stcore/stream") and h.status == 101
    )
    assert len(streams) == 2, streams


def test_a_browser_runs_the_app_through_nginx(deployment: ClassDeployment, browser: Any):
    ctx = browser.new_context(base_url=deployment.url + "/", viewport={"width": 1400, "height": 1000})
    try:
        page = ctx.new_page()
        install(page)  # the driver's run counters, which open_page waits on
        errors: list[str] = []
        # Requests the browser did not get whole (cut, refused, 5xx). Streamlit's frontend probes
        # <page>/_stcore/health and host-config first and takes their 404 as "no base path".
        lost: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("requestfailed", lambda r: lost.append(f"{r.url} failed: {r.failure}"))
        page.on("response", lambda r: lost.append(f"{r.url} {r.status}") if r.status >= 500 else None)
        open_page(page, "attention")
        screenshot(page, "class-deploy-through-nginx")
        why = f"lost: {lost}\n{_nginx_logs(deployment)}"
        assert charts(page).count() >= 1, why
        assert exception_boxes(page) == 0, why
        assert lost == [], why
        assert "[crit]" not in (deployment.run_dir / "logs" / "nginx-error.log").read_text(), why
        names = {c["name"] for c in ctx.cookies()}
        assert {"tformer_route", "_streamlit_xsrf"} <= names
    finally:
        ctx.close()


def test_one_room_spans_the_replicas_through_redis(deployment: ClassDeployment):
    url = deployment.redis_url()
    assert url.startswith("redis://:")
    assert f"127.0.0.1:{deployment.redis_port}" in url
    assert oct((deployment.run_dir / "redis.url").stat().st_mode & 0o777) == "0o600"
    for i in range(deployment.replicas):  # every replica was started with this Redis
        environ = Path(f"/proc/{deployment.replica_pid(i)}/environ").read_bytes().split(b"\0")
        assert f"TFORMER_REDIS_URL={url}".encode() in environ
    env = {**os.environ, "TFORMER_REDIS_URL": url}
    teacher = (
        "from tformer.rooms import room_store\n"
        "s = room_store(); t = s.open_room()\n"
        "s.publish(t.code, t.token, {'page': 'heads', 'layer': '4'})\n"
        "print(t.code, t.token)\n"
    )
    out = subprocess.run([sys.executable, "-c", teacher], env=env, capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    code, token = out.stdout.split()
    student = (
        "import sys\nfrom tformer.rooms import room_store\n"
        "s = room_store(); seat = s.join(sys.argv[1], '学生 1'); v = s.view(seat.code)\n"
        "s.submit(seat.code, seat.seat_id, 'q1', 'B')\n"
        "print(v.version, v.params['page'], v.params['layer'])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", student, code], env=env, capture_output=True, text=True, cwd=REPO
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "heads", "4"]
    check = (
        "import sys\nfrom tformer.rooms import room_store\n"
        "t = room_store().tally(sys.argv[1], sys.argv[2], 'q1'); print(t.present, t.counts)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", check, code, token], env=env, capture_output=True, text=True, cwd=REPO
    )
    assert out.stdout.strip() == "1 (('B', 1),)", out.stderr


def test_a_student_on_one_replica_follows_a_teacher_on_the_other(deployment: ClassDeployment, browser: Any):
    """The Live class across the replicas: the teacher's browser pinned (by nginx's cookie) to
    one replica, the student's to the other; the room is in the deployment's Redis."""
    routes = sorted(deployment.cookie_for_each_replica().items())
    (teacher_at, teacher_route), (student_at, student_route) = routes
    contexts, pages = [], []
    for route in (teacher_route, student_route):
        ctx = browser.new_context(base_url=deployment.url + "/", viewport={"width": 1400, "height": 1000})
        ctx.set_default_timeout(60_000)
        ctx.add_cookies([{"name": "tformer_route", "value": route, "url": deployment.url}])
        page = ctx.new_page()
        install(page)
        contexts.append(ctx)
        pages.append(page)
    teacher, student = pages
    try:
        open_page(teacher, "attention", timeout=FIRST_RUN_TIMEOUT_MS)
        go(teacher, "classroom")
        code = open_room(teacher)
        link = teacher.locator('[data-testid="stCode"]').first.inner_text().strip()
        assert link == f"{deployment.url}/classroom?room={code}"  # the address the class uses
        open_page(student, f"classroom?room={code}", timeout=FIRST_RUN_TIMEOUT_MS)
        join(student, "Mei")
        go(teacher, "qkv")
        took = eventually(
            "the student follows onto the teacher's page",
            lambda: path_of(student) == "qkv" and "Following your teacher" in badge(student),
            page=student,
        )
        set_widget(teacher, "head", "4")
        eventually(
            "the student's head follows", lambda: selectbox_value(student, "head") == "4", page=student
        )
        print(f"across replicas: the student on the teacher's page after {took:.1f} s")
        screenshot(student, "class-deploy-student-follows")
        assert exception_boxes(teacher) == 0
        assert exception_boxes(student) == 0
    finally:
        for ctx in contexts:
            ctx.close()
    time.sleep(0.2)  # nginx writes its access log after the response
    streams = {h.route: h.upstream for h in deployment.hits() if h.path.startswith("/_stcore/stream")}
    assert streams[teacher_route] == teacher_at
    assert streams[student_route] == student_at
    assert teacher_at != student_at


def test_a_dead_replica_is_skipped_and_restarted(deployment: ClassDeployment):
    pid = deployment.replica_pid(0)
    os.killpg(pid, signal.SIGKILL)
    for _ in range(20):  # nginx sends every request to the replica left (passive checks)
        status, _, body = deployment.get("/_stcore/health")
        assert (status, body) == (200, "ok")
    deployment.wait_output(r"replica 0 .* restarting \(1/3\)", timeout_s=15)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if deployment.replica_pid(0) != pid and not _refused(deployment.app_ports[0]):
            break
        time.sleep(0.2)
    else:
        raise AssertionError("replica 0 did not come back")


def test_sigterm_stops_everything(deployment: ClassDeployment):
    pids = [deployment.replica_pid(i) for i in range(deployment.replicas)]
    nginx_pid = int((deployment.run_dir / "nginx.pid").read_text())
    assert deployment.stop() == 0
    ports = [deployment.port, deployment.redis_port, *deployment.app_ports]
    assert all(_refused(p) for p in ports), ports
    for pid in [*pids, nginx_pid]:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    assert not (deployment.run_dir / "nginx.pid").exists()
    assert "stopped" in "".join(deployment.output)
