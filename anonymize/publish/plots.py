"""Pictures of releases: the privacy/utility trade-off and how records spread over classes.

What ``--plot OUT.png`` draws on ``ppdm anonymize``, ``ppdm tune`` and ``ppdm check`` (PNG, through
matplotlib's Agg renderer: no display, no pyplot global state):

* :func:`draw_tradeoff` — one parameter (k, l or t) on the x axis; information loss of the release
  on the left axis (NCP in [0, 1], or this project's CDM on a log scale) and disclosure probability
  P = the largest share of one sensitive value in a class on the right axis (Y. Xu, H. Guo,
  "Privacy protection model and parameter optimization method for data dissemination",
  Computer Engineering 47(5), 2021, §3.1), with the bounds P_max and Q as dashed lines and the
  chosen value marked — the picture of their Figs. 3–5;
* :func:`draw_class_sizes` — records per class size (a histogram weighted by records, so a class of
  500 counts 500 times: what share of the data sits in small classes);
* :func:`draw_disclosure_profile` — for one release, the share of records whose class lets an
  adversary guess the sensitive value with probability above p, for every p.

Files are written atomically (temporary file in the target directory, then ``os.replace``).
matplotlib is the optional ``plots`` extra (``pip install 'ppdm[plots]'``): without it
:func:`new_figure` raises ``ModuleNotFoundError`` saying so.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "draw_tradeoff",
    "draw_class_sizes",
    "draw_disclosure_profile",
    "new_figure",
    "save_figure",
    "plot_tune",
    "plot_release",
    "plot_profile",
    "plot_sweep_qi",
]


def new_figure(n_panels: int, title: str | None = None, width_per_panel: float = 5.2, height: float = 3.8):
    """A matplotlib Figure with ``n_panels`` axes side by side (Agg canvas, no pyplot)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ModuleNotFoundError as e:
        if not (e.name or "").startswith("matplotlib"):
            raise
        raise ModuleNotFoundError("plots need matplotlib: pip install 'ppdm[plots]'", name=e.name) from None

    fig = Figure(figsize=(width_per_panel * n_panels, height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, n_panels, i + 1) for i in range(n_panels)]
    if title:
        fig.suptitle(title, fontsize=11)
    return fig, axes


def save_figure(fig, path, dpi: int = 110) -> None:
    """Write ``fig`` as PNG to ``path`` atomically (:func:`.io.atomic_write`)."""
    from .io import atomic_write

    atomic_write(path, lambda fh: fig.savefig(fh, format="png", dpi=dpi))


def draw_tradeoff(
    ax,
    rows: Sequence[dict],
    param: str,
    *,
    loss: str = "ncp",
    pmax: float | None = None,
    bound: float | None = None,
    chosen=None,
    title: str | None = None,
) -> None:
    """Trade-off curve on ``ax``: ``rows`` are dicts with ``param``, ``ok``, ``loss`` (``'ncp'`` or
    ``'cdm'``) and ``disclosure``; rows without a release are left out. ``pmax`` / ``bound`` draw the
    two requirements, ``chosen`` marks the chosen parameter value."""
    good = [r for r in rows if r.get("ok") and param in r]
    good.sort(key=lambda r: r[param])
    x = np.array([r[param] for r in good], dtype=np.float64)
    y = np.array([r[loss] for r in good], dtype=np.float64)
    p = np.array([r["disclosure"] for r in good], dtype=np.float64)
    c_loss, c_p = "tab:blue", "tab:red"
    ax.plot(x, y, "o-", color=c_loss, ms=3, lw=1.4, label="information loss" if loss == "ncp" else "CDM")
    ax.set_xlabel(param)
    if param in ("k", "l") and len(x) and np.allclose(x, np.round(x)):
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("information loss (NCP)" if loss == "ncp" else "CDM = Σ|E|²/N (log)", color=c_loss)
    ax.tick_params(axis="y", colors=c_loss)
    if loss == "cdm" and len(y) and np.all(y > 0):
        ax.set_yscale("log")
    elif loss == "ncp":
        ax.set_ylim(0, 1.02)
    if bound is not None:
        ax.axhline(bound, color=c_loss, ls="--", lw=1, alpha=0.8)
        ax.annotate(
            f"Q = {bound:g}", (0.01, bound), xycoords=("axes fraction", "data"), color=c_loss, fontsize=8, va="bottom"
        )
    ax2 = ax.twinx()
    ax2.plot(x, p, "s-", color=c_p, ms=3, lw=1.4, label="disclosure probability")
    ax2.set_ylabel("disclosure probability P", color=c_p)
    ax2.tick_params(axis="y", colors=c_p)
    ax2.set_ylim(0, 1.02)
    if pmax is not None:
        ax2.axhline(pmax, color=c_p, ls="--", lw=1, alpha=0.8)
        ax2.annotate(
            f"Pmax = {pmax:g}",
            (0.99, pmax),
            xycoords=("axes fraction", "data"),
            color=c_p,
            fontsize=8,
            va="bottom",
            ha="right",
        )
    if chosen is not None:
        ax.axvline(float(chosen), color="0.3", ls=":", lw=1.2)
        ax.annotate(
            f"{param} = {chosen:g}" if isinstance(chosen, float) else f"{param} = {chosen}",
            (float(chosen), 0.98),
            xycoords=("data", "axes fraction"),
            fontsize=8,
            ha="left",
            va="top",
            color="0.2",
        )
    if len(x) == 0:
        ax.text(0.5, 0.5, "no release for any value", transform=ax.transAxes, ha="center", va="center")
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.25)


