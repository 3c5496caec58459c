"""Plain forward vs full capture on a MiniLM-sized encoder (6 layers, 12 heads, d_model 384).

    python benchmarks/capture_overhead.py [--runs 9] [--device cpu]

Prints the median time of `model(ids)` (fused attention, nothing captured) and of
`model.run_with_cache(ids)` (every hook, explicit attention), both under inference_mode.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import median_ms, print_table

from tformer import Encoder, EncoderConfig, pick_device
from tformer.ui.process import keep_freed_memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--device", default=None, help="default: tformer.pick_device()")
    parser.add_argument(
        "--keep-freed-memory",
        action="store_true",
        help="glibc mallopt as the app sets it (fewer page faults for big captures)",
    )
    args = parser.parse_args()
    if args.keep_freed_memory and not keep_freed_memory():
        raise SystemExit("--keep-freed-memory needs Linux with glibc")
    device = torch.device(args.device) if args.device else pick_device()
    cfg = EncoderConfig(
        vocab_size=30522, max_len=512, d_model=384, n_heads=12, n_layers=6, d_ff=1536, activation="gelu"
    )
    model = Encoder(cfg).eval().to(device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    rows = []
    for n in (16, 128, 512):
        ids = torch.randint(0, cfg.vocab_size, (1, n), generator=torch.Generator().manual_seed(n)).to(device)

        def plain(ids: torch.Tensor = ids) -> None:
            with torch.inference_mode():
                model(ids)
            sync()

        def capture(ids: torch.Tensor = ids) -> None:
            model.run_with_cache(ids)
            sync()

        p, c = median_ms(plain, args.runs), median_ms(capture, args.runs)
        n_hooks = len(model.run_with_cache(ids)[1])
        rows.append([n, p, c, c / p, n_hooks])
    print(
        f"device={device} threads={torch.get_num_threads()} torch={torch.__version__} runs={args.runs} "
        f"keep_freed_memory={args.keep_freed_memory}"
    )
    print_table(["tokens", "forward ms", "run_with_cache ms", "ratio", "tensors captured"], rows)


if __name__ == "__main__":
    main()
