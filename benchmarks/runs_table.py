"""What the Train page's runs table costs: reading N saved runs, and hostile run.json files.

One tiny run is trained and saved; N copies get a history of ``--updates`` updates (the size a
run of that length saves). Timed by the app's rule (`tformer.timing.measure`):

* a cold scan (`scan_runs`: every run.json and config.json read and checked, no cache);
* what a rerun of the section pays once the runs are cached: listing the folder and each
  folder's stamp (`folder_stamp`, the cache key);
* one run with its curves (`read_saved_run`), the overlay's read;
* refusals: a run.json over the 16 MB bound, one of 15 MB that is valid JSON with a history
  entry that is not a number, and 100,000 nested brackets;
* with ``--dense N``: a cold scan of N runs whose run.json holds 88,000 update records (15 MB,
  under the 16 MB bound: what no run of the app writes, but a folder may hold), which the
  scan's byte bound (`MAX_TABLE_BYTES`) cuts short.

    .venv/bin/python benchmarks/runs_table.py [--runs 50,200] [--updates 2000] [--dense 20]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import print_table

from tests._saved_runs import train_and_save
from tformer.model.model_files import folder_stamp
from tformer.timing import measure
from tformer.training.checkpoints import MAX_RUN_JSON_BYTES
from tformer.training.compare import (
    MAX_TABLE_BYTES,
    read_or_refuse,
    read_saved_run,
    run_folders,
    scan_runs,
)


def history(updates: int) -> dict:
    steps = [
        {"step": i, "loss": 2.0 / i, "lr": 1e-3, "grad_norm": 1.0 + 1 / i, "seconds": 0.0081234567}
        for i in range(1, updates + 1)
    ]
    evals = [{"step": i, "accuracy": min(1.0, i / updates)} for i in range(0, updates + 1, 20)]
    final = {
        "accuracy": 1.0,
        "step": updates,
        "loss": 0.001,
        "seconds": 16.2,
        "ms_per_update": [8.0, 8.1, 8.3],
    }
    return {"steps": steps, "evals": evals, "every": 1, "final": final}


def make_runs(root: Path, n: int, updates: int) -> None:
    template = root / "template"
    train_and_save(template, updates=2)
    meta = json.loads((template / "run.json").read_text())
    meta["history"] = history(updates)
    (template / "run.json").write_text(json.dumps(meta, indent=2))
    for i in range(n):
        shutil.copytree(template, root / f"run-{i:04d}")
    shutil.rmtree(template)


def stamps(root: Path) -> list[tuple]:
    """What a cached rerun reads: the folder's entries and each run's cache key."""
    return [folder_stamp(f, ("run.json", "config.json")) for f in run_folders(root)]


def ms(fn) -> str:
    t = measure(fn, min_repeats=3, max_repeats=9, max_seconds=20.0)
    return f"{1e3 * t.median:.1f} ({1e3 * t.q1:.1f}-{1e3 * t.q3:.1f})"


def hostile(root: Path) -> list[list[object]]:
    """The refusals, each timed on a spoiled copy of one saved run."""
    train_and_save(root / "h", updates=2)
    meta = json.loads((root / "h" / "run.json").read_text())
    rows = []
    big = root / "h" / "run.json"
    cases = {
        "over 16 MB": lambda: big.write_text(" " * (MAX_RUN_JSON_BYTES + 1)),
        "15 MB, a loss that is text": lambda: big.write_text(
            json.dumps({**meta, "history": {**history(90_000), "steps": [{"step": 1, "loss": "x"}]}})
            + " " * (15 * 2**20)
        ),
        "100,000 nested brackets": lambda: big.write_text("[" * 100_000 + "]" * 100_000),
    }
    for label, spoil in cases.items():
        spoil()
        size = big.stat().st_size
        rows.append([label, f"{size / 2**20:.1f} MB", ms(lambda: read_or_refuse(root / "h"))])
    return rows


def dense(root: Path, n: int) -> list[list[object]]:
    """A cold scan of ``n`` runs of 15 MB run.json each, and how many it read."""
    make_runs(root, n, 88_000)
    size = (root / "run-0000" / "run.json").stat().st_size
    scan = scan_runs(root)
    read = len(scan.runs) + len(scan.refused)
    return [[n, f"{size / 2**20:.1f} MB", f"{read} ({MAX_TABLE_BYTES / 2**20:.0f} MB bound)",
             ms(lambda: scan_runs(root))]]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", default="50,200")
    parser.add_argument("--updates", type=int, default=2000)
    parser.add_argument("--dense", type=int, default=0, help="runs of a 15 MB run.json to scan (0: none)")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; ms: median (quartiles)")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(x) for x in args.runs.split(",")):
            root = Path(tmp) / f"n{n}"
            root.mkdir()
            make_runs(root, n, args.updates)
            size = (root / "run-0000" / "run.json").stat().st_size
            rows.append([n, f"{size / 1e3:.0f} kB", ms(lambda root=root: scan_runs(root)),
                         ms(lambda root=root: stamps(root)), ms(lambda root=root: read_saved_run(root / "run-0000"))])  # fmt: skip
        print_table(
            ["runs", "run.json", "cold scan ms", "cached rerun ms (stamps)", "one run with curves ms"], rows
        )
        print()
        print_table(["hostile run.json", "size", "refused in ms"], hostile(Path(tmp)))
        if args.dense:
            print()
            (Path(tmp) / "dense").mkdir()
            rows = dense(Path(tmp) / "dense", args.dense)
            print_table(["runs", "run.json", "read", "cold scan ms"], rows)


if __name__ == "__main__":
    main()
