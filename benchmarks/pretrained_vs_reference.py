"""Our MiniLM with full capture vs transformers' BertModel returning attentions, same ids.

    python benchmarks/pretrained_vs_reference.py [--runs 9] [--device cpu] [--threads N]
                                                 [--keep-freed-memory]

Ours: `model.run_with_cache(ids)` with every hook point captured (explicit attention path).
Reference: `BertModel(..., attn_implementation="eager")(ids, output_attentions=True)`.
Both under torch.inference_mode, median of --runs calls after warm-up. The two are timed in
alternation (ours, reference, reference, ours, ...) so that load from other processes on a shared
machine falls on both; "ratio" is the median of the per-pair ratios. Goal: ratio <= 0.8 at 16
tokens, <= 1.0 at 128 and 512.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import print_table

from tformer.model.pretrained import load_pretrained, minilm_path
from tformer.ui.process import keep_freed_memory

GOALS = {16: 0.8, 128: 1.0, 512: 1.0}
TEXT = "Attention lets every token look at every other token and decide what matters. " * 80


def interleaved(a, b, runs: int, warmup: int) -> tuple[float, float, float]:
    """Median ms of a, of b, and median of the per-pair ratios a/b, alternating the order."""
    for _ in range(warmup):
        a()
        b()
    ta, tb = [], []
    for i in range(runs):
        for fn, times in ((a, ta), (b, tb)) if i % 2 == 0 else ((b, tb), (a, ta)):
            start = time.perf_counter()
            fn()
            times.append((time.perf_counter() - start) * 1e3)
    ratios = [x / y for x, y in zip(ta, tb, strict=True)]
    return statistics.median(ta), statistics.median(tb), statistics.median(ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    parser.add_argument(
        "--keep-freed-memory",
        action="store_true",
        help="glibc mallopt: serve big tensors from the heap, never trim it (fewer page faults)",
    )
    args = parser.parse_args()
    if args.runs < 9:
        parser.error("--runs must be at least 9")

    from transformers import BertModel  # the reference; never imported by tformer itself

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.keep_freed_memory and not keep_freed_memory():
        raise SystemExit("--keep-freed-memory needs Linux with glibc")
    device = torch.device(args.device)
    model, tok = load_pretrained("minilm", device=device)
    ref = BertModel.from_pretrained(str(minilm_path()), attn_implementation="eager").eval().to(device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    full = tok.encode(TEXT).ids  # 512 ids ending in [SEP]

    rows = []
    for n in GOALS:
        ids = torch.tensor([full[: n - 1] + full[-1:]], device=device)  # [batch=1, pos]
        out, cache = model.run_with_cache(ids)
        with torch.inference_mode():
            check = ref(input_ids=ids, output_attentions=True)
        err = (out - check.last_hidden_state).abs().max().item()

        def ours(ids=ids):
            model.run_with_cache(ids)
            sync()

        def reference(ids=ids):
            with torch.inference_mode():
                ref(input_ids=ids, output_attentions=True)
            sync()

        t_ours, t_ref, ratio = interleaved(ours, reference, args.runs, args.warmup)
        rows.append(
            [
                n,
                t_ours,
                t_ref,
                ratio,
                GOALS[n],
                "yes" if ratio <= GOALS[n] else "NO",
                len(cache),
                f"{err:.1e}",
            ]
        )
    print(
        f"device={device} threads={torch.get_num_threads()} torch={torch.__version__} "
        f"runs={args.runs} warmup={args.warmup} keep_freed_memory={args.keep_freed_memory}"
    )
    print_table(
        [
            "tokens",
            "ours ms",
            "reference ms",
            "ratio",
            "goal",
            "met",
            "tensors captured",
            "max |diff|",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