def draw_class_sizes(ax, sizes, *, k: int | None = None, title: str | None = None) -> None:
    """Histogram of released class sizes weighted by records (log-spaced bins when sizes span more
    than a decade); ``k`` draws the smallest allowed size."""
    s = np.asarray(sizes, dtype=np.float64)
    s = s[s > 0]
    if len(s) == 0:
        ax.text(0.5, 0.5, "no classes", transform=ax.transAxes, ha="center", va="center")
        return
    lo, hi = float(s.min()), float(s.max())
    if hi / lo > 10:
        bins = np.logspace(np.log10(lo), np.log10(hi * 1.001), 30)
        ax.set_xscale("log")
    else:
        bins = np.linspace(lo - 0.5, hi + 0.5, int(min(hi - lo + 2, 40)))
    ax.hist(s, bins=bins, weights=s, color="tab:green", alpha=0.8, edgecolor="white", lw=0.4)
    ax.set_xlabel("class size |E|")
    ax.set_ylabel("records in classes of that size")
    if k is not None:
        ax.axvline(k, color="0.3", ls=":", lw=1.2)
        ax.annotate(f"k = {k}", (k, 0.98), xycoords=("data", "axes fraction"), fontsize=8, va="top")
    ax.set_title(title or f"{len(s):,} classes, {int(s.sum()):,} records, sizes {int(lo)}–{int(hi)}", fontsize=10)
    ax.grid(True, alpha=0.25)


def draw_disclosure_profile(ax, sizes, disclosure, *, pmax: float | None = None, title: str | None = None) -> None:
    """For one release: the share of records in classes with disclosure probability above p, as p
    goes from 0 to 1 (a step curve; its right end is the release's P)."""
    s = np.asarray(sizes, dtype=np.float64)
    d = np.asarray(disclosure, dtype=np.float64)
    keep = s > 0
    s, d = s[keep], d[keep]
    if len(s) == 0:
        ax.text(0.5, 0.5, "no classes", transform=ax.transAxes, ha="center", va="center")
        return
    order = np.argsort(d)
    ds, ws = d[order], s[order]
    above = 1.0 - np.cumsum(ws) / ws.sum()  # share of records in classes with P(E) > ds[i]
    xs = np.concatenate([[0.0], ds, [1.0]])
    ys = np.concatenate([[1.0], above, [0.0]])
    ax.step(xs, ys, where="post", color="tab:red", lw=1.5)
    ax.set_xlim(0, 1.0)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("disclosure probability p")
    ax.set_ylabel("share of records with P(E) > p")
    ax.axvline(float(d.max()), color="tab:red", ls=":", lw=1)
    ax.annotate(
        f"P = {d.max():.3g}",
        (float(d.max()), 0.98),
        xycoords=("data", "axes fraction"),
        fontsize=8,
        ha="right",
        va="top",
    )
    if pmax is not None:
        ax.axvline(pmax, color="0.3", ls="--", lw=1)
    ax.set_title(title or "disclosure risk across the release", fontsize=10)
    ax.grid(True, alpha=0.25)


