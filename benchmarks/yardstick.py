#!/usr/bin/env python
"""tformer against the naive way, side by side in one run (issue 22, goal 5).

Starts two servers: the app (its Attention page, MiniLM) and benchmarks/naive_app.py (MiniLM's
forward with output_attentions on every rerun, one plotly heatmap trace per head, full-resolution
float JSON; Streamlit's default settings, as a naive app has them). One Chromium opens both; for
each size (MiniLM tokens, [CLS] and [SEP] included) each page gets one unmeasured warm-up edit,
then the edits alternate between the two pages (ours, naive, ours, naive, ...), each with a new
text: commit (Ctrl+Enter) -> settled, in page time, as benchmarks/latency.py measures (the
drawn and settled states of tests/e2e/streamlit_driver.py's wait_idle).

When the naive app fails (an error on its page: Streamlit refuses a message over its 200 MB
limit; a page that does not settle within --naive-timeout; a crashed browser tab), the time it
took to fail is its result at that size, the ratio a lower bound ("> x"), and that size is not
tried again. (Streamlit's limit stays: raised, the naive app's 416 MB frame at 512 tokens is more
than the DevTools protocol hands Playwright's driver, whose strings end at 512 MB: the driver
stops, and the browser's own time cannot be taken this way.) The table prints the medians and
quartiles, the bytes each rerun received over the websocket, the ratio naive / ours and whether
it reaches --min-ratio (10).

    .venv/bin/python benchmarks/yardstick.py                    # 128 and 512 tokens, 5 edits each
    .venv/bin/python benchmarks/yardstick.py --sizes 128 --runs 3 --naive-timeout 120

Exit status 0, or 1 with --strict when a ratio is under --min-ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._timing import print_table
from benchmarks.latency import Texts
from tests.e2e.streamlit_driver import (
    FIRST_RUN_TIMEOUT_MS,
    AppServer,
    WsMonitor,
    alert_texts,
    default_app_dir,
    exception_boxes,
    install,
    launch_chromium,
    open_page,
    set_text,
)

HERE = Path(__file__).resolve().parent
NAIVE_SCRIPT = "naive_app.py"
OURS_PATH = "attention"  # one head in detail and every layer x head: what the naive app shows


@dataclass
class Side:
    """One app in the comparison: its page, websocket monitor and what its edits measured."""

    name: str
    page: Any
    monitor: WsMonitor
    times_ms: dict[int, list[float]] = field(default_factory=dict)
    bytes: dict[int, list[int]] = field(default_factory=dict)
    failed: dict[int, tuple[float, str]] = field(default_factory=dict)  # size -> (ms it took, why)


def timed_edit(side: Side, text: str, timeout_ms: float) -> tuple[float, int, str | None]:
    """One edit: (commit -> settled ms, bytes received, None or why it failed)."""
    page, mon = side.page, side.monitor
    b0 = mon.bytes_received
    start = time.monotonic()
    try:
        m, idle = set_text(page, text, timeout=timeout_ms)
    except Exception as err:  # playwright's TimeoutError, or a crashed page ("Target crashed")
        took = time.monotonic() - start
        return took * 1e3, mon.bytes_received - b0, f"{type(err).__name__} after {took:.1f} s"
    t0 = idle.key_at_ms if idle.key_at_ms is not None and idle.key_at_ms >= m.t_page_ms else m.t_page_ms
    ms = idle.settled_at_ms - t0
    errors = exception_boxes(page)
    if errors:
        shown = " ".join(
            t.strip().splitlines()[0] for t in alert_texts(page) + _exception_texts(page) if t.strip()
        )
        return ms, mon.bytes_received - b0, f"error on the page after {ms / 1e3:.1f} s: {shown}"
    return ms, mon.bytes_received - b0, None


def _exception_texts(page: Any) -> list[str]:
    return [str(t) for t in page.locator('[data-testid="stException"]').all_inner_texts()]


def open_side(browser: Any, name: str, url: str, path: str) -> Side:
    ctx = browser.new_context(base_url=url + "/", viewport={"width": 1400, "height": 1000})
    page = ctx.new_page()
    install(page)
    mon = WsMonitor(page)
    open_page(page, path, FIRST_RUN_TIMEOUT_MS)
    return Side(name, page, mon)


def run(sides: list[Side], sizes: list[int], runs: int, timeouts: dict[str, float], texts: Texts) -> None:
    """For each size: a warm-up edit per side, then ``runs`` edits alternating between them."""
    for n in sizes:
        for side in sides:
            side.times_ms[n], side.bytes[n] = [], []
            ms, _, why = timed_edit(side, texts.next(n), timeouts[side.name])
            if why:
                side.failed[n] = (ms, f"warm-up: {why}")
            print(f"  {side.name} at {n} tokens: warmed up{' - ' + why if why else ''}", file=sys.stderr)
        for i in range(runs):
            for side in sides:
                if n in side.failed:
                    continue
                ms, got, why = timed_edit(side, texts.next(n), timeouts[side.name])
                if why:
                    side.failed[n] = (ms, why)
                    print(f"  {side.name} at {n} tokens: {why}", file=sys.stderr)
                    continue
                side.times_ms[n].append(ms)
                side.bytes[n].append(got)
                print(f"  {side.name} at {n} tokens, edit {i + 1}: {ms:.0f} ms", file=sys.stderr)


def _quartiles(xs: list[float]) -> str:
    if len(xs) < 2:
        return "-"
    q1, _, q3 = statistics.quantiles(xs, n=4)
    return f"{q1:.0f}-{q3:.0f}"


def report(ours: Side, naive: Side, sizes: list[int], min_ratio: float) -> bool:
    """Print the table; True when every ratio reaches ``min_ratio``."""
    header = ["tokens", "ours ms", "ours IQR", "ours bytes", "naive ms", "naive IQR", "naive bytes",
              "naive / ours", f">= {min_ratio:g}x"]  # fmt: skip
    rows, ok = [], True
    notes = []
    for n in sizes:
        mine = ours.times_ms.get(n, [])
        if not mine:
            rows.append(
                [n, "-", "-", "-", "-", "-", "-", "-", f"ours failed: {ours.failed.get(n, (0, '?'))[1]}"]
            )
            ok = False
            continue
        base = statistics.median(mine)
        theirs = naive.times_ms.get(n, [])
        if theirs:
            their_ms = statistics.median(theirs)
            ratio, shown = their_ms / base, f"{their_ms:.0f}"
            ratio_text = f"{ratio:.1f}"
        else:  # it failed: the time it took to fail bounds the ratio from below
            their_ms, why = naive.failed.get(n, (0.0, "no edit measured"))
            ratio = their_ms / base
            shown, ratio_text = f"failed after {their_ms:.0f}", f"> {ratio:.1f}"
            notes.append(f"naive at {n} tokens: {why}")
        good = ratio >= min_ratio
        ok &= good
        rows.append([
            n, f"{base:.0f}", _quartiles(mine), _median_bytes(ours.bytes.get(n, [])),
            shown, _quartiles(theirs), _median_bytes(naive.bytes.get(n, [])),
            ratio_text, "ok" if good else "UNDER",
        ])  # fmt: skip
    print("edit (Ctrl+Enter) -> settled, page clock, medians; edits alternate between the two apps\n")
    print_table(header, rows)
    for note in notes:
        print(note)
    return ok


def _median_bytes(xs: list[int]) -> str:
    return f"{statistics.median(xs):,.0f}" if xs else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="128,512", help="MiniLM token counts, comma-separated")
    ap.add_argument("--runs", type=int, default=5, help="measured edits per size and app (>= 1)")
    ap.add_argument(
        "--naive-timeout", type=float, default=300.0, help="seconds an edit of the naive app may take"
    )
    ap.add_argument("--min-ratio", type=float, default=10.0, help="the bar: naive / ours at least this")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a ratio is under --min-ratio")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be >= 1")
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    from playwright.sync_api import sync_playwright

    texts = Texts()
    started = time.monotonic()
    ours_server = AppServer(app_dir=default_app_dir()).start()
    naive_server = AppServer(app_dir=HERE, script=NAIVE_SCRIPT).start()
    try:
        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            ours = open_side(browser, "ours", ours_server.url, OURS_PATH)
            naive = open_side(browser, "naive", naive_server.url, "")
            timeouts = {"ours": float(FIRST_RUN_TIMEOUT_MS), "naive": args.naive_timeout * 1e3}
            run([ours, naive], sizes, args.runs, timeouts, texts)
            browser.close()
    finally:
        ours_server.stop()
        naive_server.stop()
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"token counts {'exact (MiniLM tokenizer)' if texts.exact else 'APPROXIMATE'}; "
          f"load average after the run {load} (1 / 5 / 15 min)")  # fmt: skip
    ok = report(ours, naive, sizes, args.min_ratio)
    print(f"\n(measured in {time.monotonic() - started:.0f} s)")
    return 0 if ok or not args.strict else 1


if __name__ == "__main__":
    sys.exit(main())
