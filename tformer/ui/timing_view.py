"""How the pages word a measured time (`tformer.timing`): its spread, and the other work that
ran on the machine while it was measured. One wording for the costs, precision, Why attention and Train
pages, so the same check reads the same everywhere."""

from __future__ import annotations

from collections import Counter

from ..i18n import tr
from ..timing import BUSY_SHARE, Load, Timing

# the kinds of work `tformer.timing.activity` registers: (one, several)
ACTIVITIES = {
    "training run": ("1 training run", "{n} training runs"),
    "sweep": ("1 costs sweep", "{n} costs sweeps"),
    "precision timing": ("1 precision timing", "{n} precision timings"),
    "precision comparison": ("1 precision comparison", "{n} precision comparisons"),
}


def _work(load: Load) -> list[str]:
    parts = []
    for kind, n in sorted(Counter(load.others).items()):
        one, several = ACTIVITIES.get(kind, (kind, "{n} × " + kind))
        parts.append(tr(one) if n == 1 else tr(several, n=n))
    return parts


def load_note(load: Load) -> str | None:
    """One sentence naming the other work that ran during a measurement; None when the
    machine was quiet (`Load.busy`)."""
    if not load.busy:
        return None
    parts = _work(load)
    if load.other_cpu is not None and load.other_cpu >= BUSY_SHARE:
        parts.append(tr("other programs using {share:.0%} of the machine's CPU time", share=load.other_cpu))
    return tr(
        "Other work ran during this measurement: {what}. These times are slower and more spread "
        "out than on a quiet machine; measure again when it is quiet.",
        what="; ".join(parts),
    )


def busy_method() -> str:
    """How a page knows the machine was busy, in one sentence."""
    return tr(
        "Busy check: training runs, costs sweeps and precision timings running in this server at the "
        "same time, and the share of the machine's CPU time that other programs used meanwhile "
        "(Linux `/proc/stat` minus this server's own CPU time; busy from {share:.0%}).",
        share=BUSY_SHARE,
    )


def spread_ms(t: Timing) -> str:
    """The quartiles of a timing in ms, for a table cell: "12.1–12.6"."""
    return f"{t.q1 * 1e3:.3g}–{t.q3 * 1e3:.3g}"
