"""How the pages word a measured time (`tformer.timing`): its spread, and the other work that
ran on the machine while it was measured. One wording for the costs, precision and Train
pages, so the same check reads the same everywhere."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..i18n import tr
from ..timing import BUSY_SHARE, Load, Timing
from .train_jobs import RACE_WARMUP_UPDATES

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


# --- the Train page's heads race ----------------------------------------------------------------


def race_times(
    evals: list[dict[str, Any]],
) -> tuple[dict[int, float], dict[int, tuple[float, float]], list[str]]:
    """From a heads race's evaluations (`tformer.ui.train_jobs` reports each head count's
    update times so far): each head count's median seconds per update, its quartiles, and the
    notes to show under the chart (other work that ran; head counts whose spreads overlap)."""
    last: dict[int, dict[str, Any]] = {}
    for e in evals:
        if "seconds_per_step" in e:
            last[int(e["heads"])] = e
    seconds = {h: float(e["seconds_per_step"]) for h, e in last.items()}
    spread = {
        h: (float(e["seconds_q1"]), float(e["seconds_q3"]))
        for h, e in last.items()
        if "seconds_q1" in e and "seconds_q3" in e
    }
    load = Load()
    for e in last.values():
        work = tuple(_work_item(k) for k in str(e.get("other_work", "")).split("|") if k)
        share = e.get("other_cpu")
        load = load.merge(
            Load(float(e.get("seconds_watched", 0.0)), None if share is None else float(share), work)
        )
    notes = [n for n in (load_note(load),) if n]
    heads = sorted(spread)
    overlaps = [
        tr("{a} and {b} heads", a=a, b=b)
        for a, b in zip(heads, heads[1:], strict=False)
        if spread[a][0] <= spread[b][1] and spread[b][0] <= spread[a][1]
    ]
    if overlaps:
        notes.append(
            tr(
                "The error bars of {pairs} overlap: their time per update does not differ measurably on "
                "this machine.",
                pairs=", ".join(overlaps),
            )
        )
    return seconds, spread, notes


def _work_item(text: str) -> tuple[int, str]:
    """One "id:kind" entry of a race evaluation's ``other_work``."""
    head, _, kind = text.partition(":")
    return (int(head), kind) if head.isdigit() and kind else (0, text)


def race_caption() -> str:
    """How the race's time per update is measured."""
    return (
        tr(
            "Time per update: the median of each update's own time (evaluations not counted), leaving "
            "out the first {skip} updates (the warm-up); the error bars span the quartiles.",
            skip=RACE_WARMUP_UPDATES,
        )
        + " "
        + busy_method()
    )
