"""The costs page's results as a reader sees them: the figures, the tables, the summaries and
why each method stopped, from a measured `Sweep` (`tformer.ui.cost_data` runs the sweeps)."""

from __future__ import annotations

import math
from typing import Any

import plotly.graph_objects as go

from ..costs import Sweep, describe_budget
from ..costs_measure import MIB, Curve
from ..figures.costs import Series, cost_lines
from ..i18n import tr
from .cost_data import method_names


def _legend(c: Curve, names: dict[str, str], what: str) -> str:
    name = names.get(c.method, c.method)
    exp = c.time_exponent if what == "time" else c.memory_exponent
    if exp is None:
        return name
    return tr("{method}: ∝ n^{exponent:.2f}", method=name, exponent=exp)


def cost_figures(sweep: Sweep) -> dict[str, go.Figure]:
    """The section's charts, titled in the current language."""
    names = method_names()
    x = tr("sequence length n (tokens)")
    time_series = [
        Series(_legend(c, names, "time"), c.n, c.time_s * 1e3, key=c.method, dash=_dash(c.method))
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
        n = sweep.extra["lengths"]
        paths = sweep.extra["paths"]
        figs["path"] = cost_lines(
            [
                Series(
                    tr("GRU: path from the first to the last token (n − 1)"),
                    n,
                    paths["gru"]["path"],
                    key="gru",
                ),
                Series(
                    tr("GRU: steps that must run one after another (n)"),
                    n,
                    paths["gru"]["sequential"],
                    key="gru",
                    dash="dot",
                ),
                Series(
                    tr("attention: path and sequential steps (1)"),
                    n,
                    paths["attention"]["path"],
                    key="attention",
                ),
            ],
            title=tr("How many steps separate the first and the last token"),
            x_title=x,
            y_title=tr("steps"),
        )
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
    """Every measured point: method, n, time, peak memory, the method's fitted exponent."""
    names = method_names()
    cols = cost_table_columns()
    rows = []
    for c in sweep.curves:
        for p in c.points:
            rows.append(
                {
                    cols["method"]: names.get(c.method, c.method),
                    cols["n"]: p.n,
                    cols["time"]: round(p.time_s * 1e3, 3),
                    cols["peak"]: None if p.peak_bytes is None else round(p.peak_bytes / MIB, 2),
                    cols["exponent"]: None if c.time_exponent is None else round(c.time_exponent, 2),
                }
            )
    return rows


def cost_table_columns() -> dict[str, str]:
    return {
        "method": tr("method"),
        "n": tr("n"),
        "time": tr("time (ms)"),
        "peak": tr("peak memory (MiB)"),
        "exponent": tr("time exponent"),
    }


def sparse_cost_table(sweep: Sweep) -> list[dict[str, Any]]:
    """Per length: the stride, the share of the n² scores each mask allows and each
    implementation computes, and each method's time."""
    lengths = sweep.extra["lengths"]
    shares = sweep.extra["shares"]
    strides = sweep.extra["strides"]
    names = method_names()
    times = {c.method: dict(zip(c.n.tolist(), (c.time_s * 1e3).tolist(), strict=True)) for c in sweep.curves}
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
            row[tr("{method} (ms)", method=names[method])] = None if t is None else round(t, 2)
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
    from ..costs import BACKENDS

    return tr(
        "Not offered on this device (a tiny call under the backend failed): {methods}.",
        methods=", ".join(f"`SDPBackend.{BACKENDS[m]}`" if m in BACKENDS else m for m in sweep.unavailable),
    )


# --- the masks on the current text ---------------------------------------------------------------------
