"""Reports a person reads: one self-contained HTML page per run, with bar charts as inline SVG.

* :mod:`.html` — :class:`Page` (sections, tables, charts; inline CSS, no script, every value
  escaped), :func:`check_report_path`, :func:`write_page` (atomic);
* :mod:`.svg` — :func:`bar_chart` and :func:`histogram`, drawn as SVG text (no plotting library);
* :mod:`.release` — the page of a release (``ppdm anonymize`` / ``ppdm publish --report FILE.html``).

The mining report (``ppdm mine --report``) is built on the same page in :mod:`parties.analyst.report`.
"""

from .html import Page, check_report_path, fmt, write_page
from .svg import SVG, bar_chart, histogram

__all__ = ["SVG", "Page", "bar_chart", "check_report_path", "fmt", "histogram", "write_page"]
