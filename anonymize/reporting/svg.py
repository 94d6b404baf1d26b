"""Bar charts as inline SVG text: what the HTML reports draw, with no plotting library.

:func:`bar_chart` draws horizontal bars, one row per label, one bar per series in each row (a
legend when there are several), a zero line, the largest value on the axis and each bar's value
at its end; :func:`histogram` bins values (optionally weighted) into rows for it. Every text that
goes into the SVG — titles, labels, values — is escaped with :func:`html.escape`, and the result is
an :class:`SVG` (a ``str``), the only kind of markup :class:`.html.Page` embeds unescaped.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Sequence
from html import escape

__all__ = ["SVG", "PALETTE", "bar_chart", "histogram", "short_number"]

PALETTE = ("#3b6ea8", "#d9822b", "#3f9b5b", "#a8453b", "#7a5ea8", "#4f8f9b")
FONT = "font-family:system-ui,-apple-system,'Segoe UI',sans-serif"


class SVG(str):
    """SVG markup made by this module: every text inside it is already escaped."""


def short_number(x: float) -> str:
    """``1234567`` → ``1.23M``, ``0.0423`` → ``0.0423``, ``12`` → ``12``: a compact label for a value."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    a = abs(x)
    for limit, unit, suffix in ((1e12, 1e12, "T"), (1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if a >= limit:
            return f"{x / unit:.3g}{suffix}"
    if float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:.3g}"


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def bar_chart(
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    title: str = "",
    unit: str = "",
    width: int = 720,
    max_value: float | None = None,
    fmt: Callable[[float], str] = short_number,
    label_chars: int = 34,
) -> SVG:
    """Horizontal bars: one row per label, one bar per ``(name, values)`` series (None: no bar).

    ``max_value`` fixes the scale (e.g. 1 for shares); by default the largest value. ``unit`` is
    written after the axis maximum. Labels longer than ``label_chars`` are shortened with ``…`` (the
    full text is the row's tooltip).
    """
    n_series = max(1, len(series))
    bar_h = 14 if n_series == 1 else 10
    row_h = n_series * bar_h + 8
    top = 30 if title else 10
    legend_h = 20 if n_series > 1 else 0
    label_w = min(label_chars, max((len(str(lb)) for lb in labels), default=4)) * 7 + 12
    value_w = 64
    plot_w = max(120, width - label_w - value_w - 10)
    height = top + legend_h + row_h * max(1, len(labels)) + 26
    vals = [v for _, vs in series for v in vs if v is not None and math.isfinite(v)]
    vmax = max_value if max_value is not None else max([*vals, 0.0])
    scale = plot_w / vmax if vmax > 0 else 0.0
    x0 = label_w
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" style="{FONT};font-size:12px">',
        f"<title>{escape(title or 'bar chart')}</title>",
    ]
    if title:
        out.append(f'<text x="0" y="18" font-size="14" font-weight="600" fill="#222">{escape(title)}</text>')
    y_legend = top
    if n_series > 1:
        x = x0
        for i, (name, _) in enumerate(series):
            c = PALETTE[i % len(PALETTE)]
            out.append(f'<rect x="{x}" y="{y_legend + 2}" width="12" height="10" fill="{c}"/>')
            out.append(f'<text x="{x + 16}" y="{y_legend + 11}" fill="#333">{escape(str(name))}</text>')
            x += 24 + 7 * len(str(name))
    small = ' font-size="10"' if n_series > 1 else ""  # value labels fit the thinner bars
    y = top + legend_h
    for r, label in enumerate(labels):
        text = str(label)
        out.append(f"<g><title>{escape(text)}</title>")
        out.append(
            f'<text x="{x0 - 6}" y="{y + row_h / 2 + 4:.1f}" text-anchor="end" fill="#333">'
            f"{escape(_clip(text, label_chars))}</text>"
        )
        for i, (_, values) in enumerate(series):
            v = values[r] if r < len(values) else None
            by = y + 4 + i * bar_h
            if v is None or not math.isfinite(v):
                out.append(f'<text x="{x0 + 4}" y="{by + bar_h - 3}" fill="#888">–</text>')
                continue
            w = max(0.0, min(v, vmax) * scale) if scale else 0.0
            c = PALETTE[i % len(PALETTE)]
            out.append(f'<rect x="{x0}" y="{by}" width="{w:.1f}" height="{bar_h - 2}" fill="{c}"/>')
            out.append(f'<text x="{x0 + w + 4:.1f}" y="{by + bar_h - 2}" fill="#333"{small}>{escape(fmt(v))}</text>')
        out.append("</g>")
        y += row_h
    axis_y = y + 4
    out.append(f'<line x1="{x0}" y1="{top + legend_h}" x2="{x0}" y2="{axis_y}" stroke="#666"/>')
    out.append(f'<line x1="{x0}" y1="{axis_y}" x2="{x0 + plot_w}" y2="{axis_y}" stroke="#bbb"/>')
    out.append(f'<text x="{x0}" y="{axis_y + 16}" fill="#666">0</text>')
    out.append(
        f'<text x="{x0 + plot_w}" y="{axis_y + 16}" text-anchor="end" fill="#666">'
        f"{escape(fmt(vmax) + (' ' + unit if unit else ''))}</text>"
    )
    out.append("</svg>")
    return SVG("\n".join(out))


def histogram(
    values: Sequence[float],
    weights: Sequence[float] | None = None,
    *,
    bins: int = 12,
    integer: bool = True,
    span: tuple[float, float] | None = None,
) -> tuple[list[str], list[float]]:
    """Bin ``values`` (summing ``weights``, default 1 each): ``(row labels, totals)`` for :func:`bar_chart`.

    Integers spanning more than ``bins`` values get doubling bins (``4–7``, ``8–15``, …) when they
    span more than a decade, else equal-width bins; a few distinct integers get one row each.
    Non-integer values get ``bins`` equal-width bins over ``span`` (default [min, max]), the last
    one closed.
    """
    vs = [float(v) for v in values]
    ws = [1.0] * len(vs) if weights is None else [float(w) for w in weights]
    if not vs:
        return [], []
    lo, hi = span if span is not None else (min(vs), max(vs))
    edges: list[float]
    if integer:
        lo_i, hi_i = int(math.floor(lo)), int(math.ceil(hi))
        if hi_i - lo_i + 1 <= bins:
            edges = [float(x) for x in range(lo_i, hi_i + 2)]
        elif lo_i >= 1 and hi_i / lo_i > 10:
            edges = [float(lo_i)]
            while edges[-1] <= hi_i:
                edges.append(edges[-1] * 2)
        else:
            step = math.ceil((hi_i - lo_i + 1) / bins)
            edges = [float(x) for x in range(lo_i, hi_i + step + 1, step)]
        labels = []
        for a, b in zip(edges[:-1], edges[1:]):
            ia, ib = int(a), int(b) - 1
            labels.append(f"{ia:,}" if ia == ib else f"{ia:,}–{ib:,}")
    else:
        bin_w = (hi - lo) / bins if hi > lo else 1.0
        edges = [lo + i * bin_w for i in range(bins + 1)]
        labels = [f"{a:.3g}–{b:.3g}" for a, b in zip(edges[:-1], edges[1:])]
    totals = [0.0] * (len(edges) - 1)
    for v, w in zip(vs, ws):
        totals[min(max(bisect_right(edges, v) - 1, 0), len(totals) - 1)] += w
    return labels, totals