def plot_tune(path, report: dict, sizes=None) -> None:
    """``ppdm tune --plot``: the k, l and t trade-off curves of a tune report
    (:meth:`.policy.tune.TuneResult.as_dict`) and the class sizes of the release at the chosen k."""
    q = report.get("quality") or {}
    loss = q.get("metric", "ncp")
    bound = q.get("bound")
    pmax = report.get("pmax")
    panels = [("k", report["k"])]
    for name in ("l", "t"):
        if report.get(name) and report[name].get("table"):
            panels.append((name, report[name]))
    n = len(panels) + (1 if sizes is not None else 0)
    fig, axes = new_figure(n, title=f"ppdm tune: {report.get('rows', 0):,} rows, {report.get('algorithm', '')}")
    for ax, (name, part) in zip(axes, panels):
        rows = part["table"]
        chosen = part.get("chosen")
        if name == "l":
            # the whole l curve at the chosen k; Algorithm 1's choice marked when it settled on that k
            k_at = part.get("curve_k")
            rows = part.get("curve") or rows
            if part.get("k") != k_at:
                chosen = None
            sub = f"l at k = {k_at} (Algorithm 1: " + (
                f"k = {part['k']}, l = {part['chosen']})" if part.get("chosen") is not None else "failed)"
            )
        elif name == "t":
            sub = f"Algorithm 2 at k = {part.get('k')} (EMD step {part.get('step', float('nan')):.2g})"
        else:
            sub = f"k range [{part.get('kmin')}, {part.get('kmax') if part.get('kmax') is not None else '–'}]"
        draw_tradeoff(ax, rows, name, loss=loss, pmax=pmax, bound=bound, chosen=chosen, title=sub)
    if sizes is not None:
        draw_class_sizes(
            axes[-1], sizes, k=report["k"].get("chosen"), title=f"classes at k = {report['k'].get('chosen')}"
        )
    save_figure(fig, path)


def plot_release(
    path, rows: Sequence[dict], param: str, sizes, *, chosen=None, k=None, loss: str = "ncp", title=None
) -> None:
    """``ppdm anonymize --plot``: the trade-off curve of the algorithm over ``param`` (rows as in
    :func:`draw_tradeoff`) beside the class sizes of the release written."""
    fig, axes = new_figure(2, title=title)
    draw_tradeoff(axes[0], rows, param, loss=loss, chosen=chosen, title=f"trade-off over {param}")
    draw_class_sizes(axes[1], sizes, k=k)
    save_figure(fig, path)


def plot_profile(path, sizes, disclosure, *, title=None, pmax: float | None = None) -> None:
    """``ppdm check --plot``: class sizes and the disclosure profile of one release as published."""
    fig, axes = new_figure(2, title=title)
    draw_class_sizes(axes[0], sizes)
    draw_disclosure_profile(axes[1], sizes, disclosure, pmax=pmax)
    save_figure(fig, path)


def plot_sweep_qi(path, rows: Sequence[dict], title: str | None = None) -> None:
    """``ppdm tune --sweep-qi --plot``: per method, information loss (NCP) and the share of classes that cannot
    resist an attack against the number of quasi-identifiers (:func:`.policy.tune.sweep_qi`; Xu & Guo 2021,
    Fig. 6; Aggarwal 2015, §20.3.4)."""
    fig, axes = new_figure(2, title=title or "adding quasi-identifiers one at a time")
    methods = list(dict.fromkeys(r["model"] for r in rows))
    for m in methods:
        pts = [r for r in rows if r["model"] == m and r.get("ok")]
        xs = [r["n_qis"] for r in pts]
        label = (
            m
            + " ("
            + ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in pts[0]["parameters"].items())
            + ")"
            if pts
            else m
        )
        axes[0].plot(xs, [r["ncp"] for r in pts], marker="o", label=label)
        axes[1].plot(xs, [r["attack_resistance"]["share_vulnerable"] for r in pts], marker="o", label=label)
    n = max((r["n_qis"] for r in rows), default=1)
    for ax, ylab in zip(axes, ("information loss (NCP)", "classes that cannot resist an attack (share)")):
        ax.set_xlabel("quasi-identifiers")
        ax.set_ylabel(ylab)
        ax.set_xticks(range(1, n + 1))
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[1].set_ylim(0, 1.02)
    axes[0].legend(fontsize=8)
    save_figure(fig, path)
