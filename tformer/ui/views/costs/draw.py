"""The costs page's results as a reader sees them: the figures, the tables, the summaries and
why each method stopped, from a measured `Sweep` (`tformer.ui.views.costs.compute` runs the sweeps)."""

from __future__ import annotations

import math
from typing import Any

import plotly.graph_objects as go

from ....efficiency.costs import Sweep, describe_budget
from ....efficiency.measure import MIB, R2_MIN, REL_SPREAD, Curve
from ....figures.costs import Series, cost_lines
from ....figures.why import path_length_figure
from ....i18n import tr
from ...timing_view import load_note
from .compute import method_names


def shown_exponent(c: Curve) -> float | None:
    """The time exponent a page may show: only a good fit's (`tformer.efficiency.measure.Fit`)."""
    return c.time_fit.exponent if c.time_fit is not None and c.time_fit.good else None


def _legend(c: Curve, names: dict[str, str], what: str) -> str:
    name = names.get(c.method, c.method)
    exp = shown_exponent(c) if what == "time" else c.memory_exponent
    if exp is None:
        return name
    return tr("{method}: ∝ n^{exponent:.2f}", method=name, exponent=exp)


def cost_figures(sweep: Sweep) -> dict[str, go.Figure]:
    """The section's charts, titled in the current language."""
    names = method_names()
    x = tr("sequence length n (tokens)")
    time_series = [
        Series(
            _legend(c, names, "time"),
            c.n,
            c.time_s * 1e3,
            key=c.method,
            dash=_dash(c.method),
            lo=c.q1_s * 1e3,
            hi=c.q3_s * 1e3,
        )
        for c in sweep.curves
        if len(c.points)
    ]
    figs: dict[str, go.Figure] = {}
    if time_series:
        figs["time"] = cost_lines(
            time_series,
            title=tr("Time of one call against n (log-log: the slope is the exponent)"),
            x_title=x,
            y_title=tr("time (ms)"),
            y_unit="ms",
        )
    if sweep.kind in ("wall", "sparse") and sweep.memory_method != "none":
        mem = [
            Series(_legend(c, names, "memory"), c.n, c.peak_bytes / MIB, key=c.method, dash=_dash(c.method))
            for c in sweep.curves
            if len(c.points)
        ]
        if "scores_bytes" in sweep.extra:
            n, formula = sweep.extra["scores_bytes"]
            longest = max((int(c.n.max()) for c in sweep.curves if len(c.points)), default=int(n[0]))
            n, formula = n[n <= longest], formula[n <= longest]  # over the lengths measured
            mem.append(
                Series(
                    tr("formula: the scores alone, n² × heads × {size} bytes", size=_itemsize(sweep)),
                    n,
                    formula / MIB,
                    key="formula",
                    dash="dash",
                )
            )
        if mem:
            figs["memory"] = cost_lines(
                mem,
                title=tr("Peak memory of one call against n (measured)"),
                x_title=x,
                y_title=tr("peak memory (MiB)"),
                y_unit="MiB",
            )
    if sweep.kind == "rnn":
        figs["path"] = path_length_figure(sweep.extra["lengths"], sweep.extra["paths"])
    return figs


def _dash(method: str) -> str:
    return "dot" if method.startswith("dense_") else "solid"


def _itemsize(sweep: Sweep) -> int:
    return {"float32": 4, "float16": 2, "bfloat16": 2}.get(sweep.extra.get("dtype", "float32"), 4)


def cost_stops(sweep: Sweep) -> list[str]:
    """Why each method stopped where it did, one line each (markdown)."""
    names = method_names()
    out = []
    for c in sweep.curves:
        why = c.stop.render(tr) if c.stop is not None else tr("reached the longest length asked for")
        out.append("- " + tr("**{method}**: {why}", method=names.get(c.method, c.method), why=why))
    return out


def cost_budget_line(sweep: Sweep) -> str:
    return " ".join(
        [
            describe_budget(sweep).render(tr),
            tr("This sweep took {seconds:.1f} s.", seconds=sweep.seconds),
        ]
    )


def cost_table(sweep: Sweep) -> list[dict[str, Any]]:
    """Every measured point: method, n, the median time and its quartiles, the timed calls and
    whether their spread settled, peak memory, the method's time exponent (only from a good
    fit) and the fit's R²."""
    names = method_names()
    cols = cost_table_columns()
    yes, no = tr("yes"), tr("no")
    rows: list[dict[str, Any]] = []
    for c in sweep.curves:
        exponent = shown_exponent(c)
        rows.extend(
            {
                cols["method"]: names.get(c.method, c.method),
                cols["n"]: p.n,
                cols["time"]: round(p.time_s * 1e3, 3),
                cols["spread"]: f"{p.q1_s * 1e3:.3g}–{p.q3_s * 1e3:.3g}",
                cols["calls"]: p.repeats,
                cols["settled"]: yes if p.settled else no,
                cols["peak"]: None if p.peak_bytes is None else round(p.peak_bytes / MIB, 2),
                cols["exponent"]: None if exponent is None else round(exponent, 2),
                cols["r2"]: None if c.time_fit is None else round(c.time_fit.r2, 3),
            }
            for p in c.points
        )
    return rows


