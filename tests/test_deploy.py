"""deploy/: the nginx configuration nginx itself accepts, and the script's settings (fast; the
running deployment is tested in tests/e2e/test_class_deploy.py)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .redis_server import require

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("serve_class", ROOT / "deploy" / "serve_class.py")
assert spec is not None
assert spec.loader is not None
serve_class = importlib.util.module_from_spec(spec)
sys.modules["serve_class"] = serve_class
spec.loader.exec_module(serve_class)


def test_nginx_accepts_the_rendered_configuration(tmp_path: Path):
    nginx = require("/usr/sbin/nginx", "nginx")
    for sub in ("logs", "tmp"):
        (tmp_path / sub).mkdir()
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        serve_class.render_nginx_conf(
            listen="127.0.0.1:18080", app_ports=[18501, 18502, 18503], run_dir=tmp_path
        )
    )
    out = subprocess.run(
        [nginx, "-t", "-p", str(tmp_path), "-c", str(conf), "-e", str(tmp_path / "logs" / "e.log")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "syntax is ok" in out.stderr


def test_the_configuration_routes_as_documented(tmp_path: Path):
    text = serve_class.render_nginx_conf(listen="0.0.0.0:8080", app_ports=[8501, 8502], run_dir=tmp_path)
    servers = re.findall(r"server 127\.0\.0\.1:(\d+) max_fails=2 fail_timeout=10s;", text)
    assert servers == ["8501", "8502"]
    assert "hash $route_key consistent;" in text
    assert "listen 0.0.0.0:8080;" in text
    ws = text[text.index("location /_stcore/stream") :]
    ws = ws[: ws.index("}")]
    for line in (
        "proxy_set_header Upgrade $http_upgrade;",
        "proxy_set_header Connection $connection_upgrade;",
        "proxy_set_header Host $http_host;",
        "proxy_read_timeout 3600s;",
    ):
        assert line in ws
    assert f"pid {tmp_path}/nginx.pid;" in text
    assert "@" not in re.sub(r"#.*", "", text)
    with pytest.raises(ValueError, match="1 to 16 replicas"):
        serve_class.render_nginx_conf(listen="127.0.0.1:1", app_ports=[], run_dir=tmp_path)


def test_redis_keeps_nothing_on_disk_and_listens_on_loopback(tmp_path: Path):
    conf = serve_class.redis_conf(6390, "pw123", tmp_path)
    lines = set(conf.splitlines())
    assert {"bind 127.0.0.1", 'save ""', "appendonly no", "requirepass pw123", "protected-mode yes"} <= lines


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--replicas", "0"], "--replicas must be 1..16"),
        (["--replicas", "17"], "--replicas must be 1..16"),
        (["--port", "80"], "--port must be a port above 1024"),
        (["--app-port", "99999"], "--app-port must be a port above 1024"),
    ],
)
def test_bad_settings_are_refused(argv, message, capsys):
    with pytest.raises(SystemExit):
        serve_class.parse_args(argv)
    assert message in capsys.readouterr().err


def test_a_port_in_use_is_named(tmp_path: Path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        busy = s.getsockname()[1]
        args = serve_class.parse_args(["--port", str(busy), "--run-dir", str(tmp_path)])
        with pytest.raises(SystemExit, match=f"port {busy} on 127.0.0.1 is in use"):
            serve_class.ClassServer(args).check()
