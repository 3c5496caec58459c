#!/usr/bin/env python
"""Server cost of every page: CPU time per text edit and per page open, and bytes sent.

No browser: one websocket session per page (tests/e2e/ws_client.py) that, like the browser,
tells the server which large messages it already holds, so an unchanged chart comes back as a
reference. For each page that shows the text and each size (16 / 128 / 512 MiniLM tokens):
one unmeasured warm-up edit, then --edits edits, each with a new text. Per edit:

  script cpu  CPU time of the script run's own thread (time.thread_time, recorded inside the
              server by benchmarks/_server_probe.py): the page's Python, torch, figure building;
  server cpu  CPU time of the whole server process from the edit's send until the server has
              handled it (the script thread plus Streamlit's event loop: hashing, serialising,
              the websocket; and any worker thread the edit starts): /proc/<pid>/stat, in clock
              ticks (10 ms), so the mean over the edits is printed, not the median;
  wall        send -> script_finished received;
  bytes       what the websocket carried for the edit.

Wall time on a busy machine waits for other programs; CPU times do not (much), which makes them
the numbers to compare between two versions of the app run one after the other. Page opens:
in one session, switching to each page from the previous one (at 16 tokens, text unchanged).

    .venv/bin/python benchmarks/page_cost.py                          # every page, 5 edits
    .venv/bin/python benchmarks/page_cost.py --pages attention,steps --edits 9
    .venv/bin/python benchmarks/page_cost.py --app-dir /work/wt/old202 --pages attention
    .venv/bin/python benchmarks/page_cost.py --pages steps --picks query,head,layer   # pickers too
    .venv/bin/python benchmarks/page_cost.py --pages masks --sizes 512 --profile /tmp/prof
        # cProfile each script run (slower; the files are /tmp/prof/<page>-<tokens>-<i>-0.prof)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._timing import print_table
from tests.e2e.streamlit_driver import AppServer, app_pages, default_app_dir, minilm_tokenizer, token_text
from tests.e2e.ws_client import RunResult, StreamlitWsSession

PROBE = Path(__file__).resolve().parent / "_server_probe.py"
TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process, its finished threads included."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S  # utime, stime (fields 14, 15)


@dataclass
class Row:
    measure: str  # "edit", "open" or "pick <key>"
    page: str
    tokens: int
    script_cpu_ms: list[float] = field(default_factory=list)
    server_cpu_ms: list[float] = field(default_factory=list)
    wall_ms: list[float] = field(default_factory=list)
    bytes: list[int] = field(default_factory=list)


class ProbedServer:
    """A `streamlit run` of the app under test with the probe loaded (a sitecustomize on
    PYTHONPATH), writing its per-run log into a temporary folder."""

    def __init__(self, app_dir: Path, profile: str, script: str = "app.py") -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="page_cost-"))
        (self.tmp / "sitecustomize.py").write_text(f"import runpy\nrunpy.run_path({str(PROBE)!r})\n")
        self.log = self.tmp / "runs.jsonl"
        env = {
            "PYTHONPATH": os.pathsep.join(filter(None, [str(self.tmp), os.environ.get("PYTHONPATH")])),
            "TFORMER_PROBE_LOG": str(self.log),
            "TFORMER_PROBE_PROFILE": profile,
        }
        self.server = AppServer(
            app_dir=app_dir, script=script, extra_env=env, log_path=self.tmp / "server.log"
        )
        self.seen = 0

    def start(self) -> ProbedServer:
        self.server.start(timeout_s=120)
        return self

    def stop(self) -> None:
        self.server.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def runs_since(self, want: int, timeout_s: float = 10.0) -> list[dict[str, Any]]:
        """The next `want` run records (waits for them: a run's record is written just after
        its script_finished is sent)."""
        deadline = time.monotonic() + timeout_s
        while True:
            lines = self.log.read_text().splitlines() if self.log.exists() else []
            if len(lines) >= self.seen + want or time.monotonic() > deadline:
                new = [json.loads(x) for x in lines[self.seen :]]
                self.seen = len(lines)
                return new
            time.sleep(0.01)


class Texts:
    """Texts of exact MiniLM token counts, each one new (no cache hit)."""

    def __init__(self, start: int) -> None:
        self.tok = minilm_tokenizer()
        self.variant = start

    def next(self, n: int) -> str:
        self.variant += 1
        return token_text(n, self.variant, self.tok)[0]


async def timed_run(
    s: StreamlitWsSession, srv: ProbedServer, updates: dict[str, Any] | None = None
) -> tuple[RunResult, float, float]:
    """One rerun: (result, server cpu ms, script-thread cpu ms)."""
    c0 = process_cpu_s(srv.server.pid)
    res = await s.run(updates, timeout=300, follow_reruns=True)
    await s.heartbeat()  # the server has handled everything the run sent
    c1 = process_cpu_s(srv.server.pid)
    recs = srv.runs_since(1)
    script = sum(r["thread_cpu_ms"] for r in recs)
    if res.exceptions:
        raise RuntimeError(f"the page raised: {res.exceptions[0]}")
    return res, (c1 - c0) * 1000, script


def _keep_profiles(srv: ProbedServer, recs_before: int, dest: Path | None, name: str) -> None:
    if dest is None:
        return
    dest.mkdir(parents=True, exist_ok=True)
    for i, p in enumerate(sorted(srv.tmp.glob("runs.jsonl.*.*"), key=lambda p: int(p.name.split(".")[2]))):
        if int(p.name.split(".")[2]) >= recs_before:
            shutil.move(str(p), dest / f"{name}-{i}.{p.name.split('.')[3]}")


async def measure_page(
    srv: ProbedServer,
    ws_url: str,
    page: str,
    sizes: list[int],
    edits: int,
    texts: Texts,
    profile: Path | None,
    picks: tuple[str, ...] = (),
) -> list[Row]:
    rows = []
    async with StreamlitWsSession(ws_url, page, remember_messages=True) as s:
        await timed_run(s, srv)  # open the page (first run of the session)
        for n in sizes:
            row = Row("edit", page or "start", n)
            for i in range(edits + 1):
                before = srv.seen
                res, server_ms, script_ms = await timed_run(s, srv, {"text": texts.next(n)})
                if i == 0:  # warms this length up
                    for p in srv.tmp.glob("runs.jsonl.*.*"):
                        p.unlink()
                    continue
                row.script_cpu_ms.append(script_ms)
                row.server_cpu_ms.append(server_ms)
                row.wall_ms.append(res.elapsed_s * 1000)
                row.bytes.append(res.bytes_received)
                _keep_profiles(srv, before, profile, f"{page}-{n}-{i}")
            rows.append(row)
            print(
                f"  {row.page} {n}: script cpu {statistics.median(row.script_cpu_ms):.0f} ms", file=sys.stderr
            )
            rows += [await measure_pick(s, srv, page, key, n, edits) for key in picks]
    return rows


async def measure_pick(
    s: StreamlitWsSession, srv: ProbedServer, page: str, key: str, n: int, runs: int
) -> Row:
    """Choose another option of selectbox ``key`` `runs` times (after one unmeasured change)."""
    row = Row(f"pick {key}", page or "start", n)
    for i in range(runs + 1):
        options = list(s.widgets[key].proto.options)[:4]
        now = s._states.get(s.widgets[key].id)
        current = now.string_value if now is not None else None
        target = next(o for o in options[1:] + options[:1] if o != current)
        res, server_ms, script_ms = await timed_run(s, srv, {key: target})
        if i == 0:
            continue
        row.script_cpu_ms.append(script_ms)
        row.server_cpu_ms.append(server_ms)
        row.wall_ms.append(res.elapsed_s * 1000)
        row.bytes.append(res.bytes_received)
    return row


async def measure_opens(
    srv: ProbedServer, ws_url: str, pages: list[str], rounds: int, texts: Texts
) -> list[Row]:
    """Switch pages in one session, as a sidebar link does (the text stays)."""
    rows = {p: Row("open", p or "start", 16) for p in pages}
    async with StreamlitWsSession(ws_url, pages[-1], remember_messages=True) as s:
        await timed_run(s, srv)
        for _ in range(rounds):
            await timed_run(s, srv, {"text": texts.next(16)})
            for p in pages:
                s.url_path, s.page_script_hash = p, s.pages.get(p, "")
                res, server_ms, script_ms = await timed_run(s, srv)
                rows[p].script_cpu_ms.append(script_ms)
                rows[p].server_cpu_ms.append(server_ms)
                rows[p].wall_ms.append(res.elapsed_s * 1000)
                rows[p].bytes.append(res.bytes_received)
    return list(rows.values())


def report(rows: list[Row]) -> None:
    header = [
        "measure",
        "page",
        "tokens",
        "n",
        "script cpu",
        "server cpu (mean)",
        "wall",
        "min wall",
        "bytes",
    ]
    table = [
        [
            r.measure,
            r.page,
            r.tokens,
            len(r.wall_ms),
            f"{statistics.median(r.script_cpu_ms):.0f}",
            f"{statistics.fmean(r.server_cpu_ms):.0f}",
            f"{statistics.median(r.wall_ms):.0f}",
            f"{min(r.wall_ms):.0f}",
            f"{statistics.median(r.bytes):,.0f}",
        ]
        for r in rows
    ]
    print("ms, median over n (server cpu: mean, from 10 ms clock ticks); bytes: median per rerun")
    print_table(header, table)


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--app-dir", type=Path, default=None, help="folder with app.py (default: this repo)")
    ap.add_argument("--pages", default="all", help='"all" (every page that shows the text) or url paths')
    ap.add_argument("--sizes", default="16,128,512")
    ap.add_argument("--edits", type=int, default=5, help="measured edits per page and size")
    ap.add_argument("--opens", type=int, default=0, help="rounds of page opens (0: none)")
    ap.add_argument(
        "--picks", default="", help="selectbox keys to change after each size's edits (e.g. query,head,layer)"
    )
    ap.add_argument("--profile", type=Path, default=None, help="write a cProfile of each measured run here")
    ap.add_argument(
        "--clock",
        choices=("wall", "cpu", "sample"),
        default="wall",
        help="the profile's clock (see _server_probe.py)",
    )
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)

    app_dir = (args.app_dir or default_app_dir()).resolve()
    specs = [p for p in app_pages(app_dir) if p.needs_text]
    known = [p.url_path for p in specs]
    pages = known if args.pages == "all" else [p.strip() for p in args.pages.split(",")]
    if unknown := [p for p in pages if p not in known]:
        raise SystemExit(f"--pages: {unknown} are not pages that show a text: {known}")
    sizes = [int(x) for x in args.sizes.split(",")]

    srv = ProbedServer(app_dir, profile=args.clock if args.profile is not None else "").start()
    ws_url = srv.server.ws_url
    texts = Texts(start=int(time.time()) % 1000)
    print(f"app {app_dir}; load average before: {load_average()}", file=sys.stderr)
    try:

        async def run_all() -> list[Row]:
            rows: list[Row] = []
            for p in pages:
                picks = tuple(k for k in args.picks.split(",") if k)
                rows += await measure_page(srv, ws_url, p, sizes, args.edits, texts, args.profile, picks)
            if args.opens:
                rows += await measure_opens(srv, ws_url, pages, args.opens, texts)
            return rows

        rows = asyncio.run(run_all())
    finally:
        srv.stop()
    print(f"app {app_dir}; load average after: {load_average()}")
    report(rows)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