def cost_table_columns() -> dict[str, str]:
    return {
        "method": tr("method"),
        "n": tr("n"),
        "time": tr("time (ms)"),
        "spread": tr("quartiles (ms)"),
        "calls": tr("timed calls"),
        "settled": tr("spread under {share:.0%}", share=REL_SPREAD),
        "peak": tr("peak memory (MiB)"),
        "exponent": tr("time exponent"),
        "r2": tr("R² of the fit"),
    }


def cost_fit_note(sweep: Sweep) -> str | None:
    """Why some curves show no exponent (their fit is not good), one sentence; None when every
    curve with two points or more has one."""
    names = method_names()
    reasons = []
    for c in sweep.curves:
        fit = c.time_fit
        if fit is None or fit.good:
            continue
        name = names.get(c.method, c.method)
        if fit.points < 3:
            reasons.append(tr("{method} (only {k} lengths past the two shortest)", method=name, k=fit.points))
        elif not fit.monotonic:
            reasons.append(tr("{method} (its time fell as n grew)", method=name))
        else:
            reasons.append(tr("{method} (R² = {r2:.3f})", method=name, r2=fit.r2))
    if not reasons:
        return None
    return tr(
        "No time exponent is shown for {methods}: an exponent is shown only when log time follows "
        "a straight line in log n (R² of at least {r2min}) over at least three lengths past the two "
        "shortest and the time never falls as n grows. The measurement was noisy, or fixed costs dominate at these "
        "lengths: measure again on a quiet machine, or up to longer lengths.",
        methods="; ".join(reasons),
        r2min=R2_MIN,
    )


def cost_load_note(sweep: Sweep) -> str | None:
    """Other work that ran during the sweep (`tformer.timing.Load`), or None."""
    return load_note(sweep.load)


def sparse_cost_table(sweep: Sweep) -> list[dict[str, Any]]:
    """Per length: the stride, the share of the n² scores each mask allows and each
    implementation computes, and each method's time."""
    lengths = sweep.extra["lengths"]
    shares = sweep.extra["shares"]
    strides = sweep.extra["strides"]
    names = method_names()
    times = {
        c.method: {p.n: (p.time_s * 1e3, p.q1_s * 1e3, p.q3_s * 1e3) for p in c.points} for c in sweep.curves
    }
    rows = []
    for i, n in enumerate(lengths.tolist()):
        row: dict[str, Any] = {
            tr("n"): n,
            tr("stride s"): int(strides[i]),
            tr("local: share allowed"): f"{shares['local'][i]:.1%}",
            tr("local: share computed"): f"{shares['local_computed'][i]:.1%}",
            tr("strided: share allowed"): f"{shares['strided'][i]:.1%}",
            tr("strided: share computed"): f"{shares['strided_computed'][i]:.1%}",
        }
        for method in ("dense_local", "local", "dense_strided", "strided"):
            t = times.get(method, {}).get(n)
            # the median and, in brackets, the quartiles of the timed calls
            row[tr("{method} (ms)", method=names[method])] = (
                None if t is None else f"{t[0]:.3g} ({t[1]:.3g}–{t[2]:.3g})"
            )
        rows.append(row)
    return rows


def cost_summary(sweep: Sweep) -> str | None:
    """The wall in one sentence, at the longest length explicit attention and the fastest other
    method both reached; None when they share no length."""
    names = method_names()
    try:
        explicit = sweep.curve("explicit")
    except KeyError:
        return None
    best = None
    for c in sweep.curves:
        if c.method == "explicit":
            continue
        common = sorted(set(c.n.tolist()) & set(explicit.n.tolist()))
        if not common:
            continue
        n = common[-1]
        t = float(c.time_s[c.n.tolist().index(n)])
        if best is None or n > best[1] or (n == best[1] and t < best[2]):
            best = (c, n, t)
    if best is None:
        return None
    c, n, t = best
    te = float(explicit.time_s[explicit.n.tolist().index(n)])
    pe = explicit.peak_bytes[explicit.n.tolist().index(n)]
    pc = c.peak_bytes[c.n.tolist().index(n)]
    text = tr(
        "At n = {n}: explicit attention took {te:.1f} ms, {method} {tc:.1f} ms.",
        n=n,
        te=te * 1e3,
        method=names.get(c.method, c.method),
        tc=t * 1e3,
    )
    if math.isfinite(pe) and math.isfinite(pc):
        text += " " + tr(
            "Explicit attention held {pe:.1f} MiB at its peak, {method} {pc:.1f} MiB.",
            pe=pe / MIB,
            method=names.get(c.method, c.method),
            pc=pc / MIB,
        )
    return text


def cost_unavailable(sweep: Sweep) -> str | None:
    if not sweep.unavailable:
        return None
    from ....efficiency.costs import BACKENDS

    return tr(
        "Not offered on this device (a tiny call under the backend failed): {methods}.",
        methods=", ".join(f"`SDPBackend.{BACKENDS[m]}`" if m in BACKENDS else m for m in sweep.unavailable),
    )


# --- the masks on the current text ---------------------------------------------------------------------
