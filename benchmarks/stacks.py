#!/usr/bin/env python
"""Summarise the collapsed stacks that `page_cost.py --profile DIR --clock sample` writes: CPU
time per run, inclusive and exclusive, by function, averaged over the files given.

    .venv/bin/python benchmarks/stacks.py /tmp/prof/attention-512-*.stacks
    .venv/bin/python benchmarks/stacks.py /tmp/prof/masks-512-*.stacks --match tformer/ --top 40
    .venv/bin/python benchmarks/stacks.py /tmp/prof/steps-16-*.stacks --under page_links
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path


def read(path: Path) -> Counter[tuple[str, ...]]:
    out: Counter[tuple[str, ...]] = Counter()
    for line in path.read_text().splitlines():
        stack, _, us = line.rpartition(" ")
        out[tuple(stack.split(";"))] += int(us)
    return out


def short(frame: str) -> str:
    """site-packages/streamlit/x.py:12(f) -> streamlit/x.py:12(f); repo paths relative."""
    for marker in ("site-packages/", "/lib/python3.11/"):
        if marker in frame:
            return frame.split(marker, 1)[1]
    return frame.split("/wt/", 1)[-1].split("/", 1)[-1] if "/wt/" in frame else frame


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--match", default="", help="only functions whose frame contains this")
    ap.add_argument("--under", default="", help="only stacks through a frame containing this")
    args = ap.parse_args(argv)

    inclusive: Counter[str] = Counter()
    exclusive: Counter[str] = Counter()
    total = 0
    for path in args.files:
        for stack, us in read(path).items():
            if args.under and not any(args.under in f for f in stack):
                continue
            total += us
            exclusive[short(stack[-1])] += us
            for frame in set(stack):
                inclusive[short(frame)] += us
    n = len(args.files)
    print(
        f"{n} runs, {total / n / 1000:.1f} ms CPU a run sampled"
        + (f" under {args.under!r}" if args.under else "")
    )
    for title, table in (("inclusive", inclusive), ("exclusive", exclusive)):
        print(f"\n{title} ms a run")
        shown = [(f, us) for f, us in table.most_common() if args.match in f][: args.top]
        for frame, us in shown:
            print(f"{us / n / 1000:8.1f}  {frame}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
