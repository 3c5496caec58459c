"""Edit latency and memory of a BERT-base-sized random model (12 layers x 12 heads x 768).

    python benchmarks/bert_base_capture.py [--runs 15] [--tokens 128] [--threads N] [--names attention|all]

What one text edit costs the server on such a model: `tformer.capture_text` (tokenize, one
hooked forward pass through the explicit attention, copy into the capture's arrays), timed
--runs times after two warm-up calls; prints the median with the quartiles and min/max, the
capture's size against `capture_nbytes`, and the process's peak RSS growth over the model.
The model is random (nothing to download) with BERT-base's shape and the scratch vocabulary.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from tformer import Encoder, EncoderConfig, capture_text
from tformer.model.capture import ATTENTION, available_names, capture_nbytes
from tformer.model.tokenizer import scratch_tokenizer

TEXT = "Attention lets every token look at every other token and decide what matters. " * 80


def _status_mib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024  # kB
    raise RuntimeError(f"no {field} in /proc/self/status (Linux only)")


def peak_growth_mib(fn) -> float:
    """Peak RSS during fn() above the RSS before it (Linux: the high-water mark is reset)."""
    Path("/proc/self/clear_refs").write_text("5")
    before = _status_mib("VmRSS")
    fn()
    return _status_mib("VmHWM") - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--names", choices=("attention", "all"), default="attention")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    tok = scratch_tokenizer(max_len=args.tokens)
    cfg = EncoderConfig(
        vocab_size=tok.vocab_size,
        max_len=512,
        d_model=768,
        n_heads=12,
        n_layers=12,
        d_ff=3072,
        pos_encoding="learned",
        activation="gelu",
        type_vocab_size=2,
        embed_norm=True,
    )
    model = Encoder(cfg).eval()
    names = ATTENTION if args.names == "attention" else available_names(cfg)
    n = len(tok.encode(TEXT).ids)
    for _ in range(2):
        cap = capture_text(model, tok, TEXT, names)
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        cap = capture_text(model, tok, TEXT, names)
        times.append((time.perf_counter() - start) * 1e3)
    q1, med, q3 = statistics.quantiles(times, n=4)
    print(f"model: 12 x 12 x 768, {cfg.n_params() / 1e6:.1f} M parameters, {torch.get_num_threads()} threads")
    print(f"capture_text at {n} tokens, {len(names)} activations, {args.runs} runs")
    print(
        f"  median {med:.1f} ms  (quartiles {q1:.1f} - {q3:.1f}, min {min(times):.1f}, max {max(times):.1f})"
    )
    print(
        f"  capture holds {cap.nbytes / 2**20:.1f} MiB; capture_nbytes says {capture_nbytes(cfg, n, names) / 2**20:.1f} MiB"
    )
    del cap
    for tokens in sorted({n, 512}):
        text_tok = scratch_tokenizer(max_len=tokens)
        grow = peak_growth_mib(lambda t=text_tok: capture_text(model, t, TEXT, names))
        est = capture_nbytes(cfg, len(text_tok.encode(TEXT).ids), names) / 2**20
        print(
            f"  {tokens} tokens: peak RSS growth during one capture {grow:.1f} MiB; capture_nbytes {est:.1f} MiB"
        )


if __name__ == "__main__":
    main()
