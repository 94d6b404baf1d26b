"""What the verbs writing an HTML report (``--report FILE.html``) share: the command line as the page shows
it, the check of the report's path before any work, and the release page of ``ppdm anonymize``/``publish``
(whose ``--report`` writes the JSON report for any other name, as before).

The pages themselves are :mod:`anonymize.reporting` (releases) and :mod:`parties.analyst.report` (mining).
"""

from __future__ import annotations

import re
import shlex

__all__ = ["command_text", "is_html", "redact", "release_report_text", "report_path"]

# the password of a database URL (postgresql://user:secret@host/db) never goes into a report
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/@:\s]*:)[^/@\s]*(?P<at>@)")


def command_text(args) -> str | None:
    """The command line as typed (``ppdm VERB ...``, :func:`parties.cli.main` keeps it), quoted for a
    shell, with any password in a URL replaced by ``***``; None when it is not known."""
    argv = getattr(args, "command_line", None)
    if not argv:
        return None
    return redact(shlex.join(str(a) for a in argv))


def redact(text: str) -> str:
    """``text`` with the password of any URL in it (``scheme://user:secret@host``) replaced by ``***``."""
    return _URL_PASSWORD.sub(r"\g<head>***\g<at>", text)


def is_html(path: str | None) -> bool:
    """Whether ``path`` names an HTML page (``.html`` or ``.htm``), i.e. an HTML ``--report``."""
    return bool(path) and str(path).lower().endswith((".html", ".htm"))


def report_path(args):
    """``args.report`` checked before any work: an HTML page (``.html``/``.htm``,
    :func:`anonymize.reporting.check_report_path`) or the JSON report (any other name,
    :func:`parties.cli.schema_args.check_output_path`); None without ``--report``."""
    if not args.report:
        return None
    if is_html(args.report):
        from anonymize.reporting import check_report_path

        return check_report_path(args.report)
    from parties.cli.schema_args import check_output_path

    return check_output_path(args.report, "report")


def release_report_text(
    args, report: dict, json_text: str, *, started: float, result=None, qis=(), sensitive=()
) -> str:
    """What ``--report FILE`` of ``ppdm anonymize``/``publish`` writes: for ``FILE.html`` the release's HTML
    page (:func:`anonymize.reporting.release.release_page`, its classes measured on ``result`` when given),
    else ``json_text``, the JSON report."""
    if not is_html(args.report):
        return json_text
    from anonymize.reporting.release import release_classes, release_page

    sizes, disclosure = release_classes(result, qis, sensitive) if result is not None else (None, None)
    return release_page(report, command=command_text(args), sizes=sizes, disclosure=disclosure, started=started)
