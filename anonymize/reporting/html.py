"""One self-contained HTML page a person reads: the ``--report FILE.html`` of ``ppdm mine``, ``anonymize``
and ``publish``.

A :class:`Page` collects sections — headings, paragraphs, warnings, fact tables, tables, lists,
charts (:mod:`.svg`) and a collapsed raw-JSON block — and renders one HTML document with inline CSS
and inline SVG only: no script, no external stylesheet, font or image (the favicon is an empty data
URL, so a browser fetches nothing). Every value is escaped with :func:`html.escape`; the only markup
embedded unescaped is an :class:`.svg.SVG` made by :mod:`.svg`, whose texts are escaped there.

:func:`check_report_path` refuses a path that is not ``.html``/``.htm`` or whose directory is missing
(one line, before any work); :func:`write_page` writes the page atomically (a temporary file in the
same directory, renamed at the end).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from html import escape
from pathlib import Path
from typing import Any

from ..errors import AnonymizeError
from .svg import SVG

__all__ = ["Page", "check_report_path", "fmt", "write_page"]

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;color:#222;background:#fff;margin:0;line-height:1.45}
main{max-width:980px;margin:0 auto;padding:24px 28px 48px}
header{border-bottom:3px solid #3b6ea8;margin-bottom:18px;padding-bottom:10px}
h1{font-size:24px;margin:0 0 4px}
h2{font-size:18px;margin:28px 0 8px;color:#1d3f66;border-bottom:1px solid #dde3ea;padding-bottom:3px}
h3{font-size:15px;margin:18px 0 6px}
.sub{color:#555;margin:0}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}
th,td{border:1px solid #dde3ea;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f1f4f8;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
table.facts th{width:220px}
.warn{background:#fff4e0;border-left:4px solid #d9822b;padding:8px 12px;margin:10px 0}
.ok{background:#eaf6ee;border-left:4px solid #3f9b5b;padding:8px 12px;margin:10px 0}
figure{margin:10px 0 16px}
figcaption{color:#555;font-size:12px;margin-top:2px}
ul{margin:6px 0 12px;padding-left:22px}
li{margin:3px 0}
code,pre{font-family:ui-monospace,'DejaVu Sans Mono',monospace;font-size:12px}
pre{background:#f6f8fa;border:1px solid #dde3ea;padding:8px;overflow:auto;white-space:pre-wrap}
footer{color:#777;font-size:12px;margin-top:32px;border-top:1px solid #dde3ea;padding-top:8px}
"""


def fmt(value: Any) -> str:
    """A value as a person reads it (not yet escaped): thousands separators, four significant digits for
    floats (one decimal from 1000 on), ``–`` for None/NaN, ``yes``/``no``, lists joined with commas, dicts as ``k=v``."""
    value = _plain(value)
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "–"
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        if abs(value) >= 1000:
            return f"{value:,.1f}"
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={fmt(v)}" for k, v in value.items())
    return str(value)


def _plain(value: Any) -> Any:
    """numpy scalars and arrays as Python numbers and lists (what :func:`fmt` knows)."""
    if not isinstance(value, (str, bytes, bool, int, float, list, tuple, dict)) and hasattr(value, "tolist"):
        return value.tolist()
    return value


def _cell(value: Any) -> str:
    value = _plain(value)
    num = isinstance(value, (int, float)) and not isinstance(value, bool)
    return f'<td class="num">{escape(fmt(value))}</td>' if num else f"<td>{escape(fmt(value))}</td>"


