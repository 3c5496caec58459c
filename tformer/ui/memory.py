"""What a capture takes in memory, in words: stated on the Attention page and in the guard's
refusal, each term its shape times 4 bytes (`tformer.model.capture.capture_memory`)."""

from __future__ import annotations

from ..i18n import tr
from ..model.capture import FLOAT32_BYTES, CaptureMemory, TextCapture, capture_memory
from .caches import MAX_CAPTURE_BYTES

# The [layer, head_index, query_pos, key_pos] arrays, named as the page names them.
SQUARE_NAMES = {"pattern": "weights", "attn_scores": "scores"}


def mib(nbytes: int) -> str:
    """Bytes in MiB, as the page writes them: 0.3 MiB, 4.0 MiB, 128 MiB, 1,536 MiB."""
    value = nbytes / 2**20
    return f"{value:,.1f} MiB" if value < 10 else f"{value:,.0f} MiB"


def memory_terms(mem: CaptureMemory) -> list[str]:
    """The capture's memory term by term: each [layer, head, n, n] array as its product, the
    rest in one term, then the forward's working memory (translated)."""
    terms = []
    other = mem.stored
    for name, shape in mem.arrays:
        if name not in SQUARE_NAMES:
            continue
        other -= mem.nbytes(name)
        layers, heads, n, _ = shape
        terms.append(
            tr(
                "{what} [layer, head, query, key]: {layers} × {heads} × {n:,}² × {b} bytes = {size}",
                what=tr(SQUARE_NAMES[name]),
                layers=layers,
                heads=heads,
                n=n,
                b=FLOAT32_BYTES,
                size=mib(mem.nbytes(name)),
            )
        )
    terms.append(
        tr("the other activations and the output: {size}", size=mib(other))
        if terms
        else tr("the activations and the output: {size}", size=mib(other))
    )
    if mem.working == mem.attention_working:
        terms.append(
            tr(
                "while the model runs, one layer's scores and weights: 2 × {heads} × {n:,}² × {b} bytes "
                "= {size}",
                heads=mem.n_heads,
                n=mem.n_pos,
                b=FLOAT32_BYTES,
                size=mib(mem.working),
            )
        )
    else:
        terms.append(
            tr(
                "while the model runs, one layer's FFN activations: 2 × {n:,} × {d_mlp:,} × {b} bytes = {size}",
                n=mem.n_pos,
                d_mlp=mem.d_mlp,
                b=FLOAT32_BYTES,
                size=mib(mem.working),
            )
        )
    return terms


def memory_note(capture: TextCapture) -> str:
    """What this capture took, said under a page's figures (translated)."""
    mem = capture_memory(capture.cfg, capture.n_pos, capture.names, capture.layers)
    return tr(
        "Memory of this capture (float32, from the shapes): {terms}. {stored} kept, {peak} at the "
        "peak of the run; the limit for one capture is {limit}.",
        terms="; ".join(memory_terms(mem)),
        stored=mib(mem.stored),
        peak=mib(mem.peak),
        limit=mib(MAX_CAPTURE_BYTES),
    )


def refusal(mem: CaptureMemory, names: tuple[str, ...]) -> str | None:
    """None when a capture of this size fits `MAX_CAPTURE_BYTES` at its peak, else why it is
    refused, with every figure (translated)."""
    if mem.peak <= MAX_CAPTURE_BYTES:
        return None
    return tr(
        "capturing {names} for {n:,} tokens would take {peak} at the peak of the run ({terms}); the "
        "limit for one capture is {limit}. Use a shorter text, or fewer layers or heads.",
        names=", ".join(names),
        n=mem.n_pos,
        peak=mib(mem.peak),
        terms="; ".join(memory_terms(mem)),
        limit=mib(MAX_CAPTURE_BYTES),
    )