class Page:
    """An HTML report under construction: call the section methods in reading order, then :meth:`html`."""

    def __init__(self, title: str, subtitle: str | None = None):
        self.title = title
        self.subtitle = subtitle
        self.parts: list[str] = []

    def heading(self, text: str, level: int = 2) -> Page:
        """A section heading (``h2``, or ``h3`` with ``level=3``)."""
        lv = 3 if level >= 3 else 2
        self.parts.append(f"<h{lv}>{escape(text)}</h{lv}>")
        return self

    def paragraph(self, text: str) -> Page:
        """A paragraph of plain text."""
        self.parts.append(f"<p>{escape(text)}</p>")
        return self

    def warning(self, text: str) -> Page:
        """A highlighted warning line."""
        self.parts.append(f'<p class="warn">{escape(text)}</p>')
        return self

    def success(self, text: str) -> Page:
        """A highlighted line saying something holds."""
        self.parts.append(f'<p class="ok">{escape(text)}</p>')
        return self

    def facts(self, rows: Iterable[tuple[str, Any]]) -> Page:
        """A two-column table of ``(name, value)`` rows; rows whose value is None are left out."""
        body = "".join(f"<tr><th>{escape(k)}</th>{_cell(v)}</tr>" for k, v in rows if v is not None)
        if body:
            self.parts.append(f'<table class="facts">{body}</table>')
        return self

    def table(self, header: Sequence[str], rows: Iterable[Sequence[Any]], caption: str | None = None) -> Page:
        """A table with a header row; numbers are right-aligned."""
        head = "".join(f"<th>{escape(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(_cell(v) for v in r) + "</tr>" for r in rows)
        cap = f"<caption>{escape(caption)}</caption>" if caption else ""
        self.parts.append(f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        return self

    def bullets(self, items: Iterable[Any]) -> Page:
        """A bulleted list."""
        lis = "".join(f"<li>{escape(fmt(i))}</li>" for i in items)
        if lis:
            self.parts.append(f"<ul>{lis}</ul>")
        return self

    def figure(self, svg: SVG, caption: str | None = None) -> Page:
        """A chart made by :mod:`.svg` (anything else is refused: it would be embedded unescaped)."""
        if not isinstance(svg, SVG):
            raise TypeError("Page.figure takes an SVG made by anonymize.reporting.svg")
        cap = f"<figcaption>{escape(caption)}</figcaption>" if caption else ""
        self.parts.append(f"<figure>{svg}{cap}</figure>")
        return self

    def raw_json(self, summary: str, data: Any) -> Page:
        """A collapsed block with ``data`` as indented JSON (everything the report was made from)."""
        text = json.dumps(data, indent=2, default=_json_default, ensure_ascii=False)
        self.parts.append(f"<details><summary>{escape(summary)}</summary><pre>{escape(text)}</pre></details>")
        return self

    def html(self, footer: str | None = None) -> str:
        """The whole document."""
        sub = f'<p class="sub">{escape(self.subtitle)}</p>' if self.subtitle else ""
        foot = f"<footer>{escape(footer)}</footer>" if footer else ""
        return (
            "<!DOCTYPE html>\n"
            '<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<link rel="icon" href="data:,">'
            f"<title>{escape(self.title)}</title><style>{CSS}</style></head>\n"
            f"<body><main><header><h1>{escape(self.title)}</h1>{sub}</header>\n"
            + "\n".join(self.parts)
            + f"\n{foot}</main></body></html>\n"
        )


def _json_default(o: Any) -> Any:
    if hasattr(o, "tolist"):
        return o.tolist()
    if hasattr(o, "item"):
        return o.item()
    return str(o)


def check_report_path(path: str | os.PathLike, flag: str = "--report") -> Path:
    """``path`` if an HTML report may be written there: an ``.html``/``.htm`` name, not a directory, in an
    existing directory; else :class:`AnonymizeError` with one line."""
    from ..publish.io import check_writable_path

    p = Path(path)
    if p.suffix.lower() not in (".html", ".htm"):
        raise AnonymizeError(f"{flag} writes an HTML page: give a FILE.html, got {p}")
    return check_writable_path(p, flag)


def write_page(path: str | os.PathLike, text: str) -> None:
    """Write the page ``text`` to ``path`` atomically (temporary file in the same directory, then rename)."""
    from ..publish.atomic import atomic_write_text

    atomic_write_text(path, text)
